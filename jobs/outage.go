package jobs

import (
	"log/slog"
	"time"
)

// logLoopError logs an error of a worker or scheduler loop (what names
// it). Errors of an unreachable store are logged once per outage; the
// loops keep polling and pick up where they were when it answers again.
func (s *Service) logLoopError(what string, err error) {
	if err == nil {
		if _, ended := s.outage.End(); ended {
			s.Logger.Info(what + ": store reachable again")
		}
		return
	}
	if s.DB.Unavailable(err) != nil {
		if s.outage.Begin(time.Now()) {
			s.Logger.Warn(what+": store unavailable; retrying until it answers", slog.String("error", err.Error()))
		}
		return
	}
	s.Logger.Error(what, slog.String("error", err.Error()))
}
