package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// Concurrent batched writes commit together; a failing one undoes only its
// own writes.
func TestWithBatchTx(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		owner := &yard.User{Name: "alice", Roles: []string{yard.RoleUser}}
		if err := db.CreateUser(ctx, owner, nil); err != nil {
			t.Fatal(err)
		}
		dog := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: owner.ID}
		if err := db.CreateDog(ctx, dog); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		var wg sync.WaitGroup
		errs := make([]error, 200)
		for i := range 200 {
			wg.Go(func() {
				errs[i] = db.WithBatchTx(ctx, dog.ID, func(tx *store.Tx) error {
					if _, err := tx.ExecContext(ctx, `UPDATE dogs SET bark_count = bark_count + 1 WHERE id = $1`, dog.ID); err != nil {
						return err
					}
					if i%3 == 0 {
						return boom
					}
					return nil
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if (i%3 == 0) != errors.Is(err, boom) {
				t.Fatalf("write %d: got %v", i, err)
			}
		}
		d, _ := db.FindDogByID(ctx, dog.ID)
		if want := int64(200 - 67); d.BarkCount != want {
			t.Fatalf("barkCount: got %d, want %d", d.BarkCount, want)
		}
	})
}
