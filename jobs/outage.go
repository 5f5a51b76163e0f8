package jobs

// logLoopError logs an error of a worker or scheduler loop (what names
// it); an unreachable store is logged once per outage (internal/outage).
func (s *Service) logLoopError(what string, err error) {
	s.outage.LoopError(s.Logger, what, err, err != nil && s.DB.Unavailable(err) != nil)
}
