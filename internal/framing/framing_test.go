package framing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func testCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestOneAddressCannotTakeEveryHandshake: a client address holding
// MaxHandshakesPerAddr connections open without a handshake has its next
// connection closed at once, while another address still gets through;
// once it lets go, it gets through again.
func TestOneAddressCannotTakeEveryHandshake(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(inner, &tls.Config{Certificates: []tls.Certificate{testCert(t)}}, 10*time.Second, nil)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := func(from string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		return d.Dial("tcp", inner.Addr().String())
	}
	handshake := func(from string) error {
		c, err := dial(from)
		if err != nil {
			return err
		}
		defer c.Close()
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		return tc.Handshake()
	}
	var idle []net.Conn
	for range MaxHandshakesPerAddr {
		c, err := dial("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// The listener counts them as they are accepted.
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		n := l.perAddr["127.0.0.1"]
		l.mu.Unlock()
		if n == MaxHandshakesPerAddr {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d handshakes counted, want %d", n, MaxHandshakesPerAddr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := handshake("127.0.0.1"); err == nil {
		t.Fatal("a handshake past the address's bound went through")
	}
	if err := handshake("127.0.0.2"); err != nil {
		t.Fatalf("another address was held up: %v", err)
	}
	for _, c := range idle {
		c.Close()
	}
	deadline = time.Now().Add(5 * time.Second)
	for handshake("127.0.0.1") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the address stayed refused after its connections closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUnreadableAnswers: what Go's server answers itself to a request it
// cannot read goes out as Unreadable renders it, with the status and words
// the server chose; a handler's answer is never taken for one, not even a
// text/plain one that closes the connection.
func TestUnreadableAnswers(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	render := func(remote string, code int, text string) []byte {
		if remote != "127.0.0.1" {
			t.Errorf("remote %q, want 127.0.0.1", remote)
		}
		body := fmt.Sprintf("rendered %d %q", code, text)
		return fmt.Appendf(nil, "HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, len(body), body)
	}
	l := NewListener(inner, &tls.Config{Certificates: []tls.Certificate{testCert(t)}, NextProtos: []string{"http/1.1"}}, 10*time.Second, render)
	srv := &http.Server{
		Handler: Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The refusal's own header fields, as a handler may set them.
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Connection", "close")
			w.Header()["Date"] = nil
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "from the handler")
		})),
		ConnContext:    ConnContext,
		MaxHeaderBytes: 4 << 10,
	}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	send := func(raw string) string {
		t.Helper()
		c, err := tls.Dial("tcp", inner.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(c)
		return string(b)
	}
	for _, tc := range []struct{ name, raw, want string }{
		{"bad escape in the target", "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", `rendered 400 "400 Bad Request"`},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", `rendered 400 "400 Bad Request: missing required Host header"`},
		{"bad header name", "GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", `rendered 400 "400 Bad Request`},
		{"headers past the limit", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", `rendered 431 "431 Request Header Fields Too Large"`},
		{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", `rendered 501 "Unsupported transfer encoding"`},
		{"unknown version", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", `rendered 505 "505 HTTP Version Not Supported: unsupported protocol version"`},
	} {
		if got := send(tc.raw); !strings.Contains(got, tc.want) || strings.Contains(got, "text/plain") {
			t.Errorf("%s: got %q, want the rendered %s", tc.name, got, tc.want)
		}
	}
	if got := send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.HasSuffix(got, "from the handler") || strings.Contains(got, "rendered") {
		t.Errorf("the handler's answer: got %q", got)
	}
	// Plain HTTP to the TLS port.
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, _ := io.ReadAll(c); !strings.Contains(string(b), fmt.Sprintf("rendered 400 %q", PlainHTTP)) {
		t.Errorf("plain HTTP: got %q", b)
	}
}

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		code int
		text string
		ok   bool
	}{
		{"HTTP/1.1 400 Bad Request" + refusalHeaders + "400 Bad Request", 400, "400 Bad Request", true},
		{"HTTP/1.1 501 Not Implemented" + refusalHeaders + "Unsupported transfer encoding", 501, "Unsupported transfer encoding", true},
		{"HTTP/1.1 200 OK" + refusalHeaders + "x", 0, "", false},
		{"HTTP/1.1 400 Bad Request\r\nX-A: b" + refusalHeaders + "x", 0, "", false},
		{"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nx", 0, "", false},
		{"HTTP/1.0 400 Bad Request" + refusalHeaders + "x", 0, "", false},
		{"HTTP/1.1 4x0 Bad Request" + refusalHeaders + "x", 0, "", false},
		{"{\"items\":[]}", 0, "", false},
		{"HTTP/1.1 400 " + strings.Repeat("a", 200) + refusalHeaders + "x", 0, "", false},
	} {
		code, text, ok := refusal([]byte(tc.in))
		if code != tc.code || text != tc.text || ok != tc.ok {
			t.Errorf("refusal(%q) = %d, %q, %v; want %d, %q, %v", tc.in, code, text, ok, tc.code, tc.text, tc.ok)
		}
	}
}
