package notify_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/notify/smtptest"
)

func startSMTP(t *testing.T, o smtptest.Options) (*smtptest.Server, *tls.Config) {
	srv := smtptest.Start(t, o)
	return srv, &tls.Config{RootCAs: srv.Roots}
}

func TestSMTPStartTLSWithAuth(t *testing.T) {
	ms, tc := startSMTP(t, smtptest.Options{User: "yard", Pass: "s3cret"})
	m, err := notify.ParseSMTPURL("smtp://yard:s3cret@" + ms.Addr)
	if err != nil {
		t.Fatal(err)
	}
	m.TLSConfig = tc
	err = m.SendMail(context.Background(), notify.Mail{ID: "bark-123@yard.test", From: "yard@yard.test", To: "rex@example.org",
		Subject: "Woof", Body: "Rex barked."})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if len(ms.Messages()) != 1 {
		t.Fatalf("received %d messages, want 1", len(ms.Messages()))
	}
	got := ms.Messages()[0]
	if !got.Authed || got.From != "yard@yard.test" || got.To != "rex@example.org" {
		t.Errorf("envelope: got %+v", got)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.Data))
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
	ms, tc := startSMTP(t, smtptest.Options{User: "yard", Pass: "s3cret"})
	m, _ := notify.ParseSMTPURL("smtp://yard:wrong@" + ms.Addr)
	m.TLSConfig = tc
	err := m.SendMail(context.Background(), notify.Mail{ID: "x@y", From: "yard@yard.test", To: "rex@example.org", Subject: "s", Body: "b"})
	if err == nil {
		t.Fatal("send with a wrong password succeeded")
	}
	if n := len(ms.Messages()); n != 0 {
		t.Errorf("server received %d messages", n)
	}
}

func TestSMTPTemporaryRefusal(t *testing.T) {
	ms, tc := startSMTP(t, smtptest.Options{})
	ms.FailNext(1)
	m, _ := notify.ParseSMTPURL("smtp://" + ms.Addr)
	m.TLSConfig = tc
	err := m.SendMail(context.Background(), notify.Mail{ID: "x@y", From: "yard@yard.test", To: "rex@example.org", Subject: "s", Body: "b"})
	if err == nil || !temporary(err) {
		t.Fatalf("got %v, want a temporary error", err)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	ms, tc := startSMTP(t, smtptest.Options{Implicit: true, User: "yard", Pass: "pw"})
	m, err := notify.ParseSMTPURL("smtps://yard:pw@" + ms.Addr)
	if err != nil {
		t.Fatal(err)
	}
	m.TLSConfig = tc
	if err := m.SendMail(context.Background(), notify.Mail{ID: "a@b", From: "yard@yard.test", To: "fido@example.org", Subject: "s", Body: "b"}); err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := ms.Messages(); len(got) != 1 || got[0].To != "fido@example.org" {
		t.Fatalf("received %+v", got)
	}
}

func TestSMTPRefusesUntrustedCertificate(t *testing.T) {
	ms, _ := startSMTP(t, smtptest.Options{})
	m, _ := notify.ParseSMTPURL("smtp://" + ms.Addr)
	if err := m.SendMail(context.Background(), notify.Mail{ID: "a@b", From: "yard@yard.test", To: "x@example.org", Subject: "s", Body: "b"}); err == nil {
		t.Fatal("sent over TLS to a server with an untrusted certificate")
	}
	if len(ms.Messages()) != 0 {
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
	raw, err := os.ReadFile(filepath.Join(o.Dir, m.ID+".eml"))
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
	if err := api.SendText(context.Background(), txt); err == nil || !temporary(err) {
		t.Errorf("503: got %v, want a temporary error", err)
	}
	status = http.StatusBadRequest
	if err := api.SendText(context.Background(), txt); err == nil || temporary(err) {
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
	raw, err := os.ReadFile(filepath.Join(o.Dir, "bark-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || m["to"] != "+14155550100" || m["body"] != "hi" {
		t.Errorf("outbox file: %s (%v)", raw, err)
	}
}

// temporary reports whether err is worth retrying as the bark runner sees
// it (jobs/effects.go): what the error says, else yes.
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return !errors.As(err, &t) || t.Temporary()
}
