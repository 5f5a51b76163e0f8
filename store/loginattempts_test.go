package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestLoginAttempts: reservations for a key stop at the limit even when
// they race on two handles of one store (two processes), a released one
// frees its place, and attempts leave the window.
func TestLoginAttempts(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, engine)
			var dbs []*store.DB
			for range 2 {
				db := storetest.OpenDSN(t, dsn)
				dbs = append(dbs, db)
			}
			now := time.UnixMilli(1_800_000_000_000)
			since := now.Add(-time.Minute)
			keys := []string{"user:bob", "ip:192.0.2.1"}

			var ok atomic.Int32
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Go(func() {
					got, _, err := dbs[i%2].ReserveLoginAttempt(ctx, fmt.Sprint("a", i), keys, now, since, 10)
					if err != nil {
						t.Error(err)
					} else if got {
						ok.Add(1)
					}
				})
			}
			wg.Wait()
			if ok.Load() != 10 {
				t.Fatalf("%d of 40 racing reservations accepted, want 10", ok.Load())
			}
			got, oldest, err := dbs[0].ReserveLoginAttempt(ctx, "late", keys, now.Add(time.Second), since.Add(time.Second), 10)
			if err != nil || got || !oldest.Equal(now) {
				t.Fatalf("over the limit: %v %v %v, want refused, oldest %v", got, oldest, err, now)
			}
			// Another key of the same attempt shape is not affected.
			if got, _, err := dbs[1].ReserveLoginAttempt(ctx, "other", []string{"user:carol", "ip:192.0.2.9"}, now, since, 10); err != nil || !got {
				t.Fatalf("another key: %v %v", got, err)
			}
			// Releasing every accepted attempt frees the places.
			for i := range 40 {
				if err := dbs[i%2].ReleaseLoginAttempt(ctx, fmt.Sprint("a", i), keys); err != nil {
					t.Fatal(err)
				}
			}
			if got, _, err := dbs[1].ReserveLoginAttempt(ctx, "after release", keys, now, since, 10); err != nil || !got {
				t.Fatalf("after release: %v %v", got, err)
			}
			// Attempts leave the window; the purge deletes them.
			for i := range 9 {
				_, _, _ = dbs[0].ReserveLoginAttempt(ctx, fmt.Sprint("b", i), keys, now, since, 10)
			}
			if got, _, _ := dbs[0].ReserveLoginAttempt(ctx, "full", keys, now, since, 10); got {
				t.Fatal("the eleventh attempt was accepted")
			}
			later := now.Add(time.Minute)
			if got, _, err := dbs[0].ReserveLoginAttempt(ctx, "next minute", keys, later, later.Add(-time.Minute), 10); err != nil || !got {
				t.Fatalf("a minute later: %v %v", got, err)
			}
			if err := dbs[1].PurgeLoginAttempts(ctx, later); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := dbs[0].Read().QueryRow(`SELECT COUNT(*) FROM login_attempts`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("after the purge %d attempts remain (%v)", n, err)
			}
		})
	}
}
