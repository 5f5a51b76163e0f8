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
