package jobs_test

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// reset is the error of a PostgreSQL connection reset under a query, as
// the network gives it.
func reset() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// awayStore is the real store whose FindDogCore and FindUserByID meet a
// reset connection while their counts last.
type awayStore struct {
	*store.DB
	dogResets, userResets atomic.Int32
}

func (s *awayStore) FindDogCore(ctx context.Context, id string) (*yard.Dog, error) {
	if s.dogResets.Add(-1) >= 0 {
		return nil, reset()
	}
	return s.DB.FindDogCore(ctx, id)
}

func (s *awayStore) FindUserByID(ctx context.Context, id string) (*yard.User, error) {
	if s.userResets.Add(-1) >= 0 {
		return nil, reset()
	}
	return s.DB.FindUserByID(ctx, id)
}

// refusingMailer is an SMTP server that refuses every connection.
type refusingMailer struct{}

func (refusingMailer) SendMail(context.Context, notify.Mail) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// TestStoreAwayNeverFailsABark: an attempt whose store read meets a reset
// connection is handed back (pending, the attempt not counted) as often
// as it happens, even with one attempt allowed, and the bark then runs; an
// effect's own refused connection is retried and fails once its attempts
// are spent, the store being up.
func TestStoreAwayNeverFailsABark(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		db.Now = clk.Now
		f := setup(t, db)
		ctx := context.Background()
		away := &awayStore{DB: db}
		url, head := gitRepo(t)
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		s := jobs.New(jobs.Config{DB: away, MaxAttempts: 1, Backoff: func(int) time.Duration { return time.Minute },
			Effects: &jobs.Effects{Mailer: f.mails, Texter: f.texts, Fetcher: &fetch.Runner{Timeout: time.Minute, Policy: testPolicy},
				Users: away, DataDir: f.data}})
		// handedBack runs the due task, whose attempt meets the store away.
		handedBack := func(b *yard.Bark) {
			t.Helper()
			ran, runErr := s.RunOne(ctx)
			got, err := db.FindBark(ctx, f.dog.ID, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != yard.BarkPending || got.Attempts != 0 {
				t.Fatalf("after the store was away: %s, %d attempts; want pending, 0", got.Status, got.Attempts)
			}
			// The worker is told, so it waits a poll and logs the outage.
			if !ran || db.Unavailable(runErr) == nil {
				t.Fatalf("run: %v, %v; want a run that met the store away", ran, runErr)
			}
		}
		succeeded := func(b *yard.Bark) {
			t.Helper()
			if n := drain(t, s); n != 1 {
				t.Fatalf("ran %d tasks, want 1", n)
			}
			if got, _ := db.FindBark(ctx, f.dog.ID, b.ID); got.Status != yard.BarkSucceeded || got.Attempts != 1 {
				t.Fatalf("once the store answers: %s, %d attempts; want succeeded, 1", got.Status, got.Attempts)
			}
		}

		// The dog read.
		b, err := s.Bark(ctx, f.dog, yard.EffectEmailCount, true)
		if err != nil {
			t.Fatal(err)
		}
		away.dogResets.Store(3)
		for range 3 {
			handedBack(b)
		}
		succeeded(b)
		if got := f.barkCount(t); got != 1 {
			t.Fatalf("barkCount %d, want 1", got)
		}

		// The owner read of fetch-code, after the fetch.
		b, err = s.Bark(ctx, f.dog, yard.EffectFetchCode, true)
		if err != nil {
			t.Fatal(err)
		}
		away.userResets.Store(1)
		handedBack(b)
		succeeded(b)
		if d, _ := db.FindDogByID(ctx, f.dog.ID); d.CodeRevision != head {
			t.Fatalf("codeRevision %q, want %q", d.CodeRevision, head)
		}

		// The mailer's refused connection is the effect's, not the store's:
		// retried after the back-off (a network error's Temporary is not
		// taken), and failed once the attempts are spent.
		s = jobs.New(jobs.Config{DB: away, MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Minute },
			Effects: &jobs.Effects{Mailer: refusingMailer{}, Users: away, DataDir: f.data}})
		b, err = s.Bark(ctx, f.dog, yard.EffectEmail, true)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if got, _ := db.FindBark(ctx, f.dog.ID, b.ID); got.Status != yard.BarkPending || got.Attempts != 1 || got.Error == "" {
			t.Fatalf("after a refused SMTP connection: %s, %d attempts, error %q; want pending, 1, the error", got.Status, got.Attempts, got.Error)
		}
		clk.Advance(61 * time.Second)
		drain(t, s)
		if got, _ := db.FindBark(ctx, f.dog.ID, b.ID); got.Status != yard.BarkFailed || got.Attempts != 2 {
			t.Fatalf("after the last attempt: %s, %d attempts; want failed, 2", got.Status, got.Attempts)
		}
	})
}
