package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyDeadline is a request's store wait (Deps.StoreWait): a context whose
// deadline is known at once but whose timer is armed only when something
// waits on it. context.WithTimeout arms a runtime timer for every request
// and stops it at the end, which took 2% of a car page's CPU
// (docs/benchmarks.md, "The request path, lighter"); most reads never wait
// on their context (the car search index answers from memory), and those
// that do (database/sql, pgx, a gate's queue) call Done, which arms the
// same deadline then. Value is the parent's.
type lazyDeadline struct {
	context.Context // the parent
	deadline        time.Time

	once    sync.Once
	isArmed atomic.Bool // armed and cancel are set
	armed   context.Context
	cancel  context.CancelFunc
}

// withLazyDeadline returns a context ending at the earlier of the parent's
// end and now+d, and the function that releases it (as a CancelFunc does).
func withLazyDeadline(parent context.Context, d time.Duration) (context.Context, func()) {
	c := &lazyDeadline{Context: parent, deadline: time.Now().Add(d)}
	return c, c.release
}

func (c *lazyDeadline) arm() {
	c.once.Do(func() {
		c.armed, c.cancel = context.WithDeadline(c.Context, c.deadline)
		c.isArmed.Store(true)
	})
}

// release ends the context as a CancelFunc would; before Done was called
// there is nothing to stop, and a later Done answers a closed channel.
func (c *lazyDeadline) release() {
	c.once.Do(func() {
		c.armed, c.cancel = canceled, func() {}
		c.isArmed.Store(true)
	})
	c.cancel()
}

// canceled is what a lazyDeadline released before anything waited on it
// answers Done and Err with.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (c *lazyDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// AfterFunc runs f when the context ends, as context.AfterFunc does. The
// context package asks it of a parent that is not one of its own: without
// it, each context derived from this one (database/sql and pgx derive one
// for every statement) would start a goroutine to wait on Done. With it,
// the derived context hangs on the armed one, as on a context.WithDeadline.
func (c *lazyDeadline) AfterFunc(f func()) (stop func() bool) {
	c.arm()
	return context.AfterFunc(c.armed, f)
}

func (c *lazyDeadline) Done() <-chan struct{} {
	c.arm()
	return c.armed.Done()
}

// Err follows Done: once the deadline has passed (or the parent ended), Err
// is not nil and Done is closed.
func (c *lazyDeadline) Err() error {
	if !c.isArmed.Load() {
		if c.Context.Err() == nil && time.Now().Before(c.deadline) {
			return nil
		}
		// A parent that ended, or a deadline passed, ends the armed
		// context at once (context.WithDeadline).
		c.arm()
	}
	return c.armed.Err()
}
