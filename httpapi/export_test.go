package httpapi

import "slices"

// Routes returns every registered endpoint (method and pattern).
func (s *Server) Routes() []route { return slices.Clone(s.routes) }
