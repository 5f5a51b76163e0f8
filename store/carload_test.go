package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestFindCarByIDConcurrent reads cars by id from many goroutines at once,
// so that on PostgreSQL they share batch queries: each caller gets its own
// car (the same car asked twice included), a missing car is ENOTFOUND for
// its caller only, a caller that gives up gets its context's error without
// failing the others, and a write is seen by every read that starts after
// it. With batching off the answers are the same.
func TestFindCarByIDConcurrent(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		loadFixture(t, db)
		for _, batching := range []bool{true, false} {
			t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
				db := storetest.OpenDSN(t, db.DSN(), store.WithCarReadBatching(batching))
				ctx := context.Background()
				ids := []string{"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c01", "nope", "c05", ""}
				var wg sync.WaitGroup
				errs := make(chan error, 64*len(ids))
				cars := make(chan *yard.Car, 64*len(ids))
				for range 64 {
					for _, id := range ids {
						wg.Go(func() {
							c, err := db.FindCarByID(ctx, id)
							switch {
							case id == "nope" || id == "":
								if yard.ErrorCode(err) != yard.ENOTFOUND {
									errs <- fmt.Errorf("car %q: err %v, want ENOTFOUND", id, err)
								}
							case err != nil:
								errs <- fmt.Errorf("car %q: %v", id, err)
							case c.ID != id:
								errs <- fmt.Errorf("asked for car %q, got %q", id, c.ID)
							default:
								cars <- c
							}
						})
					}
				}
				// Callers that gave up before asking, mixed into the load.
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				for range 16 {
					wg.Go(func() {
						if _, err := db.FindCarByID(cancelled, "c01"); !errors.Is(err, context.Canceled) {
							errs <- fmt.Errorf("cancelled read: err %v, want context.Canceled", err)
						}
					})
				}
				wg.Wait()
				close(errs)
				close(cars)
				for err := range errs {
					t.Error(err)
				}
				// No two callers share one value: changing one answer
				// changes no other.
				seen := map[*yard.Car]bool{}
				n := 0
				for c := range cars {
					if seen[c] {
						t.Fatalf("two callers got the same *Car for %s", c.ID)
					}
					seen[c] = true
					n++
				}
				if want := 64 * 10; n != want {
					t.Errorf("%d cars read, want %d", n, want)
				}
			})
		}

		// Read after write: a change committed before a read starts is in
		// its answer, under concurrent load.
		ctx := context.Background()
		for i := range 20 {
			color := fmt.Sprintf("shade-%d", i)
			if _, err := db.UpdateCar(ctx, "c03", yard.CarUpdate{Color: &color}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					c, err := db.FindCarByID(ctx, "c03")
					if err != nil || c.Color != color {
						t.Errorf("read after write %d: %+v, %v; want color %s", i, c, err, color)
					}
				})
			}
			wg.Wait()
		}
	})
}
