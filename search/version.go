package search

import (
	"context"
	"sync"
	"time"
)

// versionReads shares reads of the car version among concurrent queries.
// A query never joins a read already running: it waits for the next one,
// which starts after the query arrived, so the version it gets is at
// least the one of every write answered before the query started. One
// read runs at a time; under load every read serves all the queries that
// arrived while the one before ran (the pattern of the store's batched
// car reads, store/carload.go).
type versionReads struct {
	mu      sync.Mutex
	next    *versionCall // the read the queries arriving now will share
	running bool
}

type versionCall struct {
	done chan struct{}
	v    int64
	err  error
}

// versionReadTimeout bounds one shared read, which no caller's context
// does (a caller that gives up must not fail the others).
const versionReadTimeout = 10 * time.Second

// read returns a car version read by a query that started after the call.
func (vr *versionReads) read(ctx context.Context, fn func(context.Context) (int64, error)) (int64, error) {
	vr.mu.Lock()
	if vr.next == nil {
		vr.next = &versionCall{done: make(chan struct{})}
	}
	c := vr.next
	if !vr.running {
		vr.running = true
		go vr.loop(fn)
	}
	vr.mu.Unlock()
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// loop runs the pending read until none is pending.
func (vr *versionReads) loop(fn func(context.Context) (int64, error)) {
	for {
		vr.mu.Lock()
		c := vr.next
		vr.next = nil
		if c == nil {
			vr.running = false
			vr.mu.Unlock()
			return
		}
		vr.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), versionReadTimeout)
		c.v, c.err = fn(ctx)
		cancel()
		close(c.done)
	}
}
