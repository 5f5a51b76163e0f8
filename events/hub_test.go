package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func run(t *testing.T, db *store.DB, cfg events.Config) *events.Hub {
	t.Helper()
	hub := events.New(db, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return hub
}

func owner(t *testing.T, db *store.DB, name string) *yard.User {
	t.Helper()
	u := &yard.User{Name: name, Email: name + "@example.org", Roles: []string{yard.RoleUser}}
	if err := db.CreateUser(context.Background(), u, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestHubDelivers: every subscriber gets the events its filter keeps, in
// id order, on both engines, woken by the commits of its own store.
func TestHubDelivers(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		hub := run(t, db, events.Config{Poll: time.Hour}) // only wake-ups, no poll
		alice := owner(t, db, "alice")
		all, err := hub.Subscribe(ctx, "a", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		dogsOnly, err := hub.Subscribe(ctx, "b", true, func(e *yard.Event) bool { return e.Type == yard.EventDogCreated })
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if err := db.CreateDog(ctx, &yard.Dog{Name: "d", Email: "d@example.org", Owner: alice.ID}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.CreateOrder(ctx, &yard.Order{CustomerID: alice.ID}); err != nil {
			t.Fatal(err)
		}
		var prev yard.EventID
		for i := range 6 {
			select {
			case it := <-all.C:
				if !prev.Less(it.Event.ID) {
					t.Fatalf("event %d: id %s after %s", i, it.Event.ID, prev)
				}
				prev = it.Event.ID
			case <-time.After(5 * time.Second):
				t.Fatalf("event %d not delivered", i)
			}
		}
		if len(dogsOnly.C) != 5 {
			// Delivered in the same pass as all's.
			time.Sleep(100 * time.Millisecond)
			if len(dogsOnly.C) != 5 {
				t.Fatalf("the dog.created subscriber holds %d events, want 5", len(dogsOnly.C))
			}
		}
	})
}

// TestHubLimits: a person past their streams is ErrTooMany, the process
// past its subscriptions ErrFull; uncounted subscriptions (waits) count
// only against the process; unsubscribing makes room; Close cuts everyone
// off and refuses newcomers.
func TestHubLimits(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	hub := run(t, db, events.Config{PerPerson: 2, PerProcess: 4})
	ctx := context.Background()
	a1, _ := hub.Subscribe(ctx, "alice", true, nil)
	if _, err := hub.Subscribe(ctx, "alice", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Subscribe(ctx, "alice", true, nil); !errors.Is(err, events.ErrTooMany) {
		t.Fatalf("alice's third: %v, want ErrTooMany", err)
	}
	if _, err := hub.Subscribe(ctx, "", false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Subscribe(ctx, "bob", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Subscribe(ctx, "carol", true, nil); !errors.Is(err, events.ErrFull) {
		t.Fatalf("the fifth: %v, want ErrFull", err)
	}
	hub.Unsubscribe(a1)
	select {
	case <-a1.Cut:
	default:
		t.Fatal("an ended subscription's Cut is open")
	}
	if _, err := hub.Subscribe(ctx, "alice", true, nil); err != nil {
		t.Fatalf("after unsubscribing: %v", err)
	}
	hub.Close()
	if n := hub.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after Close", n)
	}
	if _, err := hub.Subscribe(ctx, "dave", true, nil); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// TestHubPolls: events written by another store handle (another process)
// reach subscribers by the poll alone.
func TestHubPolls(t *testing.T) {
	path := t.TempDir() + "/yard.db"
	db, other := storetest.OpenDSN(t, "sqlite:"+path), storetest.OpenDSN(t, "sqlite:"+path)
	hub := run(t, db, events.Config{Poll: 50 * time.Millisecond})
	sub, err := hub.Subscribe(context.Background(), "x", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := owner(t, other, "alice")
	if err := other.CreateDog(context.Background(), &yard.Dog{Name: "d", Email: "d@example.org", Owner: alice.ID}); err != nil {
		t.Fatal(err)
	}
	select {
	case it := <-sub.C:
		if it.Event.Type != yard.EventDogCreated {
			t.Fatalf("got %s", it.Event.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an event written through another handle was not delivered by the poll")
	}
}

// TestHubOwnedByAndWakeups: a subscription owned by a person gets only
// that person's events, one of every owner gets all; a Wakeups channel is
// signalled when events come.
func TestHubOwnedByAndWakeups(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	hub := run(t, db, events.Config{Poll: time.Hour})
	ctx := context.Background()
	alice, bob := owner(t, db, "alice"), owner(t, db, "bob")
	mine, err := hub.Subscribe(ctx, alice.ID, true, nil, events.OwnedBy(alice.ID))
	if err != nil {
		t.Fatal(err)
	}
	all, err := hub.Subscribe(ctx, "root", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	woken, stop := hub.Wakeups()
	defer stop()
	for _, u := range []*yard.User{bob, alice, bob} {
		if err := db.CreateDog(ctx, &yard.Dog{Name: "d", Email: "d@example.org", Owner: u.ID}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up")
	}
	for deadline := time.Now().Add(5 * time.Second); len(all.C) < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if len(all.C) != 3 || len(mine.C) != 1 {
		t.Fatalf("all holds %d events (want 3), alice's %d (want 1)", len(all.C), len(mine.C))
	}
	if it := <-mine.C; it.Event.Owner != alice.ID {
		t.Fatalf("alice's subscription got %s's event", it.Event.Owner)
	}
}

// TestHubIdle: with no subscriber the hub only follows the newest id (it
// reads no event), still wakes its Wakeups, and a subscriber that comes
// later gets exactly the events after it came.
func TestHubIdle(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		hub := run(t, db, events.Config{Poll: 20 * time.Millisecond})
		alice := owner(t, db, "alice")
		woken, stop := hub.Wakeups()
		defer stop()
		// Subscribe waits for the hub to know its position: then leave it
		// idle.
		s, err := hub.Subscribe(ctx, "x", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		hub.Unsubscribe(s)
		for range 3 {
			if err := db.CreateDog(ctx, &yard.Dog{Name: "old", Email: "d@example.org", Owner: alice.ID}); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatal("an idle hub did not wake its Wakeups")
		}
		sub, err := hub.Subscribe(ctx, "x", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := db.LastEventID(ctx)
		if err := db.CreateDog(ctx, &yard.Dog{Name: "new", Email: "d@example.org", Owner: alice.ID}); err != nil {
			t.Fatal(err)
		}
		// Events after the subscription's position arrive, in order; the
		// old ones before it never do.
		deadline := time.After(5 * time.Second)
		for {
			select {
			case it := <-sub.C:
				if !sub.From.Less(it.Event.ID) {
					t.Fatalf("event %s at or before the subscription's position %s", it.Event.ID, sub.From)
				}
				var d yard.Dog
				if last.Less(it.Event.ID) {
					if err := json.Unmarshal(it.Event.Data, &d); err != nil || d.Name != "new" {
						t.Fatalf("after the subscription: %s %v", it.Event.Data, err)
					}
					return
				}
			case <-deadline:
				t.Fatal("the event written after the subscription did not arrive")
			}
		}
	})
}

// TestHubReadsItsPeople: with only people's streams open, the hub reads
// only their events, and a person whose stream opens while the hub reads
// (for other people) still gets every event after its position, none
// twice, in order; another person's writes still wake Wakeups.
func TestHubReadsItsPeople(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hub := run(t, db, events.Config{Poll: 20 * time.Millisecond})
		alice, bob, carol := owner(t, db, "alice"), owner(t, db, "bob"), owner(t, db, "carol")
		if _, err := hub.Subscribe(ctx, alice.ID, true, nil, events.OwnedBy(alice.ID)); err != nil {
			t.Fatal(err)
		}
		woken, stop := hub.Wakeups()
		defer stop()
		if err := db.CreateDog(ctx, &yard.Dog{Name: "b", Email: "d@example.org", Owner: bob.ID}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatal("another person's event did not wake Wakeups")
		}
		// Writers of bob's and carol's dogs run while carol's streams come
		// and go.
		writes := make(chan error, 1)
		go func() {
			for i := 0; ctx.Err() == nil; i++ {
				who := bob.ID
				if i%3 == 0 {
					who = carol.ID
				}
				if err := db.CreateDog(ctx, &yard.Dog{Name: "d", Email: "d@example.org", Owner: who}); err != nil && ctx.Err() == nil {
					writes <- err
					return
				}
			}
			writes <- nil
		}()
		for round := range 15 {
			sub, err := hub.Subscribe(ctx, carol.ID, true, nil, events.OwnedBy(carol.ID))
			if err != nil {
				t.Fatal(err)
			}
			var got []yard.EventID
			deadline := time.After(5 * time.Second)
		collect:
			for len(got) < 5 {
				select {
				case it := <-sub.C:
					if it.Event.Owner != carol.ID {
						t.Fatalf("round %d: carol's stream got %s's event", round, it.Event.Owner)
					}
					got = append(got, it.Event.ID)
				case <-sub.Cut:
					t.Fatalf("round %d: cut off", round)
				case <-deadline:
					break collect
				}
			}
			hub.Unsubscribe(sub)
			if len(got) < 5 {
				t.Fatalf("round %d: %d events of carol's in 5 s", round, len(got))
			}
			// What the store holds of carol's after the position, up to
			// the last one received, is exactly what came.
			p, err := db.ReadEvents(ctx, yard.EventFilter{After: sub.From, Owner: &carol.ID, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			var want []yard.EventID
			for _, e := range p.Events {
				if !got[len(got)-1].Less(e.ID) {
					want = append(want, e.ID)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: received %v, the store holds %v", round, got, want)
			}
		}
		cancel()
		if err := <-writes; err != nil {
			t.Fatal(err)
		}
	})
}

// slowStart is a store whose first LastEventID answers only once release
// is closed.
type slowStart struct {
	*store.DB
	asked   chan struct{}
	release chan struct{}
}

func (s *slowStart) LastEventID(ctx context.Context) (yard.EventID, error) {
	select {
	case <-s.asked:
	default:
		close(s.asked)
		<-s.release
	}
	return s.DB.LastEventID(ctx)
}

// TestHubClosedBeforeItsStart: a server stopped while its hub still waits
// for the store's first answer (Close, then that answer) stops cleanly;
// it once closed the hub's ready channel twice.
func TestHubClosedBeforeItsStart(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	st := &slowStart{DB: db, asked: make(chan struct{}), release: make(chan struct{})}
	hub := events.New(st, events.Config{Poll: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()
	<-st.asked
	hub.Close()
	close(st.release)
	time.Sleep(50 * time.Millisecond) // Run takes the answer, then polls
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end")
	}
	if _, err := hub.Subscribe(context.Background(), "x", true, nil); err == nil {
		t.Fatal("a closed hub took a subscription")
	}
}

// flaky is a store that cannot be reached while down is set.
type flaky struct {
	*store.DB
	down  atomic.Bool
	fails atomic.Int64
}

var errUnreachable = &yard.Error{Code: yard.EUNAVAILABLE, Message: "unreachable"}

func (f *flaky) LastEventID(ctx context.Context) (yard.EventID, error) {
	if f.down.Load() {
		f.fails.Add(1)
		return yard.EventID{}, errUnreachable
	}
	return f.DB.LastEventID(ctx)
}

func (f *flaky) ReadEvents(ctx context.Context, filter yard.EventFilter) (*yard.EventPage, error) {
	if f.down.Load() {
		f.fails.Add(1)
		return nil, errUnreachable
	}
	return f.DB.ReadEvents(ctx, filter)
}

// records keeps the messages of a logger's records.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}

func (r *records) count(sub string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// TestHubLogsAnOutageOnce: a store that cannot be reached for many reads
// in a row is logged once when the outage begins and once when it ends
// (internal/outage), and the hub delivers again after it.
func TestHubLogsAnOutageOnce(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	st := &flaky{DB: db}
	logs := &records{}
	hub := events.New(st, events.Config{Poll: 10 * time.Millisecond, Logger: slog.New(logs)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	alice := owner(t, db, "alice")
	sub, err := hub.Subscribe(ctx, "a", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	for deadline := time.Now().Add(10 * time.Second); st.fails.Load() < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("%d failed reads within 10 s, want 10", st.fails.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := db.CreateDog(ctx, &yard.Dog{Name: "d", Email: "d@example.org", Owner: alice.ID}); err != nil {
		t.Fatal(err)
	}
	st.down.Store(false)
	select {
	case <-sub.C:
	case <-time.After(5 * time.Second):
		t.Fatal("no event delivered after the outage")
	}
	for deadline := time.Now().Add(5 * time.Second); logs.count("store reachable again") == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the end of the outage was not logged")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := logs.count("store unavailable"); got != 1 {
		t.Errorf("the outage's start logged %d times over %d failed reads, want once", got, st.fails.Load())
	}
	if got := logs.count("store reachable again"); got != 1 {
		t.Errorf("the outage's end logged %d times, want once", got)
	}
}
