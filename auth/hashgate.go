package auth

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// HashGate bounds the slow password hashing (argon2id, about 19 MiB and
// tens of milliseconds each) of the whole process (a server builds one and
// gives it to every scheme and endpoint that hashes): at most Slots run at
// once, at most Queue more wait for a slot (each for at most MaxWait), and
// any further one is refused at once with 503 and Retry-After. Memory spent
// on hashing is thus at most Slots × 19 MiB, however many sign-ins arrive
// (docs/auth.md, "Login rate limit").
type HashGate struct {
	slots   chan struct{}
	queue   chan struct{}
	maxWait time.Duration
	runs    atomic.Int64
	refused atomic.Int64
}

// NewHashGate returns a gate of slots concurrent hashes, queue waiting ones
// and the longest wait for a slot. slots <= 0 takes DefaultHashSlots;
// queue < 0 takes four per slot.
func NewHashGate(slots, queue int, maxWait time.Duration) *HashGate {
	slots = defaults.Positive(slots, DefaultHashSlots())
	if queue < 0 {
		queue = 4 * slots
	}
	maxWait = defaults.Positive(maxWait, 2*time.Second)
	return &HashGate{slots: make(chan struct{}, slots), queue: make(chan struct{}, queue), maxWait: maxWait}
}

// DefaultHashSlots is one fewer than the processors Go uses (at least
// one): hashing never takes every core from the requests that need none.
func DefaultHashSlots() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// Runs returns how many hashes have run through the gate.
func (g *HashGate) Runs() int64 { return g.runs.Load() }

// Refused returns how many hashes the gate refused (busy).
func (g *HashGate) Refused() int64 { return g.refused.Load() }

func (g *HashGate) busy() error {
	g.refused.Add(1)
	return &yard.Error{Code: yard.EUNAVAILABLE, Message: "The server is busy checking passwords; try again shortly.", RetryAfter: 1}
}

// Do runs f when a slot is free, waiting in the queue if there is room, or
// returns EUNAVAILABLE (503 with Retry-After) or the context's error. A
// nil gate runs f at once: for command-line tools, which hash one
// password; a server passes its one gate to every scheme (Config.Hashing).
func (g *HashGate) Do(ctx context.Context, f func()) error {
	if g == nil {
		f()
		return nil
	}
	select {
	case g.slots <- struct{}{}:
	default:
		select {
		case g.queue <- struct{}{}:
		default:
			return g.busy()
		}
		// An unstopped timer is collected once unreachable (Go 1.23).
		select {
		case g.slots <- struct{}{}:
			<-g.queue
		case <-time.After(g.maxWait):
			<-g.queue
			return g.busy()
		case <-ctx.Done():
			<-g.queue
			return ctx.Err()
		}
	}
	defer func() { <-g.slots }()
	g.runs.Add(1)
	f()
	return nil
}
