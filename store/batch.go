package store

import (
	"context"

	"github.com/yard-api/yard/internal/batch"
)

// Group commit. SQLite has one writer, so small write transactions queue
// behind each other and each pays its own BEGIN and COMMIT. WithBatchTx
// runs such writes from concurrent callers together in one transaction,
// each inside its own savepoint, so one caller's error undoes only its own
// writes. Nothing waits to fill a batch: a batch is whatever queued while
// the previous one committed, so an idle store adds no latency.
// PostgreSQL has many writers, but writes to one hot row (a dog's
// barkCount) queue on its row lock, one commit (and WAL flush) each; there
// writes are batched per key (the dog), so different dogs still write in
// parallel, and a batch holds at most 48 savepoints, under the 64
// subtransactions a backend caches. A write without a key is not batched.

// batchWrite is one caller's write: fn runs under the caller's ctx.
type batchWrite struct {
	ctx context.Context
	fn  func(tx *Tx) error
}

type writeQueue = batch.Queue[batchWrite, struct{}]

// WithBatchTx runs fn in a write transaction that it may share with other
// concurrent callers: all of them on SQLite, those with the same key on
// PostgreSQL. fn must only use tx; its writes commit when WithBatchTx
// returns nil and are undone when fn returns an error.
func (db *DB) WithBatchTx(ctx context.Context, key string, fn func(tx *Tx) error) error {
	if db.engine == SQLite {
		key = ""
	} else if key == "" {
		return db.WithTx(ctx, fn)
	}
	v, ok := db.batchers.Load(key)
	if !ok {
		// Max bounds the writes committed together, per engine.
		q := &writeQueue{Flights: 1, Max: 256, Run: db.runBatch}
		if db.engine == Postgres {
			q.Max = 48
		}
		// Forget the idle queue. A caller that loaded it before still
		// runs it (it starts draining again); it is merely unshared.
		q.Idle = func() { db.batchers.CompareAndDelete(key, q) }
		v, _ = db.batchers.LoadOrStore(key, q)
	}
	// fn uses the caller's variables: wait for it to have run, whatever
	// ctx does (a canceled ctx skips or stops fn itself).
	_, err := v.(*writeQueue).Do(context.Background(), batchWrite{ctx, fn})
	return err
}

func (db *DB) runBatch(writes []batchWrite, res []batch.Result[struct{}]) {
	if len(writes) == 1 {
		// Alone: no savepoint needed.
		r := writes[0]
		res[0].Err = db.WithTx(r.ctx, r.fn)
		return
	}
	err := db.WithTx(context.Background(), func(tx *Tx) error {
		for i, r := range writes {
			if err := r.ctx.Err(); err != nil {
				res[i].Err = err
				continue
			}
			const sp = "batch_item" // released before the next one starts
			if _, err := tx.ExecContext(r.ctx, "SAVEPOINT "+sp); err != nil {
				return err
			}
			evTx, dirty := tx.evTx, len(tx.dirtyDogs)
			if res[i].Err = r.fn(tx); res[i].Err != nil {
				if _, err := tx.ExecContext(context.Background(), "ROLLBACK TO SAVEPOINT "+sp); err != nil {
					return err
				}
				// The rollback undid this write's events (and on
				// SQLite its bump of the event clock).
				tx.evTx, tx.dirtyDogs = evTx, tx.dirtyDogs[:dirty]
			}
			if _, err := tx.ExecContext(context.Background(), "RELEASE SAVEPOINT "+sp); err != nil {
				return err
			}
		}
		return nil
	})
	for i := range res {
		if res[i].Err == nil {
			res[i].Err = err
		}
	}
}
