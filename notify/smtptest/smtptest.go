// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp) in
// a test process: STARTTLS or implicit TLS with a certificate made for the
// test, optional PLAIN authentication, and the delivered messages kept for
// the test to read.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/mail"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one delivered message.
type Message struct {
	From, To string
	Data     []byte
	Authed   bool
}

// Header parses the message and returns its header.
func (m Message) Header() mail.Header {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return mail.Header{}
	}
	return msg.Header
}

// Server is a running SMTP server.
type Server struct {
	// Addr is host:port.
	Addr string
	// Roots trusts the server's certificate.
	Roots *x509.CertPool

	o        Options
	mu       sync.Mutex
	received []Message
	failTemp int
}

// Options configure Start.
type Options struct {
	Implicit bool // TLS from the first byte (smtps)
	// User and Pass, when set, are required (AUTH PLAIN).
	User, Pass string
}

// Start runs a server on 127.0.0.1 until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	cert, pool := selfSigned(t)
	s := &Server{Roots: pool, o: o}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.Implicit {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.Addr = ln.Addr().String()
	return s
}

// FailNext makes the next n recipients be refused with 451 (temporary).
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.failTemp = n
	s.mu.Unlock()
}

// Messages returns what was delivered so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

// NewSession implements smtp.Backend.
func (s *Server) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{srv: s}, nil }

type session struct {
	srv    *Server
	authed bool
	cur    Message
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.srv.o.User || pass != s.srv.o.Pass {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.o.User != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.cur = Message{From: from, Authed: s.authed}
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if s.srv.failTemp > 0 {
		s.srv.failTemp--
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"}
	}
	s.cur.To = to
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = b
	s.srv.mu.Lock()
	s.srv.received = append(s.srv.received, s.cur)
	s.srv.mu.Unlock()
	return nil
}
func (s *session) Reset()        {}
func (s *session) Logout() error { return nil }

// selfSigned returns a certificate for 127.0.0.1 and localhost, and a pool
// trusting it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
