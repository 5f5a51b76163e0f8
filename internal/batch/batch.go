// Package batch gathers concurrent requests into batches that one function
// answers together: the shape shared by the store's group commit
// (store/batch.go), its batched car reads (store/carload.go) and the
// signature log of signed requests (auth/replay.go).
//
// Nothing waits to fill a batch: a batch is whatever queued while the
// earlier ones ran, so an idle queue adds no latency and a busy one answers
// many requests at the cost of one. Every batch starts after each of its
// requests arrived, so it sees whatever its callers did before asking.
// A batch belongs to no one caller: one that gives up gets its context's
// error at once, and the batch still runs for the others.
package batch

import (
	"context"
	"runtime"
	"sync"
)

// Result is the answer to one request.
type Result[R any] struct {
	Val R
	Err error
}

// Queue batches the concurrent calls of Do. Its fields are set before the
// first call and not changed after.
type Queue[T, R any] struct {
	// Run answers one batch: res[i] is the answer to items[i]. It is
	// given no caller's context; it bounds its own work.
	Run func(items []T, res []Result[R])
	// Flights is how many batches run at once (at least 1).
	Flights int
	// Max bounds the requests of one batch; 0 leaves them unbounded.
	Max int
	// Gather lets requests of callers that are already running join a
	// batch about to start: the queue yields the processor while
	// requests keep arriving, a few times at most. Without it a batch
	// starts with what is queued.
	Gather bool
	// Idle, when set, is called when the last batch in flight has ended
	// and nothing is queued, with the queue's lock held: it may forget
	// the queue, but must not call Do.
	Idle func()

	mu       sync.Mutex
	queue    []*request[T, R]
	inflight int
}

type request[T, R any] struct {
	item T
	res  Result[R]
	done chan struct{}
}

// Do queues item and returns its answer. When ctx ends first, Do returns
// ctx's error and the answer is dropped; the batch runs regardless. A
// caller whose item refers to its own memory (a function over its
// variables) must wait for its answer: it passes a context that does not
// end.
func (q *Queue[T, R]) Do(ctx context.Context, item T) (R, error) {
	req := &request[T, R]{item: item, done: make(chan struct{})}
	q.mu.Lock()
	q.queue = append(q.queue, req)
	if q.inflight < max(q.Flights, 1) {
		q.inflight++
		go q.drain()
	}
	q.mu.Unlock()
	select {
	case <-req.done:
		return req.res.Val, req.res.Err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// drain runs batches from the queue until it is empty.
func (q *Queue[T, R]) drain() {
	for {
		if q.Gather {
			q.gather()
		}
		q.mu.Lock()
		n := len(q.queue)
		if q.Max > 0 {
			n = min(n, q.Max)
		}
		if n == 0 {
			q.inflight--
			if q.inflight == 0 && q.Idle != nil {
				q.Idle()
			}
			q.mu.Unlock()
			return
		}
		batch := q.queue[:n:n]
		q.queue = q.queue[n:]
		if len(q.queue) == 0 {
			q.queue = nil // let the backing array go
		}
		q.mu.Unlock()
		q.run(batch)
	}
}

// run answers one batch and wakes its callers.
func (q *Queue[T, R]) run(batch []*request[T, R]) {
	items := make([]T, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	res := make([]Result[R], len(batch))
	q.Run(items, res)
	for i, r := range batch {
		r.res = res[i]
		close(r.done)
	}
}

// gather yields while requests keep arriving (at most 8 times), so that
// callers already running join the batch about to start.
func (q *Queue[T, R]) gather() {
	n := q.pending()
	for range 8 {
		runtime.Gosched()
		m := q.pending()
		if m == n {
			return
		}
		n = m
	}
}

func (q *Queue[T, R]) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}
