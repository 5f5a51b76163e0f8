package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// readAllEvents reads every event after `after` committed before it was
// called, as owner sees them (nil: an administrator).
func readAllEvents(t *testing.T, db *store.DB, after yard.EventID, owner *string) []*yard.Event {
	t.Helper()
	settleEvents(t, db)
	return readVisibleEvents(t, db, after, owner)
}

// readVisibleEvents is readAllEvents without the wait: what a reader sees
// now, while older transactions may still run.
func readVisibleEvents(t *testing.T, db *store.DB, after yard.EventID, owner *string) []*yard.Event {
	t.Helper()
	var out []*yard.Event
	for {
		p, err := db.ReadEvents(context.Background(), yard.EventFilter{After: after, Owner: owner, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Events...)
		if len(p.Events) == 0 {
			return out
		}
		after = p.Next
	}
}

// settleEvents waits, on PostgreSQL, until every transaction that began
// before it was called has ended. A reader sees events only up to the
// oldest transaction still running anywhere on the server (docs/events.md,
// "Order and commit"), and other packages' tests run beside these on the same
// server: without the wait, a read right after a write may stop short of
// it.
func settleEvents(t *testing.T, db *store.DB) {
	t.Helper()
	if db.Engine() != store.Postgres {
		return
	}
	ctx := context.Background()
	var next int64
	if err := db.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var oldest int64
		if err := db.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&oldest); err != nil {
			t.Fatal(err)
		}
		if oldest >= next {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a transaction older than %d is still running after 30 s", next)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func eventTypes(evs []*yard.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+" "+e.Subject)
	}
	return out
}

