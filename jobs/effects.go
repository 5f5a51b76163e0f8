package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/notify"
)

// Effects performs the four bark effects (spec (a)-(d)). Only the external
// part happens here (the e-mail, the fetch, the text message); the store
// part (barkCount, codeRevision, the record) is committed with the task's
// state by the caller.
type Effects struct {
	Mailer  notify.Mailer
	Texter  notify.Texter
	Fetcher *fetch.Runner
	// Users finds the owner of a dog (for the text message).
	Users interface {
		FindUserByID(ctx context.Context, id string) (*yard.User, error)
	}
	// DataDir holds dogs/{id}/code.
	DataDir string
	// From is the sender of bark e-mails; Domain the right-hand side of
	// Message-IDs.
	From   string
	Domain string
}

// permanentError marks an error that retrying cannot cure.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so the task fails at once instead of being retried.
func Permanent(err error) error { return &permanentError{err} }

// isTemporary reports whether err is worth retrying: errors that say so
// (notify, fetch) are believed, permanent ones and domain errors are not,
// anything else is. A network error's own word is not taken: net.Error's
// Temporary is deprecated, and *net.OpError says false for a reset
// connection or a refused dial, which a later attempt may well get past.
func isTemporary(err error) bool {
	if _, ok := errors.AsType[*permanentError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*yard.Error](err); ok {
		return false
	}
	var t interface{ Temporary() bool }
	if errors.As(err, &t) {
		if _, ok := t.(net.Error); !ok {
			return t.Temporary()
		}
	}
	return true
}

// storeError marks the error of a store call made by an attempt (the
// dog's, its owner's), so that runTask asks the store whether it means the
// store was away (storeAway) of those errors only: an SMTP server's
// refused connection says nothing of the store.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// storeAway returns the store's EUNAVAILABLE when err came from one of
// the attempt's store calls and means the store could not be reached (a
// reset connection, a refused dial: Store.Unavailable); nil otherwise.
func storeAway(db Store, err error) *yard.Error {
	if se, ok := errors.AsType[*storeError](err); ok {
		return db.Unavailable(se.err)
	}
	return nil
}

// timedOut reports whether err ended on a time limit (a fetch that stalled
// or ran too long).
func timedOut(err error) bool {
	fe, ok := errors.AsType[*fetch.Error](err)
	return ok && fe.Kind == fetch.TimedOut
}

// MessageID returns the id carried by the messages of a bark task, the same
// on every attempt, so a repeated message is recognisable.
func (e *Effects) MessageID(barkID string) string {
	return "bark-" + barkID + "@" + cmp.Or(e.Domain, "yard.localhost")
}

// Run performs the external part of bark b of dog d and returns what the
// store must apply.
func (e *Effects) Run(ctx context.Context, b *yard.Bark, d *yard.Dog) (yard.TaskResult, error) {
	switch b.Effect {
	case yard.EffectRecord:
		return yard.TaskResult{}, nil
	case yard.EffectEmail, yard.EffectEmailCount:
		return e.email(ctx, b, d)
	case yard.EffectFetchCode:
		return e.fetchCode(ctx, b, d)
	}
	return yard.TaskResult{}, Permanent(fmt.Errorf("unknown effect %q", b.Effect))
}

func (e *Effects) email(ctx context.Context, b *yard.Bark, d *yard.Dog) (yard.TaskResult, error) {
	if e.Mailer == nil {
		return yard.TaskResult{}, Permanent(errors.New("no mailer configured"))
	}
	m := notify.Mail{ID: e.MessageID(b.ID), From: cmp.Or(e.From, "yard@localhost"), To: d.Email,
		Subject: fmt.Sprintf("Woof! %s barked", d.Name),
		Body:    fmt.Sprintf("%s barked.\n\nBark %s (%s) of dog %s.\n", d.Name, b.ID, b.Effect, d.ID)}
	if err := e.Mailer.SendMail(ctx, m); err != nil {
		return yard.TaskResult{}, err
	}
	return yard.TaskResult{Output: fmt.Sprintf("mail to %s with Message-ID <%s> %s", d.Email, m.ID, notify.Delivery(e.Mailer))}, nil
}

func (e *Effects) fetchCode(ctx context.Context, b *yard.Bark, d *yard.Dog) (yard.TaskResult, error) {
	if e.Fetcher == nil {
		return yard.TaskResult{}, Permanent(errors.New("no fetch runner configured"))
	}
	if d.CodeURL == "" {
		return yard.TaskResult{}, Permanent(errors.New("the dog has no codeUrl to fetch"))
	}
	res, err := e.Fetcher.Fetch(ctx, d.CodeURL, filepath.Join(e.DataDir, "dogs", d.ID, "code"))
	if err != nil {
		// The error names a category (fetch.Kind); what git said may
		// hold network details (addresses, the state of a port) and
		// stays in the operator's log.
		return yard.TaskResult{}, err
	}
	var out strings.Builder
	out.WriteString(res.Output)
	if out.Len() > 0 && !strings.HasSuffix(res.Output, "\n") {
		out.WriteString("\n")
	}
	fmt.Fprintf(&out, "fetched %s at revision %s\n", yard.DisplayCodeURL(d.CodeURL), res.Revision)
	owner, err := e.Users.FindUserByID(ctx, d.Owner)
	switch {
	case err != nil:
		return yard.TaskResult{Output: out.String()}, &storeError{err}
	case owner.Phone == "":
		out.WriteString("the owner has no phone number: no text message sent\n")
	case e.Texter == nil:
		out.WriteString("no SMS provider configured: no text message sent\n")
	default:
		id := "bark-" + b.ID
		// The revision's first 12 characters, "(none)" for none.
		short := cmp.Or(res.Revision[:min(len(res.Revision), 12)], "(none)")
		body := fmt.Sprintf("%s fetched its code: revision %s", d.Name, short)
		if err := e.Texter.SendText(ctx, notify.Text{ID: id, To: owner.Phone, Body: body}); err != nil {
			return yard.TaskResult{Output: out.String()}, err
		}
		fmt.Fprintf(&out, "text message %s to the owner %s\n", id, notify.Delivery(e.Texter))
	}
	rev := res.Revision
	return yard.TaskResult{Output: out.String(), CodeRevision: &rev}, nil
}
