package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// readCarIDs reads the car changes after since and returns the ids of the
// cars written and the new position.
func readCarIDs(t *testing.T, db *store.DB, since yard.CarPosition) ([]string, yard.CarPosition) {
	t.Helper()
	var ids []string
	at, err := db.ReadCarChanges(context.Background(), since, yard.CarChangeHandler{
		Garage: func(*yard.Garage) {}, Car: func(c *yard.Car) { ids = append(ids, c.ID) },
		CarDeleted: func(string) {}, GarageDeleted: func(string) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids, at
}

// TestCarChangesBehindARunningTransaction: on PostgreSQL transaction ids
// are not in commit order. A reader sees a write committed while an older
// transaction still runs (a write answered before a query is in it), does
// not read it again, and reads the older transaction's write once it
// commits: nothing is missed, nothing is read twice.
func TestCarChangesBehindARunningTransaction(t *testing.T) {
	db := storetest.Open(t, store.Postgres)
	ctx := context.Background()
	newCar := func(id string) *yard.Car {
		return &yard.Car{ID: id, Color: "red", Type: "van", Doors: 3, Make: "Kia", Model: "Rio", Year: 2020}
	}
	if err := db.CreateCar(ctx, newCar("first")); err != nil {
		t.Fatal(err)
	}
	ids, p0 := readCarIDs(t, db, yard.CarPosition{})
	if !slices.Equal(ids, []string{"first"}) {
		t.Fatalf("first read: %q", ids)
	}

	// Transaction A takes its id and writes "older", then waits.
	written, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.WithTx(ctx, func(tx *store.Tx) error {
			if err := store.CreateCarInTx(ctx, tx, newCar("older")); err != nil {
				return err
			}
			close(written)
			<-release
			return nil
		})
	}()
	select {
	case <-written:
	case err := <-done:
		t.Fatal(err)
	}
	// B, younger, commits first.
	if err := db.CreateCar(ctx, newCar("younger")); err != nil {
		t.Fatal(err)
	}
	if moved, err := db.CarsChangedSince(ctx, p0); err != nil || !moved {
		t.Fatalf("changed after B: %v, %v", moved, err)
	}
	ids, p1 := readCarIDs(t, db, p0)
	if !slices.Equal(ids, []string{"younger"}) {
		t.Fatalf("read while A runs: %q, want [younger]", ids)
	}
	if moved, err := db.CarsChangedSince(ctx, p1); err != nil || moved {
		t.Fatalf("changed with nothing new committed: %v, %v", moved, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if moved, err := db.CarsChangedSince(ctx, p1); err != nil || !moved {
		t.Fatalf("changed after A committed: %v, %v", moved, err)
	}
	ids, p2 := readCarIDs(t, db, p1)
	if !slices.Equal(ids, []string{"older"}) {
		t.Fatalf("read after A committed: %q, want [older]", ids)
	}
	if ids, _ := readCarIDs(t, db, p2); len(ids) != 0 {
		t.Fatalf("read with nothing new: %q", ids)
	}
}

// TestCarsChangedSinceAcrossStores: the change probe sees a write made
// through another store on the same database (another process) and one
// made through its own, right after probes that found nothing (on SQLite
// those are answered from PRAGMA data_version while nothing commits).
func TestCarsChangedSinceAcrossStores(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, engine)
			var dbs [2]*store.DB
			for i := range dbs {
				db := storetest.OpenDSN(t, dsn)
				dbs[i] = db
			}
			a := dbs[0]
			probe := func(at yard.CarPosition, want bool, what string) {
				t.Helper()
				if quiet := a.CarsQuietSince(at); quiet && want {
					t.Fatalf("%s: quiet before the probe, want a change", what)
				}
				_, ran := a.QuietProbe()
				for range 3 { // the first may run the statement, the others not
					if changed, err := a.CarsChangedSince(ctx, at); err != nil || changed != want {
						t.Fatalf("%s: changed %v (%v), want %v", what, changed, err, want)
					}
				}
				if mapped, now := a.QuietProbe(); engine == store.SQLite && (!mapped || !want && now-ran != 1) {
					t.Fatalf("%s: WAL index mapped %v, %d statements for 3 probes of a quiet store, want 1", what, mapped, now-ran)
				}
				if quiet := a.CarsQuietSince(at); quiet != (engine == store.SQLite && !want) {
					t.Fatalf("%s: quiet %v after the probes", what, quiet)
				}
			}
			_, at := readCarIDs(t, a, yard.CarPosition{})
			probe(at, false, "an empty store")
			for i, db := range []*store.DB{dbs[1], a, dbs[1]} {
				c := &yard.Car{ID: "car-q" + string(rune('a'+i)), Color: "red", Type: "sedan", Doors: 4, Make: "Ford", Model: "Focus", Year: 2010}
				if err := db.CreateCar(ctx, c); err != nil {
					t.Fatal(err)
				}
				probe(at, true, "after a write through store "+string(rune('0'+i)))
				var ids []string
				ids, at = readCarIDs(t, a, at)
				if !slices.Equal(ids, []string{c.ID}) {
					t.Fatalf("read %v, want %s", ids, c.ID)
				}
				probe(at, false, "after reading the write")
			}
			// A position older than the quiet one still sees what came
			// after it (SQLite's positions are a number alone).
			if engine != store.SQLite {
				return
			}
			if changed, err := a.CarsChangedSince(ctx, yard.CarPosition{Horizon: 1}); err != nil || !changed {
				t.Fatalf("from an early position: %v %v", changed, err)
			}
		})
	}
}
