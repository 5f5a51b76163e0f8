package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestCarReadLease: on PostgreSQL a process that holds a read lease
// answers "did cars change?" without a query while nothing is written, and
// a write through another store (another process), answered, is never
// missed: the writer waits for the lease holder's acknowledgement, for a
// lease that is never acknowledged until it ends, and a holder whose
// listening connection fails asks the store again.
func TestCarReadLease(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	a, b := storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)
	lctx, stop := context.WithCancel(ctx)
	held := make(chan struct{})
	go func() { defer close(held); a.HoldCarLease(lctx, time.Second, nil) }()
	t.Cleanup(func() { stop(); <-held })

	_, at := readCarIDs(t, a, yard.CarPosition{})
	// settle probes until the lease is live and a probe found nothing.
	settle := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !a.CarsQuietSince(at) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no quiet read within 10 s", what)
			}
			changed, err := a.CarsChangedSince(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			if changed {
				_, at = readCarIDs(t, a, at)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settle("a new lease")
	if _, hits, _ := a.CarLease(); hits == 0 {
		t.Fatal("no read answered without asking")
	}
	n := 0
	write := func(db *store.DB) time.Duration {
		t.Helper()
		n++
		c := &yard.Car{ID: "car-l" + string(rune('a'+n)), Color: "red", Type: "sedan", Doors: 4, Make: "Ford", Model: "Focus", Year: 2010}
		start := time.Now()
		if err := db.CreateCar(ctx, c); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	seen := func(what string) {
		t.Helper()
		if a.CarsQuietSince(at) {
			t.Fatalf("%s: a quiet read after the write was answered", what)
		}
		if changed, err := a.CarsChangedSince(ctx, at); err != nil || !changed {
			t.Fatalf("%s: changed %v (%v), want true", what, changed, err)
		}
	}
	for i := range 20 {
		settle("before a write")
		if d := write(b); d > 500*time.Millisecond {
			t.Fatalf("write %d through the other store took %v: the holder's acknowledgement did not come", i, d)
		}
		seen("a write through the other store")
	}
	settle("before a write of its own")
	write(a)
	seen("a write of its own")

	// A lease nobody acknowledges (a process gone, its row live): the
	// writer waits until it ends, then answers.
	if err := b.Exec(ctx, `INSERT INTO car_readers (id, expires_ms, started)
		VALUES ('gone', (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 700, '1:1:')`); err != nil {
		t.Fatal(err)
	}
	settle("beside a lease that is not acknowledged")
	if d := write(b); d < 400*time.Millisecond || d > 3*time.Second {
		t.Fatalf("a write beside a lease that is never acknowledged took %v, want about 0.7 s", d)
	}
	seen("a write beside a lease that is not acknowledged")
	if d := write(b); d > 500*time.Millisecond {
		t.Fatalf("a write after the lease ended took %v", d)
	}

	// The holder's listening connection fails: it asks the store at once,
	// and takes a lease again.
	settle("before the listener fails")
	_, _, pid := a.CarLease()
	if err := b.Exec(ctx, `SELECT pg_terminate_backend($1)`, int64(pid)); err != nil {
		t.Fatal(err)
	}
	write(b)
	seen("a write after the listener failed")
	settle("after the listener came back")
	if _, _, again := a.CarLease(); again == pid {
		t.Fatal("the listener's connection did not change")
	}
	write(b)
	seen("a write after the listener came back")
}

// TestSnapshotFinished: a transaction had finished in a snapshot below its
// xmin, and below its xmax when not among those running (xip).
func TestSnapshotFinished(t *testing.T) {
	for _, c := range []struct {
		snap string
		xid  int64
		want bool
	}{
		{"10:20:12,15", 5, true},
		{"10:20:12,15", 10, true},
		{"10:20:12,15", 12, false},
		{"10:20:12,15", 13, true},
		{"10:20:12,15", 15, false},
		{"10:20:12,15", 19, true},
		{"10:20:12,15", 20, false},
		{"10:20:12,15", 120, false},
		{"851:851:", 850, true},
		{"851:851:", 851, false},
		{"garbage", 1, false},
		{"10:20:12,x", 13, false},
	} {
		if got := store.SnapshotFinished(c.snap, c.xid); got != c.want {
			t.Errorf("snapshot %s, transaction %d: finished %v, want %v", c.snap, c.xid, got, c.want)
		}
	}
}

// TestCarLeaseBeginsBesideARunningWrite: a car write that read the leases
// before a lease's row was there is not announced to it; the lease takes
// every transaction running when it began as pending, so that write, once
// committed, is not missed by its reads without asking.
func TestCarLeaseBeginsBesideARunningWrite(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	a := storetest.OpenDSN(t, dsn)
	_, at := readCarIDs(t, a, yard.CarPosition{})
	// The write: a transaction on its own connection, as one that read no
	// lease (or an older release) leaves it, uncommitted.
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO cars (id, color, color_key, type, type_key, doors, make, make_key, model,
		model_key, year, created_at, updated_at, changed_version)
		VALUES ('running', 'red', 'red', 'van', 'van', 3, 'Kia', 'kia', 'Rio', 'rio', 2020, 1, 1, pg_current_xact_id()::text::bigint)`); err != nil {
		t.Fatal(err)
	}

	lctx, stop := context.WithCancel(ctx)
	held := make(chan struct{})
	go func() { defer close(held); a.HoldCarLease(lctx, time.Second, nil) }()
	t.Cleanup(func() { stop(); <-held })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if live, _, _ := a.CarLease(); live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no lease within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Probes find nothing while the write runs, and reads still ask.
	for range 5 {
		if changed, err := a.CarsChangedSince(ctx, at); err != nil || changed {
			t.Fatalf("before the commit: changed %v (%v), want false", changed, err)
		}
		if a.CarsQuietSince(at) {
			t.Fatal("a read without asking while a write that was not announced runs")
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if a.CarsQuietSince(at) {
		t.Fatal("a read without asking after a write that was not announced committed")
	}
	if changed, err := a.CarsChangedSince(ctx, at); err != nil || !changed {
		t.Fatalf("after the commit: changed %v (%v), want true", changed, err)
	}
	// The probe that found the write took it off the pending ones; the
	// earlier probes at the same position, which found nothing, no longer
	// count: a read there still asks (until the index moves on).
	if a.CarsQuietSince(at) {
		t.Fatal("a read without asking at the position a probe found changed")
	}
}