// TestEventsOfEveryWrite holds each write path to exactly its events, in
// order, visible to their owner and to administrators only.
func TestEventsOfEveryWrite(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		start, err := db.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}

		dog := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: alice.ID}
		if err := db.CreateDog(ctx, dog); err != nil {
			t.Fatal(err)
		}
		// A write that fails leaves no event.
		if err := db.CreateDog(ctx, &yard.Dog{ID: dog.ID, Name: "Rex", Email: "rex@example.org", Owner: alice.ID}); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("duplicate dog: got %v", err)
		}
		// A bark of a dog that is not there is refused whole: no task,
		// no event.
		if err := db.EnqueueBark(ctx, &yard.Bark{DogID: "no-such-dog", Effect: yard.EffectRecord}); err == nil {
			t.Fatal("a bark of a dog that does not exist was stored")
		}
		if n, err := db.PendingTasks(ctx); err != nil || n != 0 {
			t.Fatalf("pending tasks after a refused bark: %d, %v", n, err)
		}
		sync1 := &yard.Bark{DogID: dog.ID, Effect: yard.EffectRecord}
		if err := db.RecordSyncBark(ctx, sync1); err != nil {
			t.Fatal(err)
		}
		async := &yard.Bark{DogID: dog.ID, Effect: yard.EffectEmailCount}
		if err := db.EnqueueBark(ctx, async); err != nil {
			t.Fatal(err)
		}
		claimed, token, err := db.ClaimTaskOf(ctx, "w1", time.Minute, yard.ClaimFilter{})
		if err != nil || claimed == nil || claimed.ID != async.ID {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		if err := db.CompleteTask(ctx, claimed, token, yard.TaskResult{Output: "sent"}); err != nil {
			t.Fatal(err)
		}
		pending := &yard.Bark{DogID: dog.ID, Effect: yard.EffectEmail}
		if err := db.EnqueueBark(ctx, pending); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CancelBark(ctx, dog.ID, pending.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CancelBark(ctx, dog.ID, sync1.ID); err != nil { // deletes the record
			t.Fatal(err)
		}
		name := "Rexy"
		if _, err := db.UpdateDog(ctx, dog.ID, yard.DogUpdate{Name: &name}); err != nil {
			t.Fatal(err)
		}
		order := &yard.Order{CustomerID: bob.ID}
		if err := db.CreateOrder(ctx, order); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpdateOrder(ctx, order.ID, func(o *yard.Order) error { o.Canceled = true; return nil }); err != nil {
			t.Fatal(err)
		}
		g := &yard.Garage{ID: "g1", Name: "North", State: "CA"}
		if err := db.CreateGarage(ctx, g); err != nil {
			t.Fatal(err)
		}
		car := &yard.Car{ID: "c1", Color: "red", Type: "sedan", Doors: 4, Make: "Ford", Model: "T", Year: 1990, Garage: "g1"}
		if err := db.CreateCar(ctx, car); err != nil {
			t.Fatal(err)
		}
		car.Color = "blue"
		if created, err := db.ReplaceCar(ctx, car); err != nil || created {
			t.Fatalf("replace: %v %v", created, err)
		}
		fresh := &yard.Car{ID: "c2", Color: "red", Type: "van", Doors: 2, Make: "VW", Model: "T2", Year: 1970}
		if created, err := db.ReplaceCar(ctx, fresh); err != nil || !created {
			t.Fatalf("replace new: %v %v", created, err)
		}
		doors := 5
		if _, err := db.UpdateCar(ctx, "c1", yard.CarUpdate{Doors: &doors}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteCar(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
		state := "NV"
		if _, err := db.UpdateGarage(ctx, "g1", yard.GarageUpdate{State: &state}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteGarage(ctx, "g1"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteDog(ctx, dog.ID); err != nil {
			t.Fatal(err)
		}

		dp := yard.DogPath(dog.ID)
		bp := func(b *yard.Bark) string { return yard.BarkPath(dog.ID, b.ID) }
		aliceWants := []string{
			"dog.created " + dp,
			"bark.created " + bp(sync1), "bark.succeeded " + bp(sync1), "dog.updated " + dp,
			"bark.created " + bp(async),
			"bark.running " + bp(async),
			"bark.succeeded " + bp(async), "dog.updated " + dp,
			"bark.created " + bp(pending),
			"bark.canceled " + bp(pending),
			"bark.deleted " + bp(sync1),
			"dog.updated " + dp,
		}
		bobWants := []string{"order.created /order/" + order.ID, "order.updated /order/" + order.ID}
		adminOnly := []string{
			"garage.created /garages/g1",
			"car.created /cars/c1", "car.updated /cars/c1", "car.created /cars/c2", "car.updated /cars/c1", "car.deleted /cars/c1",
			"garage.updated /garages/g1", "garage.deleted /garages/g1",
		}
		all := slices.Concat(aliceWants, bobWants, adminOnly, []string{"dog.deleted " + dp})
		aliceWants = append(aliceWants, "dog.deleted "+dp)

		got := readAllEvents(t, db, start, nil)
		if !slices.Equal(eventTypes(got), all) {
			t.Fatalf("administrator's events:\ngot  %q\nwant %q", eventTypes(got), all)
		}
		for i := 1; i < len(got); i++ {
			if !got[i-1].ID.Less(got[i].ID) || got[i-1].ID.String() >= got[i].ID.String() {
				t.Fatalf("ids not increasing: %s then %s", got[i-1].ID, got[i].ID)
			}
		}
		if a := eventTypes(readAllEvents(t, db, start, &alice.ID)); !slices.Equal(a, aliceWants) {
			t.Fatalf("alice's events:\ngot  %q\nwant %q", a, aliceWants)
		}
		if b := eventTypes(readAllEvents(t, db, start, &bob.ID)); !slices.Equal(b, bobWants) {
			t.Fatalf("bob's events:\ngot  %q\nwant %q", b, bobWants)
		}

		// The data is the resource after the change.
		var d yard.Dog
		if err := json.Unmarshal(got[3].Data, &d); err != nil || d.BarkCount != 1 || d.ID != dog.ID {
			t.Fatalf("dog.updated data after a counted bark: %+v %v", d, err)
		}
		var b yard.Bark
		if err := json.Unmarshal(got[6].Data, &b); err != nil || b.Status != yard.BarkSucceeded || b.Output != "sent" {
			t.Fatalf("bark.succeeded data: %+v %v", b, err)
		}
		var c yard.Car
		if err := json.Unmarshal(got[len(aliceWants)+len(bobWants)-1+2].Data, &c); err != nil || c.Color != "blue" {
			t.Fatalf("car.updated data: %+v %v", c, err)
		}
		var del yard.EventDeleted
		if err := json.Unmarshal(got[len(got)-1].Data, &del); err != nil || del.ID != dog.ID {
			t.Fatalf("dog.deleted data: %+v %v", del, err)
		}
	})
}

// TestEventsBatchRollback: concurrent barks share transactions (group
// commit); a failing one's events go with its savepoint, the others' stay,
// and the ids stay unique and increasing.
func TestEventsBatchRollback(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		dog := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: alice.ID}
		if err := db.CreateDog(ctx, dog); err != nil {
			t.Fatal(err)
		}
		start, _ := db.LastEventID(ctx)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for i := range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := &yard.Bark{DogID: dog.ID, Effect: yard.EffectRecord}
				if i%3 == 0 {
					b.DogID = "no-such-dog" // fails its foreign key
				}
				if err := db.RecordSyncBark(ctx, b); err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if ok != 40 {
			t.Fatalf("%d barks stored, want 40", ok)
		}
		evs := readAllEvents(t, db, start, nil)
		n := map[string]int{}
		for i, e := range evs {
			n[e.Type]++
			if i > 0 && !evs[i-1].ID.Less(e.ID) {
				t.Fatalf("ids not increasing: %s then %s", evs[i-1].ID, e.ID)
			}
		}
		if n[yard.EventBarkCreated] != 40 || n[yard.EventBarkSucceeded] != 40 || n[yard.EventDogUpdated] < 1 {
			t.Fatalf("events by type: %v", n)
		}
		// The store still writes events after the rolled-back ones.
		if err := db.RecordSyncBark(ctx, &yard.Bark{DogID: dog.ID, Effect: yard.EffectRecord}); err != nil {
			t.Fatal(err)
		}
		if more := readAllEvents(t, db, evs[len(evs)-1].ID, nil); len(more) != 3 {
			t.Fatalf("after: %q", eventTypes(more))
		}
	})
}

