// Package events follows the store's event log and hands each new event
// to the streams and waits of this process (docs/events.md). The store is
// the truth: a Hub only reads it after the last event it handed out, woken
// by this process's commits, by other processes' notifications (PostgreSQL
// LISTEN/NOTIFY) and by a poll, so a lost wake-up delays an event but never
// loses it. A subscriber that cannot keep up is cut off and resumes from
// the store by id; memory stays bounded whatever the readers do.
package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
	"github.com/yard-api/yard/internal/outage"
	"github.com/yard-api/yard/internal/retention"
)

// Store is what a Hub needs of the store (store.DB).
type Store interface {
	yard.EventReader
	LastEventID(ctx context.Context) (yard.EventID, error)
	EventsWritten() <-chan struct{}
	NotifyEvents(ctx context.Context) error
	ListenEvents(ctx context.Context, wake func()) error
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// Unavailable tells a store that cannot be reached (an EUNAVAILABLE
	// error) from other errors, which it answers with nil.
	Unavailable(err error) *yard.Error
}

// Defaults of a Hub's limits (docs/events.md, "Limits").
const (
	DefaultPoll         = 250 * time.Millisecond
	DefaultRetention    = 168 * time.Hour
	DefaultPerPerson    = 10
	DefaultPerProcess   = 10000
	DefaultBuffer       = 256
	maxRead             = 1000
	pruneEvery          = time.Minute
	pruneBatch          = 10000
	followUp            = 25 * time.Millisecond
	readGap             = 10 * time.Millisecond
	listenRetry         = time.Second
	notifyTimeout       = 2 * time.Second
	readTimeout         = 10 * time.Second
	defaultReadFailWait = time.Second
)

// ErrTooMany is returned by Subscribe past the per-person limit; ErrFull
// past the per-process one.
var (
	ErrTooMany = errors.New("events: too many streams for this person")
	ErrFull    = errors.New("events: too many streams on this process")
	ErrClosed  = errors.New("events: the hub is closed")
)

// Config holds a Hub's settings; zero values take the defaults.
type Config struct {
	Poll       time.Duration // the longest an event waits when every wake-up is lost
	Retention  time.Duration // events older than this are pruned
	PerPerson  int           // streams one person may hold on this process
	PerProcess int           // streams this process holds
	Buffer     int           // events a subscriber may lag behind before it is cut off
	Logger     *slog.Logger
}

// Hub fans the store's new events out to subscribers. Build it with New and
// run it with Run.
type Hub struct {
	store Store
	cfg   Config

	started atomic.Bool // Run was called

	mu        sync.Mutex
	pos       yard.EventID // the last event handed out
	closed    bool
	subs      map[*Sub]struct{}
	anyOwner  map[*Sub]struct{}            // subscribers of every owner's events
	byOwner   map[string]map[*Sub]struct{} // subscribers of one owner's events
	wakers    map[chan struct{}]struct{}   // Wakeups
	perPerson map[string]int
	ready     chan struct{} // closed once pos is known
	wake      chan struct{}

	// A read of the store in progress that asked for some owners' events
	// only (deliver): which, and a channel closed when its events are
	// handed out. A subscriber it does not cover waits for it (Subscribe).
	readCover []string
	readDone  chan struct{}

	// down tracks the store's outages as each loop meets them
	// (internal/outage): logged once when one begins and once when it
	// ends, not at every failed read.
	down struct{ read, listen, prune outage.Tracker }
}

// logLoop logs the outcome of one pass of a loop (what names it) through
// its tracker t.
func (h *Hub) logLoop(t *outage.Tracker, what string, err error) {
	t.LoopError(h.cfg.Logger, what, err, err != nil && h.store.Unavailable(err) != nil)
}

