package httpapi

import (
	"context"
	"log/slog"
	"strings"
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
	ue := s.db.outage.Unavailable(err)
	if ue == nil {
		// The check failed otherwise (its own time-out): ask the store
		// for the answer it gives an outage.
		ue = s.db.outage.Unavailable(yard.Errorf(yard.EUNAVAILABLE, "The store is not reachable."))
	}
	return &yard.Error{Code: yard.EUNAVAILABLE, Message: "The store is not reachable.", RetryAfter: ue.RetryAfter}
}

// storeUnavailable records that the store could not be reached. The first
// such error of an episode is logged, and a watcher pings the store until
// it answers again, which ends the episode (logged too); requests in
// between answer 503 without a log line of their own, and /readyz says not
// ready.
func (s *Server) storeUnavailable(err error) {
	if !s.outage.Begin(time.Now()) {
		return
	}
	s.deps.Logger.Warn("store unavailable: answering 503 until it is reachable again", slog.String("error", err.Error()))
	go s.watchStore()
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

func (s *Server) watchStore() {
	for {
		time.Sleep(storeDownInterval)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.db.outage.Reachable(ctx)
		cancel()
		if err != nil && strings.Contains(err.Error(), "database is closed") {
			return // the server is shutting down
		}
		if !s.outage.Down() {
			return // /readyz saw it back first
		}
		if err == nil {
			s.storeBack()
			return
		}
	}
}
