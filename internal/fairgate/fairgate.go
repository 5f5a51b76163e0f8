// Package fairgate bounds how much of one kind of work a process does at
// once, and shares the waiting among clients in turn, so that one client
// that sends many requests at once cannot starve the others
// (docs/operations.md, "Fair shares").
//
// A Gate has a fixed number of slots. While a slot is free a request takes
// it at once. When all are taken, requests wait in one line per client, and
// each slot that frees goes to the client served longest ago (one never
// served first; first come first served within a client): a client that
// holds every slot and has a hundred requests waiting does not keep a
// client with one request waiting behind them, which gets the next slot.
// A client may keep only so many requests waiting (past it: ErrClientBusy,
// answered 429), all clients together only so many more (ErrBusy, 503),
// and none waits longer than MaxWait (ErrBusy), so the memory the waiting
// takes stays bounded whatever arrives.
package fairgate

import (
	"container/list"
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/yard-api/yard/internal/defaults"
)

// ErrClientBusy is returned when the client already has PerClient requests
// waiting; ErrBusy when all clients together have Waiting requests waiting,
// or when a request waited MaxWait.
var (
	ErrClientBusy = errors.New("fairgate: this client has too many requests waiting")
	ErrBusy       = errors.New("fairgate: too many requests waiting")
)

// Config holds a Gate's bounds; zero values take the defaults.
type Config struct {
	Slots     int           // requests running at once (default: DefaultSlots)
	PerClient int           // requests one client may have waiting (default 256)
	Waiting   int           // requests all clients may have waiting (default 4096)
	MaxWait   time.Duration // the longest a request waits for a slot (default 10 s)
}

// DefaultSlots is sixteen per processor Go uses: enough that work waiting
// on the store (on PostgreSQL a car search waits for a round trip, the
// change probe) overlaps with work computing; four per core cost
// PostgreSQL a fifth of its random pages (docs/benchmark-journal.md, "The car
// lists' gate"). A slot still frees within a few requests' time.
func DefaultSlots() int { return 16 * runtime.GOMAXPROCS(0) }

// Gate admits work into a fixed number of slots, fairly among clients.
// Build it with New; a nil Gate admits everything at once.
type Gate struct {
	cfg Config

	mu      sync.Mutex
	busy    int                // slots taken
	waiting int                // requests waiting, all clients
	clock   uint64             // counts grants and first waits: their order
	clients map[string]*client // the clients running or waiting
	lines   list.List          // of *client: those with requests waiting

	refusedClient, refusedBusy int64 // counted under mu
}

// client is what a gate knows of one client: its slots and its line of
// waiting requests.
type client struct {
	key     string
	running int
	served  uint64        // the clock at its last grant (0: none)
	since   uint64        // the clock when its line began
	line    list.List     // of *waiter, oldest first
	place   *list.Element // in Gate.lines while its line is not empty
}

type waiter struct {
	ready   chan struct{} // closed when the waiter is given a slot
	granted bool          // under Gate.mu
	elem    *list.Element // in client.line while waiting
}

// New returns a gate with cfg's bounds.
func New(cfg Config) *Gate {
	cfg.Slots = defaults.Positive(cfg.Slots, DefaultSlots())
	cfg.PerClient = defaults.Positive(cfg.PerClient, 256)
	cfg.Waiting = defaults.Positive(cfg.Waiting, 4096)
	cfg.MaxWait = defaults.Positive(cfg.MaxWait, 10*time.Second)
	return &Gate{cfg: cfg, clients: map[string]*client{}}
}

// Acquire takes a slot for a request of the client key, waiting its turn
// if none is free. On nil the caller must call Release with the same key
// once its work is done. It returns ErrClientBusy or ErrBusy when the
// request may not wait, and the context's error when ctx ends first.
func (g *Gate) Acquire(ctx context.Context, key string) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	c := g.clients[key]
	if c == nil {
		c = &client{key: key}
		g.clients[key] = c
	}
	// Slots go straight to waiters as they free (Release), so a free slot
	// means nobody waits.
	if g.busy < g.cfg.Slots {
		g.busy++
		g.grantLocked(c)
		g.mu.Unlock()
		return nil
	}
	switch {
	case c.line.Len() >= g.cfg.PerClient:
		g.refusedClient++
		g.mu.Unlock()
		return ErrClientBusy
	case g.waiting >= g.cfg.Waiting:
		g.refusedBusy++
		g.forgetLocked(c)
		g.mu.Unlock()
		return ErrBusy
	}
	w := &waiter{ready: make(chan struct{})}
	w.elem = c.line.PushBack(w)
	if c.place == nil {
		g.clock++
		c.since = g.clock
		c.place = g.lines.PushBack(c)
	}
	g.waiting++
	g.mu.Unlock()

	var err error
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(g.cfg.MaxWait): // collected once unreachable (Go 1.23)
		err = ErrBusy
	}
	g.mu.Lock()
	if w.granted {
		// The slot came as the wait ended: hand it on.
		g.mu.Unlock()
		g.Release(key)
		return err
	}
	g.unwaitLocked(c, w.elem)
	g.forgetLocked(c)
	if err == ErrBusy {
		g.refusedBusy++
	}
	g.mu.Unlock()
	return err
}

// grantLocked counts a slot given to c.
func (g *Gate) grantLocked(c *client) {
	c.running++
	g.clock++
	c.served = g.clock
}

// unwaitLocked takes the waiter at e out of c's line, and c out of the
// lines when its line is empty.
func (g *Gate) unwaitLocked(c *client, e *list.Element) *waiter {
	w := c.line.Remove(e).(*waiter)
	g.waiting--
	if c.line.Len() == 0 {
		g.lines.Remove(c.place)
		c.place = nil
	}
	return w
}

// forgetLocked drops c when it neither runs nor waits.
func (g *Gate) forgetLocked(c *client) {
	if c.running == 0 && c.place == nil {
		delete(g.clients, c.key)
	}
}

// Release frees the slot an Acquire of key took. It goes to the oldest
// request of the waiting client served longest ago (ties: the one waiting
// longest); a scan of the clients that wait, which the bound on waiting
// requests bounds.
func (g *Gate) Release(key string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.clients[key]; c != nil {
		c.running--
		g.forgetLocked(c)
	}
	var next *client
	for e := g.lines.Front(); e != nil; e = e.Next() {
		c := e.Value.(*client)
		if next == nil || c.served < next.served || c.served == next.served && c.since < next.since {
			next = c
		}
	}
	if next == nil {
		g.busy--
		return
	}
	w := g.unwaitLocked(next, next.line.Front())
	g.grantLocked(next)
	w.granted = true
	close(w.ready)
}

// Stats is what a gate holds and has refused.
type Stats struct {
	Busy, Waiting, Clients     int   // now (Clients: those running or waiting)
	RefusedClient, RefusedBusy int64 // since New: ErrClientBusy, ErrBusy
}

// Stats returns the gate's current state.
func (g *Gate) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Busy: g.busy, Waiting: g.waiting, Clients: len(g.clients),
		RefusedClient: g.refusedClient, RefusedBusy: g.refusedBusy}
}
