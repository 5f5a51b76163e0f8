package notify

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/yard-api/yard/internal/tracing"
)

// Mail is one e-mail message.
type Mail struct {
	// ID becomes the Message-ID (RFC 5322 §3.6.4), e.g. bark-ID@host.
	ID      string
	From    string
	To      string
	Subject string
	Body    string
}

// Mailer sends e-mail.
type Mailer interface {
	SendMail(ctx context.Context, m Mail) error
}

func (m Mail) message() (*gomail.Msg, error) {
	if !idRe.MatchString(m.ID) {
		return nil, permanent("mail: bad message id %q", m.ID)
	}
	msg := gomail.NewMsg()
	if err := msg.From(m.From); err != nil {
		return nil, permanent("mail: sender %q: %v", m.From, err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, permanent("mail: recipient %q: %v", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.ID)
	msg.SetDate()
	msg.SetBodyString(gomail.TypeTextPlain, m.Body)
	return msg, nil
}

// SMTP sends mail through an SMTP server.
type SMTP struct {
	Host     string
	Port     int
	Username string
	Password string
	// ImplicitTLS is set for smtps:// (TLS from the first byte, RFC 8314);
	// otherwise STARTTLS (RFC 3207) is required, unless Policy says
	// otherwise.
	ImplicitTLS bool
	Policy      gomail.TLSPolicy
	// TLSConfig, when set, is used for the TLS connection (tests trust
	// their own server's certificate through it).
	TLSConfig *tls.Config
	Timeout   time.Duration
}

// ParseSMTPURL reads --smtp-url: smtp://[user:pass@]host[:587] (STARTTLS
// required), smtps://[user:pass@]host[:465] (implicit TLS). The query
// variable tls=opportunistic or tls=none weakens STARTTLS for local test
// servers.
func ParseSMTPURL(raw string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("smtp url: %w", errors.Unwrap(err))
	}
	s := &SMTP{Host: u.Hostname(), Timeout: 30 * time.Second, Policy: gomail.TLSMandatory}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Port, s.ImplicitTLS = 465, true
	default:
		return nil, fmt.Errorf("smtp url: scheme must be smtp or smtps, not %q", u.Scheme)
	}
	if s.Host == "" {
		return nil, errors.New("smtp url: no host")
	}
	if p := u.Port(); p != "" {
		if s.Port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("smtp url: bad port %q", p)
		}
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	switch u.Query().Get("tls") {
	case "", "required":
	case "opportunistic":
		s.Policy = gomail.TLSOpportunistic
	case "none":
		s.Policy = gomail.NoTLS
	default:
		return nil, fmt.Errorf("smtp url: tls must be required, opportunistic or none")
	}
	return s, nil
}

// SendMail delivers m in one SMTP session. A traced one is a span with the
// server's address (never the message or the recipient).
func (s *SMTP) SendMail(ctx context.Context, m Mail) (err error) {
	ctx, span := tracing.StartClient(ctx, "smtp send")
	defer func() {
		if err != nil {
			tracing.Failf(span, "smtp", "the message was not accepted")
		}
		span.End()
	}()
	if span.IsRecording() {
		span.SetAttributes(tracing.ServerAddress.String(s.Host), tracing.ServerPort.Int(s.Port))
	}
	msg, err := m.message()
	if err != nil {
		return err
	}
	tc := cmp.Or(s.TLSConfig, &tls.Config{MinVersion: tls.VersionTLS12}).Clone()
	tc.ServerName = cmp.Or(tc.ServerName, s.Host)
	opts := []gomail.Option{gomail.WithPort(s.Port), gomail.WithTimeout(s.Timeout), gomail.WithTLSConfig(tc)}
	if s.ImplicitTLS {
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(s.Policy))
	}
	if s.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
	}
	c, err := gomail.NewClient(s.Host, opts...)
	if err != nil {
		return permanent("smtp: %v", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		// A refused message says whether it may pass later; a network
		// failure or a time-out may.
		if se, ok := errors.AsType[*gomail.SendError](err); ok {
			return &Error{Err: fmt.Errorf("smtp: %w", err), Temp: se.IsTemp()}
		}
		return temporary("smtp: %v", err)
	}
	return nil
}

// MailOutbox writes each message as an .eml file named by its id into Dir
// (DATA/outbox/mail), for use without an SMTP server.
type MailOutbox struct{ Dir string }

// SendMail writes m to the outbox.
func (o *MailOutbox) SendMail(_ context.Context, m Mail) error {
	msg, err := m.message()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		return permanent("mail: %v", err)
	}
	return writeFileAtomic(o.Dir, m.ID+".eml", buf.Bytes())
}