// TestEventsNeverAppearBehindTheReader: on PostgreSQL a transaction that
// started earlier but commits later must not show its event behind one a
// reader already read; a reader polling while writers race sees every
// event once, in increasing order.
func TestEventsNeverAppearBehindTheReader(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		start, _ := db.LastEventID(ctx)

		if db.Engine() == store.Postgres {
			// A slow transaction holds an event while a later one commits.
			slow, err := db.Read().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := slow.ExecContext(ctx, `INSERT INTO events (tx, seq, type, subject, owner_id, at, data)
				VALUES (pg_current_xact_id()::text::bigint, 1, 'dog.updated', '/v1/dogs/slow/', '', 0, '{}')`); err != nil {
				t.Fatal(err)
			}
			dog := &yard.Dog{Name: "Fast", Email: "f@example.org", Owner: alice.ID}
			if err := db.CreateDog(ctx, dog); err != nil {
				t.Fatal(err)
			}
			if evs := readVisibleEvents(t, db, start, nil); len(evs) != 0 {
				t.Fatalf("read %q while an older transaction runs; want nothing yet", eventTypes(evs))
			}
			if err := slow.Commit(); err != nil {
				t.Fatal(err)
			}
			evs := readAllEvents(t, db, start, nil)
			if want := []string{"dog.updated /v1/dogs/slow/", "dog.created " + yard.DogPath(dog.ID)}; !slices.Equal(eventTypes(evs), want) {
				t.Fatalf("after the commit: got %q, want %q", eventTypes(evs), want)
			}
			start = evs[len(evs)-1].ID
		}

		// Writers race; a reader follows them from its cursor.
		const writers, each = 8, 15
		done := make(chan struct{})
		var seen []*yard.Event
		readerErr := make(chan error, 1)
		go func() {
			cur := start
			for {
				select {
				case <-done:
					readerErr <- nil
					return
				default:
				}
				p, err := db.ReadEvents(ctx, yard.EventFilter{After: cur, Limit: 50})
				if err != nil {
					readerErr <- err
					return
				}
				seen = append(seen, p.Events...)
				cur = p.Next
			}
		}()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					d := &yard.Dog{Name: fmt.Sprintf("d%d-%d", w, i), Email: "d@example.org", Owner: alice.ID}
					if err := db.CreateDog(ctx, d); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		// Let the reader catch up with the last commit, then stop it.
		deadline := time.Now().Add(5 * time.Second)
		all := readAllEvents(t, db, start, nil)
		for len(all) < writers*each && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			all = readAllEvents(t, db, start, nil)
		}
		time.Sleep(50 * time.Millisecond)
		close(done)
		if err := <-readerErr; err != nil {
			t.Fatal(err)
		}
		if len(all) != writers*each {
			t.Fatalf("%d events in the store, want %d", len(all), writers*each)
		}
		for len(seen) < len(all) {
			// The reader stopped between reads; finish its read.
			p, err := db.ReadEvents(ctx, yard.EventFilter{After: seen[len(seen)-1].ID, Limit: 50})
			if err != nil || len(p.Events) == 0 {
				break
			}
			seen = append(seen, p.Events...)
		}
		if !slices.Equal(eventIDs(seen), eventIDs(all)) {
			t.Fatalf("the following reader saw %d events, the store holds %d (or in another order)", len(seen), len(all))
		}
	})
}

