package jobs_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/notify/smtptest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestOutputSaysWhereMessagesWent: a bark's output says "sent" only for a
// message a server accepted; one written to an outbox says so.
func TestOutputSaysWhereMessagesWent(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := setup(t, db)
		s := f.service(db)
		output := func(effect string) string {
			t.Helper()
			b, err := s.Bark(ctx, f.dog, effect, effect == yard.EffectFetchCode)
			if err != nil {
				t.Fatal(err)
			}
			drain(t, s)
			got, err := db.FindBark(ctx, f.dog.ID, b.ID)
			if err != nil || got.Status != yard.BarkSucceeded {
				t.Fatalf("bark: %+v %v", got, err)
			}
			return got.Output
		}

		want := "mail to rex@example.org with Message-ID <bark-"
		if out := output(yard.EffectEmail); !strings.HasPrefix(out, want) ||
			!strings.HasSuffix(out, "@yard.test> queued in the mail outbox, not sent (no SMTP server configured)") {
			t.Errorf("outbox mail: output %q", out)
		}

		url, _ := gitRepo(t)
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		if out := output(yard.EffectFetchCode); !strings.Contains(out, " to the owner queued in the SMS outbox, not sent (no SMS provider configured)\n") {
			t.Errorf("outbox text message: output %q", out)
		}

		srv := smtptest.Start(t, smtptest.Options{})
		m, err := notify.ParseSMTPURL("smtp://" + srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		m.TLSConfig = &tls.Config{RootCAs: srv.Roots}
		s.Effects.Mailer = m
		if out := output(yard.EffectEmail); !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "> accepted by the SMTP server") {
			t.Errorf("SMTP mail: output %q", out)
		}
		if n := len(srv.Messages()); n != 1 {
			t.Errorf("the SMTP server received %d messages, want 1", n)
		}
	})
}