// New returns a hub over st.
func New(st Store, cfg Config) *Hub {
	cfg.Poll = defaults.Positive(cfg.Poll, DefaultPoll)
	cfg.Retention = defaults.Positive(cfg.Retention, DefaultRetention)
	cfg.PerPerson = defaults.Positive(cfg.PerPerson, DefaultPerPerson)
	cfg.PerProcess = defaults.Positive(cfg.PerProcess, DefaultPerProcess)
	cfg.Buffer = defaults.Positive(cfg.Buffer, DefaultBuffer)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Hub{store: st, cfg: cfg, subs: map[*Sub]struct{}{}, anyOwner: map[*Sub]struct{}{},
		byOwner: map[string]map[*Sub]struct{}{}, wakers: map[chan struct{}]struct{}{}, perPerson: map[string]int{},
		ready: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Item is one event handed to subscribers, shared by all of them: its
// Server-Sent Events frame is made once per process, not once per stream.
type Item struct {
	Event *yard.Event
	once  sync.Once
	frame []byte
}

// Frame returns the event as one Server-Sent Events frame ("id:", "event:",
// "data: " render(Event), a blank line), computed once. The data is one
// line: JSON made by encoding/json holds no newline.
func (it *Item) Frame(render func(*yard.Event) []byte) []byte {
	it.once.Do(func() {
		it.frame = fmt.Appendf(nil, "id: %s\nevent: %s\ndata: %s\n\n", it.Event.ID, it.Event.Type, render(it.Event))
	})
	return it.frame
}

// Sub is a subscription. Its events arrive on C in id order; Cut is closed
// when the subscriber fell more than the buffer behind (or the hub
// closed): it must stop and resume from the store.
type Sub struct {
	C   <-chan *Item
	Cut <-chan struct{}
	// From is the hub's position when the subscription began: C carries
	// exactly the visible events after it.
	From yard.EventID

	c      chan *Item
	cut    chan struct{}
	person string
	keep   func(*yard.Event) bool
	counts bool
	owned  bool   // only owner's events reach it
	owner  string // with owned
}

// SubOption adjusts a subscription.
type SubOption func(*Sub)

// OwnedBy makes a subscription see only the events whose Owner is owner
// (a person's stream): the hub then passes it nothing else, without
// calling its filter for every other person's events.
func OwnedBy(owner string) SubOption {
	return func(s *Sub) { s.owned, s.owner = true, owner }
}

// Subscribe registers a subscriber for the events keep accepts. person is
// counted against the per-person limit when counted is set (a stream; a
// wait is not); every subscription counts against the per-process limit.
// It waits, up to ctx, for the hub to know its position.
func (h *Hub) Subscribe(ctx context.Context, person string, counted bool, keep func(*yard.Event) bool, opts ...SubOption) (*Sub, error) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := &Sub{cut: make(chan struct{}), person: person, keep: keep, counts: counted}
	for _, o := range opts {
		o(s)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// A read that skips this subscriber's events may be under way: its
	// position is where this subscription would begin, and the events
	// it skips would never reach it. Wait for the read to end.
	for h.readDone != nil && (!s.owned || !slices.Contains(h.readCover, s.owner)) {
		done := h.readDone
		h.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			h.mu.Lock()
			return nil, ctx.Err()
		}
		h.mu.Lock()
	}
	if err := h.roomLocked(person, counted); err != nil {
		return nil, err
	}
	s.c, s.From = make(chan *Item, h.cfg.Buffer), h.pos
	s.C, s.Cut = s.c, s.cut
	h.subs[s] = struct{}{}
	if s.owned {
		if h.byOwner[s.owner] == nil {
			h.byOwner[s.owner] = map[*Sub]struct{}{}
		}
		h.byOwner[s.owner][s] = struct{}{}
	} else {
		h.anyOwner[s] = struct{}{}
	}
	if counted {
		h.perPerson[person]++
	}
	return s, nil
}

// Unsubscribe ends a subscription.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(s)
}

func (h *Hub) dropLocked(s *Sub) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	if s.owned {
		if delete(h.byOwner[s.owner], s); len(h.byOwner[s.owner]) == 0 {
			delete(h.byOwner, s.owner)
		}
	} else {
		delete(h.anyOwner, s)
	}
	if s.counts {
		if h.perPerson[s.person]--; h.perPerson[s.person] <= 0 {
			delete(h.perPerson, s.person)
		}
	}
	close(s.cut)
}

