package framing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
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
	l := NewListener(inner, &tls.Config{Certificates: []tls.Certificate{testCert(t)}}, 10*time.Second)
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
