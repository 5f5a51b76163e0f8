package notify_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/yard-api/yard/notify"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
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

// mailServer is a real SMTP server (go-smtp) that keeps what it receives.
type mailServer struct {
	mu       sync.Mutex
	received []delivered
	user     string
	pass     string
	// failTemp makes RCPT answer 451 (a temporary refusal).
	failTemp bool
}

type delivered struct {
	from, to string
	data     []byte
	authed   bool
}

type session struct {
	srv    *mailServer
	authed bool
	cur    delivered
}

func (s *mailServer) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{srv: s}, nil }

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.srv.user || pass != s.srv.pass {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.cur = delivered{from: from, authed: s.authed}
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.srv.failTemp {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"}
	}
	s.cur.to = to
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = b
	s.srv.mu.Lock()
	s.srv.received = append(s.srv.received, s.cur)
	s.srv.mu.Unlock()
	return nil
}
func (s *session) Reset()        {}
func (s *session) Logout() error { return nil }

// startSMTP runs the server on loopback; implicit selects TLS from the
// first byte, otherwise STARTTLS is offered.
func startSMTP(t *testing.T, ms *mailServer, implicit bool) (port string, pool *x509.CertPool) {
	t.Helper()
	cert, pool := selfSigned(t)
	srv := smtp.NewServer(ms)
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	var ln net.Listener
	var err error
	if implicit {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, pool
}

func TestSMTPStartTLSWithAuth(t *testing.T) {
	ms := &mailServer{user: "yard", pass: "s3cret"}
	port, pool := startSMTP(t, ms, false)
	m, err := notify.ParseSMTPURL("smtp://yard:s3cret@127.0.0.1:" + port)
	if err != nil {
		t.Fatal(err)
	}
	m.TLSConfig = &tls.Config{RootCAs: pool}
	err = m.SendMail(context.Background(), notify.Mail{ID: "bark-123@yard.test", From: "yard@yard.test", To: "rex@example.org",
		Subject: "Woof", Body: "Rex barked."})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if len(ms.received) != 1 {
		t.Fatalf("received %d messages, want 1", len(ms.received))
	}
	got := ms.received[0]
	if !got.authed || got.from != "yard@yard.test" || got.to != "rex@example.org" {
		t.Errorf("envelope: got %+v", got)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.data))
	if err != nil {
		t.Fatal(err)
	}
	if id := msg.Header.Get("Message-Id"); id != "<bark-123@yard.test>" {
		t.Errorf("Message-ID: got %q, want <bark-123@yard.test>", id)
	}
	if s := msg.Header.Get("Subject"); s != "Woof" {
		t.Errorf("Subject: got %q", s)
	}
	body, _ := io.ReadAll(msg.Body)
	if !strings.Contains(string(body), "Rex barked.") {
		t.Errorf("body: got %q", body)
	}
}

func TestSMTPWrongPasswordIsPermanent(t *testing.T) {
	ms := &mailServer{user: "yard", pass: "s3cret"}
	port, pool := startSMTP(t, ms, false)
	m, _ := notify.ParseSMTPURL("smtp://yard:wrong@127.0.0.1:" + port)
	m.TLSConfig = &tls.Config{RootCAs: pool}
	err := m.SendMail(context.Background(), notify.Mail{ID: "x@y", From: "yard@yard.test", To: "rex@example.org", Subject: "s", Body: "b"})
	if err == nil {
		t.Fatal("send with a wrong password succeeded")
	}
	if len(ms.received) != 0 {
		t.Errorf("server received %d messages", len(ms.received))
	}
}