// Room reports whether Subscribe would take a subscription of person now
// (counted as Subscribe's): nil, or the error it would return (ErrClosed,
// ErrFull, ErrTooMany). A HEAD of a stream answers as its GET would.
func (h *Hub) Room(person string, counted bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.roomLocked(person, counted)
}

func (h *Hub) roomLocked(person string, counted bool) error {
	switch {
	case h.closed:
		return ErrClosed
	case len(h.subs) >= h.cfg.PerProcess:
		return ErrFull
	case counted && h.perPerson[person] >= h.cfg.PerPerson:
		return ErrTooMany
	}
	return nil
}

// Subscribers returns the number of subscriptions (metrics, tests).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Wake asks the hub to read the store now.
func (h *Hub) Wake() { poke(h.wake) }

// poke signals c without blocking: a signal already waiting there stands
// for this one too.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run follows the store until ctx ends, then cuts every subscriber off.
func (h *Hub) Run(ctx context.Context) error {
	if !h.started.CompareAndSwap(false, true) {
		return errors.New("events: the hub runs already")
	}
	defer h.Close()

	for {
		pos, err := h.store.LastEventID(ctx)
		if ctx.Err() == nil {
			h.logLoop(&h.down.read, "events: reading the store", err)
		}
		if err == nil {
			h.mu.Lock()
			h.pos = pos
			h.readyLocked() // Close may have come first
			h.mu.Unlock()
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(defaultReadFailWait):
		}
	}

	go h.listen(ctx)
	go h.prune(ctx)

	poll := time.NewTimer(h.cfg.Poll)
	defer poll.Stop()
	var follow <-chan time.Time
	var last time.Time
	for {
		local, woke := false, false
		select {
		case <-ctx.Done():
			return nil
		case <-h.store.EventsWritten():
			local, woke = true, true
		case <-h.wake:
			woke = true
		case <-follow:
			follow = nil
		case <-poll.C:
		}
		// Under a stream of commits, read (and notify) at most once per
		// readGap: the commits meanwhile share the read.
		if wait := readGap - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		last = time.Now()
		n, err := h.deliver(ctx)
		if ctx.Err() == nil {
			h.logLoop(&h.down.read, "events: reading the store", err)
		}
		if local {
			// Other processes read on this notification. An event is
			// visible only once every older transaction ended, so read
			// once more shortly after any wake-up.
			nctx, cancel := context.WithTimeout(ctx, notifyTimeout)
			_ = h.store.NotifyEvents(nctx)
			cancel()
		}
		if woke || n > 0 {
			follow = time.After(followUp)
		}
		poll.Reset(h.cfg.Poll)
	}
}

// deliver reads every event after the hub's position and hands each to
// the subscribers that keep it; it returns how many it read.
func (h *Hub) deliver(ctx context.Context) (int, error) {
	h.mu.Lock()
	idle := len(h.subs) == 0
	h.mu.Unlock()
	if idle {
		return h.skip(ctx)
	}
	total := 0
	for {
		rctx, cancel := context.WithTimeout(ctx, readTimeout)
		h.mu.Lock()
		from := h.pos
		f := yard.EventFilter{After: from, Limit: maxRead}
		if len(h.anyOwner) == 0 {
			// Only people's streams: read their events, not every
			// row of the log (another person's barks, say).
			f.Owners = slices.AppendSeq(make([]string, 0, len(h.byOwner)), maps.Keys(h.byOwner))
			h.readCover = f.Owners
			h.readDone = make(chan struct{})
		}
		h.mu.Unlock()
		p, err := h.store.ReadEvents(rctx, f)
		cancel()
		if err != nil {
			h.mu.Lock()
			h.endReadLocked()
			h.mu.Unlock()
			if yard.ErrorCode(err) == yard.EGONE {
				// Pruned under the hub (a store restored, or a hub
				// stopped for longer than the retention): start again
				// from the newest event; subscribers resume from the
				// store.
				pos, lerr := h.store.LastEventID(ctx)
				if lerr != nil {
					return total, lerr
				}
				h.mu.Lock()
				h.pos = pos
				for s := range h.subs {
					h.dropLocked(s)
				}
				h.mu.Unlock()
				continue
			}
			return total, err
		}
		h.mu.Lock()
		for _, e := range p.Events {
			it := &Item{Event: e}
			h.offerLocked(h.anyOwner, it)
			h.offerLocked(h.byOwner[e.Owner], it)
		}
		h.pos = p.Next
		if from.Less(p.Next) {
			h.wakeLocked() // events came, whether read or skipped
		}
		h.endReadLocked()
		h.mu.Unlock()
		total += len(p.Events)
		if len(p.Events) < maxRead {
			return total, nil
		}
	}
}

