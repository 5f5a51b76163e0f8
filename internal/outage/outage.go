// Package outage tracks the episodes in which the store cannot be reached,
// so that each is logged once when it begins and once when it ends, not on
// every call that fails meanwhile (docs/api.md, "503 Service Unavailable").
// The HTTP layer, the bark runner and the webhook deliverer each hold one.
package outage

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Tracker is one component's view of the store's outages. Its zero value
// is a store that answers.
type Tracker struct {
	down  atomic.Bool
	since atomic.Int64 // Unix nanoseconds of the episode's start
}

// Begin records that the store could not be reached at now. It reports
// whether this call began an episode (then the caller logs it).
func (t *Tracker) Begin(now time.Time) bool {
	if !t.down.CompareAndSwap(false, true) {
		return false
	}
	t.since.Store(now.UnixNano())
	return true
}

// End records that the store answers again. It reports whether this call
// ended an episode, and when that began.
func (t *Tracker) End() (since time.Time, ended bool) {
	since = time.Unix(0, t.since.Load())
	if !t.down.CompareAndSwap(true, false) {
		return time.Time{}, false
	}
	return since, true
}

// Down reports whether an episode is under way.
func (t *Tracker) Down() bool { return t.down.Load() }

// LoopError logs the outcome of one pass of a background loop (what names
// the loop) to l: an error of a store that cannot be reached (unavailable)
// once per outage, and its end; any other error each time. The loops keep
// polling and pick up where they were when the store answers again.
func (t *Tracker) LoopError(l *slog.Logger, what string, err error, unavailable bool) {
	switch {
	case err == nil:
		if _, ended := t.End(); ended {
			l.Info(what + ": store reachable again")
		}
	case unavailable:
		if t.Begin(time.Now()) {
			l.Warn(what+": store unavailable; retrying until it answers", slog.String("error", err.Error()))
		}
	default:
		l.Error(what, slog.String("error", err.Error()))
	}
}