func TestSMTPTemporaryRefusal(t *testing.T) {
	ms := &mailServer{failTemp: true}
	port, pool := startSMTP(t, ms, false)
	m, _ := notify.ParseSMTPURL("smtp://127.0.0.1:" + port)
	m.TLSConfig = &tls.Config{RootCAs: pool}
	err := m.SendMail(context.Background(), notify.Mail{ID: "x@y", From: "yard@yard.test", To: "rex@example.org", Subject: "s", Body: "b"})
	if err == nil || !notify.IsTemporary(err) {
		t.Fatalf("got %v, want a temporary error", err)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	ms := &mailServer{user: "yard", pass: "pw"}
	port, pool := startSMTP(t, ms, true)
	m, err := notify.ParseSMTPURL("smtps://yard:pw@127.0.0.1:" + port)
	if err != nil {
		t.Fatal(err)
	}
	m.TLSConfig = &tls.Config{RootCAs: pool}
	if err := m.SendMail(context.Background(), notify.Mail{ID: "a@b", From: "yard@yard.test", To: "fido@example.org", Subject: "s", Body: "b"}); err != nil {
		t.Fatalf("send: %v", err)
	}
	if len(ms.received) != 1 || ms.received[0].to != "fido@example.org" {
		t.Fatalf("received %+v", ms.received)
	}
}

func TestSMTPRefusesUntrustedCertificate(t *testing.T) {
	ms := &mailServer{}
	port, _ := startSMTP(t, ms, false)
	m, _ := notify.ParseSMTPURL("smtp://127.0.0.1:" + port)
	if err := m.SendMail(context.Background(), notify.Mail{ID: "a@b", From: "yard@yard.test", To: "x@example.org", Subject: "s", Body: "b"}); err == nil {
		t.Fatal("sent over TLS to a server with an untrusted certificate")
	}
	if len(ms.received) != 0 {
		t.Fatal("message delivered")
	}
}

func TestParseSMTPURL(t *testing.T) {
	for _, bad := range []string{"http://x", "smtp://", "smtp://h:port", "smtp://h?tls=maybe"} {
		if _, err := notify.ParseSMTPURL(bad); err == nil {
			t.Errorf("ParseSMTPURL(%q): no error", bad)
		}
	}
	m, err := notify.ParseSMTPURL("smtps://u:p@mail.example.org")
	if err != nil || m.Port != 465 || !m.ImplicitTLS || m.Username != "u" || m.Password != "p" {
		t.Errorf("got %+v, %v", m, err)
	}
}

func TestMailOutbox(t *testing.T) {
	o := &notify.MailOutbox{Dir: t.TempDir()}
	m := notify.Mail{ID: "bark-9@yard.test", From: "yard@yard.test", To: "rex@example.org", Subject: "Woof", Body: "Rex barked."}
	for range 2 { // a retry replaces the file
		if err := o.SendMail(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(o.Dir)
	if len(entries) != 1 {
		t.Fatalf("outbox holds %d files, want 1", len(entries))
	}
	raw, err := os.ReadFile(o.OutboxPath(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("Message-Id") != "<bark-9@yard.test>" || msg.Header.Get("To") != "<rex@example.org>" {
		t.Errorf("headers: %v", msg.Header)
	}
	if err := o.SendMail(context.Background(), notify.Mail{ID: "../evil", From: "a@b", To: "c@d"}); err == nil {
		t.Error("an id with a path was accepted")
	}
}

func TestSMSAPI(t *testing.T) {
	type call struct {
		path, user, pass, idem string
		form                   map[string]string
	}
	var mu sync.Mutex
	var calls []call
	status := http.StatusCreated
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		_ = r.ParseForm()
		mu.Lock()
		calls = append(calls, call{r.URL.Path, user, pass, r.Header.Get("I-Twilio-Idempotency-Token"),
			map[string]string{"To": r.PostForm.Get("To"), "From": r.PostForm.Get("From"), "Body": r.PostForm.Get("Body")}})
		st := status
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		json.NewEncoder(w).Encode(map[string]any{"sid": "SM1", "message": "nope"})
	}))
	defer srv.Close()
	api, err := notify.ParseSMSURL(strings.Replace(srv.URL, "http://", "http://AC123:tok@", 1) + "?from=%2B15550001111")
	if err != nil {
		t.Fatal(err)
	}
	txt := notify.Text{ID: "bark-77", To: "+14155550100", Body: "Rex fetched abc123"}
	if err := api.SendText(context.Background(), txt); err != nil {
		t.Fatalf("send: %v", err)
	}
	c := calls[0]
	if c.path != "/2010-04-01/Accounts/AC123/Messages.json" || c.user != "AC123" || c.pass != "tok" || c.idem != "bark-77" {
		t.Errorf("request: got %+v", c)
	}
	if c.form["To"] != "+14155550100" || c.form["From"] != "+15550001111" || c.form["Body"] != "Rex fetched abc123" {
		t.Errorf("form: got %v", c.form)
	}
	status = http.StatusServiceUnavailable
	if err := api.SendText(context.Background(), txt); err == nil || !notify.IsTemporary(err) {
		t.Errorf("503: got %v, want a temporary error", err)
	}
	status = http.StatusBadRequest
	if err := api.SendText(context.Background(), txt); err == nil || notify.IsTemporary(err) {
		t.Errorf("400: got %v, want a permanent error", err)
	}
	if _, err := notify.ParseSMSURL("http://AC:t@example.org?from=%2B1555"); err == nil {
		t.Error("plain http to a remote host accepted")
	}
}

func TestTextOutbox(t *testing.T) {
	o := &notify.TextOutbox{Dir: t.TempDir()}
	if err := o.SendText(context.Background(), notify.Text{ID: "bark-1", To: "+14155550100", Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(o.OutboxPath("bark-1"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || m["to"] != "+14155550100" || m["body"] != "hi" {
		t.Errorf("outbox file: %s (%v)", raw, err)
	}
}
