package httpapi

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/yard-api/yard"
)

// outageStore is what the error path and the outage watch need of the
// store: which of its errors say it cannot be reached now, and whether it
// answers again.
type outageStore interface {
	// Unavailable returns an EUNAVAILABLE *yard.Error, its RetryAfter set,
	// when err says the store cannot be reached now (or is itself such an
	// error), and nil for any other error.
	Unavailable(err error) *yard.Error
	// Reachable reports whether the store answers reads and can begin a
	// write.
	Reachable(ctx context.Context) error
}

// unreachable is the 503 of a store that did not answer a check (err),
// with the Retry-After the store gives its outages.
func (s *Server) unreachable(err error) *yard.Error {
	// When the check failed otherwise (its own time-out), the answer the
	// store gives an outage.
	ue := cmp.Or(s.db.outage.Unavailable(err),
		s.db.outage.Unavailable(yard.Errorf(yard.EUNAVAILABLE, "The store is not reachable.")))
	return &yard.Error{Code: yard.EUNAVAILABLE, Message: "The store is not reachable.", RetryAfter: ue.RetryAfter}
}

// storeUnavailable records that the store could not be reached. The first
// such error of an episode is logged and wakes the store watcher
// (WatchStore), which pings the store until it answers again, which ends
// the episode (logged too); requests in between answer 503 without a log
// line of their own, and /readyz says not ready.
func (s *Server) storeUnavailable(err error) {
	if !s.outage.Begin(time.Now()) {
		return
	}
	s.deps.Logger.Warn("store unavailable: answering 503 until it is reachable again", slog.String("error", err.Error()))
	select {
	case s.storeDown <- struct{}{}:
	default: // the watcher has been woken already
	}
}

// storeBack ends an episode (once, whoever notices first: the watcher or
// /readyz).
func (s *Server) storeBack() {
	if since, ended := s.outage.End(); ended {
		s.deps.Logger.Info("store reachable again", slog.Duration("unavailable_for", time.Since(since).Round(time.Millisecond)))
	}
}

// storeDownInterval is how often the watcher pings an unreachable store.
const storeDownInterval = 250 * time.Millisecond

// WatchStore ends the store's outages until ctx ends: woken by the first
// request of an episode that found the store unreachable, it pings the
// store every 250 ms until it answers reads and can begin a write. The
// owner runs it beside the server and ends ctx when the server stops;
// without it, an outage ends when /readyz finds the store back.
func (s *Server) WatchStore(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.storeDown:
		}
		for s.outage.Down() { // /readyz may see it back first
			select {
			case <-ctx.Done():
				return
			case <-time.After(storeDownInterval):
			}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := s.db.outage.Reachable(pctx)
			cancel()
			if err == nil {
				s.storeBack()
			}
		}
	}
}
