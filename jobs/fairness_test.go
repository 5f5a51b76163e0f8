package jobs_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/fetch/fetchtest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// newDog makes a user (when name is not empty) and a dog of theirs.
func newDog(t *testing.T, db *store.DB, owner *yard.User, name string, codeURL string) (*yard.User, *yard.Dog) {
	t.Helper()
	ctx := context.Background()
	if owner == nil {
		owner = &yard.User{Name: name, Email: name + "@example.org", Roles: []string{yard.RoleUser}}
		if err := db.CreateUser(ctx, owner, nil); err != nil {
			t.Fatal(err)
		}
	}
	d := &yard.Dog{Name: "Dog of " + owner.Name, Email: "dog@example.org", Owner: owner.ID, CodeURL: codeURL}
	if err := db.CreateDog(ctx, d); err != nil {
		t.Fatal(err)
	}
	return owner, d
}

// TestStalledFetchesNeverDelayEmail: fetches to a server that accepts and
// never answers, more of them than there are workers, do not hold up
// another user's e-mail bark: store effects have workers of their own.
func TestStalledFetchesNeverDelayEmail(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		host, port, _ := net.SplitHostPort(fetchtest.Silent(t))
		url := "https://" + host + ":" + port + "/x.git"
		s := f.service(db)
		s.Effects.Fetcher = &fetch.Runner{Timeout: time.Minute, IdleTimeout: time.Minute,
			Policy: &fetch.Policy{AllowHosts: []string{host}}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mallory *yard.User
		var fetches []*yard.Bark
		for range 6 {
			var d *yard.Dog
			mallory, d = newDog(t, db, mallory, "mallory", url)
			b, err := s.Bark(ctx, d, yard.EffectFetchCode, true)
			if err != nil {
				t.Fatal(err)
			}
			fetches = append(fetches, b)
		}
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		// Let the fetches take whatever workers they can: one, the
		// owner's bound (FetchPerUser).
		waitFor(t, func() bool {
			for _, b := range fetches {
				if got, _ := db.FindBark(ctx, b.DogID, b.ID); got != nil && got.Status == yard.BarkRunning {
					return true
				}
			}
			return false
		})
		start := time.Now()
		b, err := s.Bark(ctx, f.dog, yard.EffectEmail, true)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := db.FindBark(ctx, f.dog.ID, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == yard.BarkSucceeded {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the e-mail bark is still %s after 10 s behind stalled fetches", got.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the e-mail bark took %s behind stalled fetches, want under 2 s", d)
		}
	})
}

// TestFetchClaimsBoundedPerDogAndUser: a dog never has two fetches
// running, and one user's fetches take at most FetchPerUser places, also
// across processes (the bound lives in the store's claim).
func TestFetchClaimsBoundedPerDogAndUser(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		url := "https://example.org/x.git"
		alice, a1 := newDog(t, db, nil, "alice", url)
		_, a2 := newDog(t, db, alice, "", url)
		_, b1 := newDog(t, db, nil, "bob", url)
		enqueue := func(d *yard.Dog) *yard.Bark {
			b := &yard.Bark{DogID: d.ID, Effect: yard.EffectFetchCode}
			if err := db.EnqueueBark(ctx, b); err != nil {
				t.Fatal(err)
			}
			return b
		}
		enqueue(a1)
		enqueue(a1)
		enqueue(a2)
		bobs := enqueue(b1)
		mail := &yard.Bark{DogID: a1.ID, Effect: yard.EffectEmail}
		if err := db.EnqueueBark(ctx, mail); err != nil {
			t.Fatal(err)
		}
		claim := func(who string, f yard.ClaimFilter) *yard.Bark {
			b, _, err := db.ClaimTaskOf(ctx, who, time.Minute, f)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		fetch1 := yard.ClaimFilter{Kind: yard.ClaimFetch, FetchPerUser: 1}
		first := claim("p1", fetch1)
		if first == nil || (first.DogID != a1.ID && first.DogID != a2.ID) {
			t.Fatalf("first claim: got %+v, want a fetch of alice's", first)
		}
		// Another process: alice has one running, so only bob's.
		if b := claim("p2", fetch1); b == nil || b.ID != bobs.ID {
			t.Fatalf("second claim: got %+v, want bob's fetch", b)
		}
		if b := claim("p2", fetch1); b != nil {
			t.Fatalf("third claim: got %+v (%s), want none: every owner is at the bound", b, b.DogID)
		}
		// With two per user, alice's other dog may run, never a second
		// fetch of the same dog.
		fetch2 := yard.ClaimFilter{Kind: yard.ClaimFetch, FetchPerUser: 2}
		if b := claim("p3", fetch2); b == nil || b.DogID == first.DogID || b.DogID == b1.ID {
			t.Fatalf("claim with two per user: got %+v, want a fetch of alice's other dog", b)
		}
		if b := claim("p3", fetch2); b != nil {
			t.Fatalf("got %+v, want none: the dog's fetch is already running", b)
		}
		// The store pool never takes fetches; the fetch pool never takes mail.
		if b := claim("p4", yard.ClaimFilter{Kind: yard.ClaimStore}); b == nil || b.ID != mail.ID {
			t.Fatalf("store claim: got %+v, want the e-mail bark", b)
		}
	})
}

