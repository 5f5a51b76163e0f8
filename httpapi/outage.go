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
	if !s.storeDown.CompareAndSwap(false, true) {
		return
	}
	s.Logger.Warn("store unavailable: answering 503 until it is reachable again", slog.String("error", err.Error()))
	go s.watchStore(time.Now())
}

// storeDownInterval is how often the watcher pings an unreachable store.
const storeDownInterval = 250 * time.Millisecond

func (s *Server) watchStore(since time.Time) {
	for {
		time.Sleep(storeDownInterval)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.DB.Reachable(ctx)
		cancel()
		if err != nil && strings.Contains(err.Error(), "database is closed") {
			return // the server is shutting down
		}
		if err == nil {
			s.storeDown.Store(false)
			s.Logger.Info("store reachable again", slog.Duration("unavailable_for", time.Since(since).Round(time.Millisecond)))
			return
		}
	}
}