func eventIDs(evs []*yard.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID.String())
	}
	return out
}

// TestEventsRetention: pruned events are gone, and a reader resuming before
// them is told (EGONE, with the oldest id kept).
func TestEventsRetention(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := t0
		db.Now = func() time.Time { return now }
		var ids []yard.EventID
		for i := range 5 {
			now = t0.Add(time.Duration(i) * time.Hour)
			if err := db.CreateDog(ctx, &yard.Dog{Name: "d", Email: "d@example.org", Owner: alice.ID}); err != nil {
				t.Fatal(err)
			}
			id, _ := db.LastEventID(ctx)
			ids = append(ids, id)
		}
		n, err := db.PruneEvents(ctx, t0.Add(150*time.Minute), 1000) // the first three
		if err != nil || n != 3 {
			t.Fatalf("pruned %d, %v; want 3", n, err)
		}
		_, err = db.ReadEvents(ctx, yard.EventFilter{After: ids[0]})
		var e *yard.Error
		if yard.ErrorCode(err) != yard.EGONE || !errorAs(err, &e) || e.Oldest != ids[3].String() {
			t.Fatalf("resume before the horizon: got %v, want gone with oldest %s", err, ids[3])
		}
		// The same through each filter by owner (each its own SQL).
		for _, f := range []yard.EventFilter{{After: ids[0], Owner: &alice.ID}, {After: ids[1], Owners: []string{alice.ID, "nobody"}}} {
			if _, err := db.ReadEvents(ctx, f); yard.ErrorCode(err) != yard.EGONE {
				t.Fatalf("resume before the horizon, %+v: got %v, want gone", f, err)
			}
		}
		// Resuming at the newest pruned event misses nothing.
		p, err := db.ReadEvents(ctx, yard.EventFilter{After: ids[2]})
		if err != nil || len(p.Events) != 2 || p.Events[0].ID != ids[3] {
			t.Fatalf("resume at the horizon: %v %v", p, err)
		}
		// From the start: what is kept.
		p, err = db.ReadEvents(ctx, yard.EventFilter{})
		if err != nil || len(p.Events) != 2 {
			t.Fatalf("from the start: %v %v", p, err)
		}
	})
}

func errorAs(err error, e **yard.Error) bool {
	var ye *yard.Error
	ok := false
	if err != nil {
		ye, ok = err.(*yard.Error)
	}
	*e = ye
	return ok
}

// TestEventsOfAnImport: one car.imported per batch (its counts and id
// range), never one event per car; a refused batch leaves none.
func TestEventsOfAnImport(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		start, _ := db.LastEventID(ctx)
		car := func(id string) string {
			return `{"kind":"car","id":"` + id + `","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}` + "\n"
		}
		in := `{"kind":"garage","id":"g1","name":"North","state":"CA"}` + "\n" + car("c3") + car("c1") + car("c2") + car("c5") + car("c4")
		if _, err := db.ImportCars(ctx, strings.NewReader(in), 3); err != nil {
			t.Fatal(err)
		}
		evs := readAllEvents(t, db, start, nil)
		if len(evs) != 2 || evs[0].Type != yard.EventCarImported || evs[1].Type != yard.EventCarImported || evs[0].Owner != "" {
			t.Fatalf("events of an import of 6 lines in batches of 3: %q", eventTypes(evs))
		}
		var a, b yard.EventImport
		if json.Unmarshal(evs[0].Data, &a) != nil || json.Unmarshal(evs[1].Data, &b) != nil {
			t.Fatal("data")
		}
		if a != (yard.EventImport{Count: 2, First: "c1", Last: "c3", Garages: 1}) || b != (yard.EventImport{Count: 3, First: "c2", Last: "c5"}) {
			t.Fatalf("batches: %+v, %+v", a, b)
		}
		// A batch the database refuses (an unknown garage) writes no event.
		last := evs[1].ID
		if _, err := db.ImportCars(ctx, strings.NewReader(`{"kind":"car","id":"c9","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"nowhere"}`), 3); err == nil {
			t.Fatal("an import into an unknown garage succeeded")
		}
		if more := readAllEvents(t, db, last, nil); len(more) != 0 {
			t.Fatalf("a refused import wrote %q", eventTypes(more))
		}
	})
}

