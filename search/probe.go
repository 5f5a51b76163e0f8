package search

import (
	"context"
	"sync"
	"time"
)

// changeProbes shares the store's answer to "did cars change since the
// index's position?" (store.DB.CarsChangedSince) among concurrent queries.
// A query never joins a probe already running: it waits for the next one,
// which starts after the query arrived, so the answer covers every write
// answered before the query started. One
// probe runs at a time; under load every probe serves all the queries that
// arrived while the one before ran (the pattern of the store's batched
// car reads, store/carload.go).
type changeProbes struct {
	mu      sync.Mutex
	next    *probeCall // the read the queries arriving now will share
	running bool
	// started is when the last probe began: written by the one loop
	// running (loops follow one another through mu), read by the probe.
	started time.Time
}

type probeCall struct {
	done    chan struct{}
	changed bool
	err     error
}

// probeTimeout bounds one shared probe, which no caller's context
// does (a caller that gives up must not fail the others).
const probeTimeout = 10 * time.Second

// probeGap is the least time from one probe's start to the next one's. A
// probe takes about as long as the requests arriving during it (a round
// trip to PostgreSQL), so back to back each probe would serve one or two;
// held apart by a fifth of a millisecond, a probe serves what arrived
// during the gap too, and a busy server sends a few thousand probes a
// second instead of one per request. A probe after a quiet spell starts at
// once.
const probeGap = 200 * time.Microsecond

// read returns the answer of a probe that started after the call.
func (vr *changeProbes) read(ctx context.Context, fn func(context.Context) (bool, error)) (bool, error) {
	vr.mu.Lock()
	if vr.next == nil {
		vr.next = &probeCall{done: make(chan struct{})}
	}
	c := vr.next
	if !vr.running {
		vr.running = true
		go vr.loop(fn)
	}
	vr.mu.Unlock()
	select {
	case <-c.done:
		return c.changed, c.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// loop runs the pending probe until none is pending.
func (vr *changeProbes) loop(fn func(context.Context) (bool, error)) {
	for {
		if wait := probeGap - time.Since(vr.started); wait > 0 {
			time.Sleep(wait)
		}
		vr.mu.Lock()
		c := vr.next
		vr.next = nil
		if c == nil {
			vr.running = false
			vr.mu.Unlock()
			return
		}
		vr.mu.Unlock()
		vr.started = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		c.changed, c.err = fn(ctx)
		cancel()
		close(c.done)
	}
}