// TestTimedOutFetchRetriesLaterAndStopsSooner: a fetch that ends on a time
// limit waits longer before its retry and is tried twice, not five times.
func TestTimedOutFetchRetriesLaterAndStopsSooner(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		db.Now = clk.Now
		f := setup(t, db)
		ctx := context.Background()
		url := "https://example.org/rex.git"
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		s := f.service(db)
		s.Backoff = func(int) time.Duration { return time.Second }
		s.Effects.Fetcher = &fetch.Runner{Command: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond, Policy: testPolicy}
		b, _ := s.Bark(ctx, f.dog, yard.EffectFetchCode, true)
		for attempt := 1; ; attempt++ {
			if n := drain(t, s); n != 1 {
				t.Fatalf("attempt %d: ran %d tasks, want 1", attempt, n)
			}
			got, _ := db.FindBark(ctx, f.dog.ID, b.ID)
			if got.Status == yard.BarkFailed {
				if attempt != 2 || got.Error != "timed out: the fetch took longer than 200ms" {
					t.Errorf("failed after %d attempts with %q, want 2 attempts and a time-out", attempt, got.Error)
				}
				break
			}
			if got.Status != yard.BarkPending || attempt > 2 {
				t.Fatalf("attempt %d: status %s (%q)", attempt, got.Status, got.Error)
			}
			clk.Advance(2 * time.Second) // the ordinary back-off has passed
			if n := drain(t, s); n != 0 {
				t.Fatal("a timed-out fetch was retried after the ordinary back-off")
			}
			clk.Advance(time.Hour)
		}
	})
}

// TestConcurrentFetchClaimsKeepTheBound: claims made at the same moment
// (as by several processes) never put one user over the bound.
func TestConcurrentFetchClaimsKeepTheBound(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var owner *yard.User
		for range 6 {
			var d *yard.Dog
			owner, d = newDog(t, db, owner, "carol", "https://example.org/x.git")
			if err := db.EnqueueBark(ctx, &yard.Bark{DogID: d.ID, Effect: yard.EffectFetchCode}); err != nil {
				t.Fatal(err)
			}
		}
		var claimed atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				b, _, err := db.ClaimTaskOf(ctx, fmt.Sprintf("p%d", i), time.Minute, yard.ClaimFilter{Kind: yard.ClaimFetch, FetchPerUser: 2})
				if err != nil {
					t.Error(err)
				}
				if b != nil {
					claimed.Add(1)
				}
			})
		}
		wg.Wait()
		if n := claimed.Load(); n != 2 {
			t.Errorf("claimed %d fetches of one user at once, want 2", n)
		}
	})
}