// TestReadEventsOfPeople: a read for a list of people (a hub's) keeps only
// their events, pages by Limit, and once caught up starts the next read
// past the other people's events; a later read gets what follows.
func TestReadEventsOfPeople(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice, bob, carol := mustUser(t, db, "alice"), mustUser(t, db, "bob"), mustUser(t, db, "carol")
		start, err := db.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, u := range []*yard.User{bob, alice, bob, carol, bob, alice, bob} {
			if err := db.CreateDog(ctx, &yard.Dog{Name: fmt.Sprint(i), Email: "d@example.org", Owner: u.ID}); err != nil {
				t.Fatal(err)
			}
		}
		people := []string{alice.ID, carol.ID}
		p, err := db.ReadEvents(ctx, yard.EventFilter{After: start, Owners: people, Limit: 2})
		if err != nil || len(p.Events) != 2 || p.Events[0].Owner != alice.ID || p.Events[1].Owner != carol.ID {
			t.Fatalf("first page: %v %v", eventTypes(p.Events), err)
		}
		if p.Next != p.Events[1].ID {
			t.Fatalf("a full page ends at its last event: %s, want %s", p.Next, p.Events[1].ID)
		}
		p, err = db.ReadEvents(ctx, yard.EventFilter{After: p.Next, Owners: people, Limit: 2})
		if err != nil || len(p.Events) != 1 || p.Events[0].Owner != alice.ID {
			t.Fatalf("second page: %v %v", eventTypes(p.Events), err)
		}
		last, _ := db.LastEventID(ctx)
		if p.Next.Less(last) {
			t.Fatalf("a caught-up read ends at %s, before bob's last event %s", p.Next, last)
		}
		empty, err := db.ReadEvents(ctx, yard.EventFilter{After: p.Next, Owners: people, Limit: 2})
		if err != nil || len(empty.Events) != 0 || empty.Next.Less(p.Next) {
			t.Fatalf("nothing new: %v, next %s after %s, %v", eventTypes(empty.Events), empty.Next, p.Next, err)
		}
		if err := db.CreateDog(ctx, &yard.Dog{Name: "later", Email: "d@example.org", Owner: carol.ID}); err != nil {
			t.Fatal(err)
		}
		p, err = db.ReadEvents(ctx, yard.EventFilter{After: empty.Next, Owners: people, Limit: 2})
		if err != nil || len(p.Events) != 1 || p.Events[0].Owner != carol.ID {
			t.Fatalf("after a new event: %v %v", eventTypes(p.Events), err)
		}
		// A long list (hashed on PostgreSQL: people who wrote nothing
		// beside alice and carol) reads what the short one read, page by
		// page.
		long := slices.Clone(people)
		for i := range 40 {
			long = append(long, fmt.Sprintf("nobody-%d", i))
		}
		for _, limit := range []int{1, 2, 10} {
			var short, hashed []string
			for _, list := range [][]string{people, long} {
				var ids []string
				for at := start; ; {
					page, err := db.ReadEvents(ctx, yard.EventFilter{After: at, Owners: list, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range page.Events {
						ids = append(ids, e.Owner+" "+e.ID.String())
					}
					if len(page.Events) == 0 {
						break
					}
					at = page.Next
				}
				short, hashed = hashed, ids
			}
			if len(short) != 4 || !slices.Equal(short, hashed) {
				t.Fatalf("pages of %d: %d people's events %q, %d people's %q", limit, len(people), short, len(long), hashed)
			}
		}
		// Nobody's list reads nothing, and still moves past everything.
		none, err := db.ReadEvents(ctx, yard.EventFilter{After: start, Owners: []string{}, Limit: 10})
		if err != nil || len(none.Events) != 0 || none.Next.Less(p.Events[0].ID) {
			t.Fatalf("an empty list: %v, next %s, %v", eventTypes(none.Events), none.Next, err)
		}
		// Far behind (more transactions than a read walks in the log's
		// order, ownersScanWindow, on SQLite; many windows of 16
		// transaction ids on PostgreSQL, read by a store handle that cuts
		// its reads so): the same answer through the owner index, and
		// window by window.
		win16 := storetest.OpenDSN(t, db.DSN(), store.WithEventWindow(16))
		from := p.Next
		for i := range 300 {
			owner := bob.ID
			if i == 150 {
				owner = alice.ID
			}
			if err := db.CreateDog(ctx, &yard.Dog{Name: "many", Email: "d@example.org", Owner: owner}); err != nil {
				t.Fatal(err)
			}
		}
		far, err := win16.ReadEvents(ctx, yard.EventFilter{After: from, Owners: people, Limit: 10})
		if err != nil || len(far.Events) != 1 || far.Events[0].Owner != alice.ID {
			t.Fatalf("far behind: %v %v", eventTypes(far.Events), err)
		}
		if last, _ := db.LastEventID(ctx); far.Next.Less(last) {
			t.Fatalf("a caught-up read from far behind ends at %s, before bob's last event %s", far.Next, last)
		}
		near, err := win16.ReadEvents(ctx, yard.EventFilter{After: far.Events[0].ID, Owners: people, Limit: 10})
		if err != nil || len(near.Events) != 0 || near.Next.Less(far.Next) {
			t.Fatalf("after alice's: %v, next %s, %v", eventTypes(near.Events), near.Next, err)
		}
		if db.Engine() != store.Postgres {
			return
		}
		if v, err := db.EventReaderSetting(ctx, "plan_cache_mode"); err != nil || v != "force_generic_plan" {
			t.Fatalf("the event reader's plan_cache_mode: %q, %v", v, err)
		}
		if v, err := db.EventReaderSetting(ctx, "enable_nestloop"); err != nil || v != "off" {
			t.Fatalf("the event reader's enable_nestloop: %q, %v", v, err)
		}
		// Windows of 2 transaction ids: one read stops after its last
		// window (maxEventWindows), and the next goes on from there.
		win2 := storetest.OpenDSN(t, db.DSN(), store.WithEventWindow(2))
		var got []*yard.Event
		reads := 0
		for at := from; ; reads++ {
			p, err := win2.ReadEvents(ctx, yard.EventFilter{After: at, Owners: people, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Events...)
			if p.Next == at || reads > 100 {
				break
			}
			at = p.Next
		}
		if len(got) != 1 || got[0].ID != far.Events[0].ID || reads < 2 {
			t.Fatalf("window by window: %v in %d reads", eventTypes(got), reads)
		}
		// A gap of transaction ids without events, longer than a read's
		// windows (a reader at the zero id on a database whose ids are in
		// the millions): one read crosses it to the next event.
		gapFrom, _ := db.LastEventID(ctx)
		if err := db.BurnTransactionIDs(ctx, 400); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateDog(ctx, &yard.Dog{Name: "after the gap", Email: "d@example.org", Owner: alice.ID}); err != nil {
			t.Fatal(err)
		}
		for _, at := range []yard.EventID{gapFrom, {}} {
			p, err := win2.ReadEvents(ctx, yard.EventFilter{After: at, Owners: []string{alice.ID}, Limit: 1})
			if err != nil || len(p.Events) != 1 || p.Events[0].Owner != alice.ID || (at.IsZero() && p.Events[0].Type != yard.EventDogCreated) {
				t.Fatalf("across a gap of 400 transaction ids from %s: %v %v", at, eventTypes(p.Events), err)
			}
		}
	})
}

// TestEventsOfABatchWithAFailedWrite: a group-commit batch whose first
// write appended an event and then failed (its savepoint rolled back, and
// on SQLite the event clock's bump with it) leaves no event of it, and the
// next write of the batch and the transactions after take fresh places in
// the order: the batch forgets the rolled-back transaction number.
func TestEventsOfABatchWithAFailedWrite(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		start, err := db.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		car := func(id string) *yard.Car {
			return &yard.Car{ID: id, Color: "red", Type: "van", Doors: 3, Make: "Kia", Model: "Rio", Year: 2020}
		}
		failed := fmt.Errorf("the write fails after its event")
		errs := db.RunBatch(
			func(tx *store.Tx) error {
				if err := store.CreateCarInTx(ctx, tx, car("undone")); err != nil {
					return err
				}
				return failed
			},
			func(tx *store.Tx) error { return store.CreateCarInTx(ctx, tx, car("kept")) },
		)
		if errs[0] != failed || errs[1] != nil {
			t.Fatalf("batch: %v", errs)
		}
		if err := db.CreateCar(ctx, car("after")); err != nil {
			t.Fatalf("the transaction after the batch: %v", err)
		}
		evs := readAllEvents(t, db, start, nil)
		got := eventTypes(evs)
		want := []string{"car.created " + yard.CarPath("kept"), "car.created " + yard.CarPath("after")}
		if !slices.Equal(got, want) {
			t.Fatalf("events: %q, want %q", got, want)
		}
		if !evs[0].ID.Less(evs[1].ID) || evs[0].ID.Tx == evs[1].ID.Tx {
			t.Fatalf("the batch's event %s and the next transaction's %s share a place", evs[0].ID, evs[1].ID)
		}
	})
}