// endReadLocked ends the read in progress (deliver): subscribers that wait
// for it go on.
func (h *Hub) endReadLocked() {
	if h.readDone != nil {
		close(h.readDone)
		h.readDone, h.readCover = nil, nil
	}
}

// skip moves an idle hub (no subscriber) to the newest event without
// reading the events, which nobody would receive: one probe of the log's
// index instead of every event's row. A subscriber that came meanwhile
// keeps the position where it was, and the next read gives it what
// follows.
func (h *Hub) skip(ctx context.Context) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	last, err := h.store.LastEventID(rctx)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) > 0 || !h.pos.Less(last) {
		return 0, nil
	}
	h.pos = last
	h.wakeLocked()
	return 1, nil
}

// wakeLocked signals the Wakeups channels.
func (h *Hub) wakeLocked() {
	for c := range h.wakers {
		poke(c)
	}
}

// offerLocked hands it to the subscribers of subs that keep it, cutting off
// those whose buffer is full.
func (h *Hub) offerLocked(subs map[*Sub]struct{}, it *Item) {
	for s := range subs {
		if s.keep != nil && !s.keep(it.Event) {
			continue
		}
		select {
		case s.c <- it:
		default:
			h.dropLocked(s) // fell behind: cut off
		}
	}
}

// Wakeups returns a channel signalled (without blocking, so signals
// coalesce) each time the hub hands out new events, for work that needs
// to know that events came but not which (webhook fan-out); stop ends it.
func (h *Hub) Wakeups() (c <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.wakers[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.wakers, ch)
		h.mu.Unlock()
	}
}

// listen turns other processes' notifications into wake-ups (PostgreSQL).
// While it cannot listen, the poll reads.
func (h *Hub) listen(ctx context.Context) {
	const what = "events: listening for other processes (polling meanwhile)"
	wake := func() {
		h.logLoop(&h.down.listen, what, nil) // listening (again)
		h.Wake()
	}
	for ctx.Err() == nil {
		err := h.store.ListenEvents(ctx, wake)
		if err == nil || ctx.Err() != nil {
			return
		}
		h.logLoop(&h.down.listen, what, err)
		select {
		case <-ctx.Done():
		case <-time.After(listenRetry):
		}
	}
}

// prune removes events past the retention, once a minute.
func (h *Hub) prune(ctx context.Context) {
	retention.Run(ctx, pruneEvery, pruneBatch, func(ctx context.Context, limit int) (int, error) {
		return h.store.PruneEvents(ctx, time.Now().Add(-h.cfg.Retention), limit)
	}, func(err error) {
		h.logLoop(&h.down.prune, "events: pruning", err)
	})
}

// Close cuts every subscriber off and refuses new ones (the server is
// stopping); Run goes on until its context ends.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		h.dropLocked(s)
	}
	h.readyLocked()
}

// readyLocked closes ready, once: Run does when it knows its position,
// Close does when the hub stops, whichever comes first (a server stopped
// while its hub still waited for the store's first answer).
func (h *Hub) readyLocked() {
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
}
