package httpapi

import (
	"context"
	"log/slog"
	"strings"
	"time"
)

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
		err := s.deps.DB.Reachable(ctx)
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
