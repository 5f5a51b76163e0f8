// Package notify sends the messages of bark effects: e-mail over SMTP and
// text messages through a Twilio-style HTTP API, each with an outbox
// fallback that writes files into the data directory when no server is
// configured. Every message carries an id derived from its bark task (the
// mail's Message-ID, the SMS request's idempotency key), so a message sent
// again after a crash is recognisable as a duplicate.
package notify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Error is a delivery failure; Temp reports whether trying again later may
// succeed (a network error, a 4xx SMTP reply, an HTTP 429 or 5xx).
type Error struct {
	Err  error
	Temp bool
}

// Error returns the message of the underlying error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether a retry may succeed.
func (e *Error) Temporary() bool { return e.Temp }

func temporary(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...), Temp: true}
}

func permanent(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,200}$`)

// writeFileAtomic writes data to dir/name through a temporary file and a
// rename, so a reader never sees half a message and a retry with the same
// id replaces the file instead of adding one. Its failures are temporary.
func writeFileAtomic(dir, name string, data []byte) (err error) {
	defer func() {
		if err != nil {
			err = temporary("outbox: %v", err)
		}
	}()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, name))
}

// Delivery says, for a bark task's output, what handing a message to
// sender (a Mailer or a Texter) did: "accepted by the SMTP server",
// "queued in the mail outbox, not sent (no SMTP server configured)". An
// outbox is not a delivery, and the output must not claim one. A sender
// that does not say is described as "sent".
func Delivery(sender any) string {
	if d, ok := sender.(interface{ Delivery() string }); ok {
		return d.Delivery()
	}
	return "sent"
}

// Delivery is what a message given to the SMTP server became.
func (s *SMTP) Delivery() string { return "accepted by the SMTP server" }

// Delivery is what a message written to the mail outbox became.
func (o *MailOutbox) Delivery() string {
	return "queued in the mail outbox, not sent (no SMTP server configured)"
}

// Delivery is what a text message given to the SMS provider became.
func (a *SMSAPI) Delivery() string { return "accepted by the SMS provider" }

// Delivery is what a text message written to the SMS outbox became.
func (o *TextOutbox) Delivery() string {
	return "queued in the SMS outbox, not sent (no SMS provider configured)"
}
