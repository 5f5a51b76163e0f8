package store

import (
	"context"
	"sync"
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

type batchReq struct {
	ctx  context.Context
	fn   func(tx *Tx) error
	done chan error
}

type batcher struct {
	mu      sync.Mutex
	queue   []*batchReq
	running bool
}

// maxBatch bounds the writes committed together, per engine.
func (db *DB) maxBatch() int {
	if db.engine == Postgres {
		return 48
	}
	return 256
}

type batchKey struct {
	db  *DB
	key string
}

var batchers sync.Map // batchKey -> *batcher

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
	k := batchKey{db, key}
	v, _ := batchers.LoadOrStore(k, &batcher{})
	b := v.(*batcher)
	req := &batchReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, req)
	if !b.running {
		b.running = true
		go b.drain(db, k)
	}
	b.mu.Unlock()
	return <-req.done
}

func (b *batcher) drain(db *DB, k batchKey) {
	for {
		b.mu.Lock()
		n := min(len(b.queue), db.maxBatch())
		if n == 0 {
			b.running = false
			// Forget the idle batcher. A caller that loaded it before
			// still runs it (it restarts draining); it is merely unshared.
			batchers.CompareAndDelete(k, b)
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		db.runBatch(batch)
	}
}

func (db *DB) runBatch(batch []*batchReq) {
	if len(batch) == 1 {
		// Alone: no savepoint needed.
		r := batch[0]
		r.done <- db.WithTx(r.ctx, r.fn)
		return
	}
	errs := make([]error, len(batch))
	err := db.WithTx(context.Background(), func(tx *Tx) error {
		for i, r := range batch {
			if err := r.ctx.Err(); err != nil {
				errs[i] = err
				continue
			}
			const sp = "batch_item" // released before the next one starts
			if _, err := tx.ExecContext(r.ctx, "SAVEPOINT "+sp); err != nil {
				return err
			}
			if errs[i] = r.fn(tx); errs[i] != nil {
				if _, err := tx.ExecContext(context.Background(), "ROLLBACK TO SAVEPOINT "+sp); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(context.Background(), "RELEASE SAVEPOINT "+sp); err != nil {
				return err
			}
		}
		return nil
	})
	for i, r := range batch {
		if errs[i] == nil {
			errs[i] = err
		}
		r.done <- errs[i]
	}
}
