package auth

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/yard-api/yard"
)

// signatureBatcher records signed-request signatures with group commit:
// requests that arrive while a write is in flight are written together in
// the next one. Each caller still waits for its own row to be committed, so
// the answer is exactly as strict as one write per request (the store's
// primary key decides, across processes), at a fraction of the cost.
//
// Writers bounds the writes in flight: 1 suits SQLite (one writer anyway);
// PostgreSQL overlaps a couple of commits.
type signatureBatcher struct {
	store   yard.AuthStateService
	writers int

	mu       sync.Mutex
	pending  []*sigReq
	inflight int
}

type sigReq struct {
	sig     string
	expires time.Time
	fresh   bool
	err     error
	done    chan struct{}
}

const maxSignatureBatch = 256

// use records sig and reports whether it was new.
func (b *signatureBatcher) use(ctx context.Context, sig string, expires time.Time) (bool, error) {
	r := &sigReq{sig: sig, expires: expires, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	lead := b.inflight < max(b.writers, 1)
	if lead {
		b.inflight++
	}
	b.mu.Unlock()
	if lead {
		b.gather()
		b.flush()
	}
	select {
	case <-r.done:
		return r.fresh, r.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// gather lets requests that are already running join the next write: it
// yields while others keep arriving (at most a few times).
func (b *signatureBatcher) gather() {
	b.mu.Lock()
	n := len(b.pending)
	b.mu.Unlock()
	for range 8 {
		runtime.Gosched()
		b.mu.Lock()
		m := len(b.pending)
		b.mu.Unlock()
		if m == n {
			return
		}
		n = m
	}
}

// flush writes one batch, then hands what arrived meanwhile to a new
// goroutine, so that no caller keeps working for others.
func (b *signatureBatcher) flush() {
	b.mu.Lock()
	batch := b.pending
	if len(batch) > maxSignatureBatch {
		batch = batch[:maxSignatureBatch]
	}
	b.pending = b.pending[len(batch):]
	b.mu.Unlock()

	if len(batch) > 0 {
		// A signature twice in one batch: the first one counts.
		seen := make(map[string]bool, len(batch))
		sigs := make([]string, 0, len(batch))
		exps := make([]time.Time, 0, len(batch))
		for _, r := range batch {
			if !seen[r.sig] {
				seen[r.sig] = true
				sigs = append(sigs, r.sig)
				exps = append(exps, r.expires)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fresh, err := b.store.UseSignatures(ctx, sigs, exps)
		cancel()
		for _, r := range batch {
			r.err = err
			if err == nil && fresh[r.sig] {
				r.fresh = true
				delete(fresh, r.sig)
			}
			close(r.done)
		}
	}

	b.mu.Lock()
	if len(b.pending) == 0 {
		b.inflight--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go func() { // those that arrived during this write, and any right behind them
		b.gather()
		b.flush()
	}()
}
