package main

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestNewConnectionsBounded holds maxNewConnsPerAddr connections open
// without a TLS handshake: the next one from the same address is closed at
// once, and once they go, requests are served again. Connections that sent
// a request, over HTTP/1.1 or HTTP/2, no longer count, however many stay
// open (docs/operations.md, "Transport").
func TestNewConnectionsBounded(t *testing.T) {
	s := startInProcess(t, "--data", t.TempDir())
	u, _ := url.Parse(s.URL)

	// Connections that made a request and stay open, beyond the bound.
	for _, h2 := range []bool{false, true} {
		var open []*http.Transport
		for range maxNewConnsPerAddr + 4 {
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: h2}
			open = append(open, tr)
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(s.URL + "/healthz")
			if err != nil {
				t.Fatalf("http2 %v: request on connection %d: %v", h2, len(open), err)
			}
			if got := resp.ProtoMajor == 2; got != h2 {
				t.Fatalf("http2 %v: answered over %s", h2, resp.Proto)
			}
			resp.Body.Close()
		}
		for _, tr := range open {
			tr.CloseIdleConnections()
		}
	}

	// Connections that never start their handshake.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range maxNewConnsPerAddr {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Each is counted when the server accepts it: the next one is closed
	// without an answer once all of them are.
	refused := false
	for deadline := time.Now().Add(10 * time.Second); !refused && time.Now().Before(deadline); {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		var ne net.Error
		refused = err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	if !refused {
		t.Fatalf("a connection past %d without a handshake was not closed", maxNewConnsPerAddr)
	}

	for _, c := range idle {
		c.Close()
	}
	idle = nil
	for deadline := time.Now().Add(10 * time.Second); ; {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(s.URL + "/healthz")
		tr.CloseIdleConnections()
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the idle connections closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
