package httpapi

import (
	"net/http"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/pages"
)

// Pages for people (package pages): the sign-in form, the OAuth 1.0a
// authorisation page and other flows render through that package, and
// routes.go serves its stylesheet (pages.Pages.HandleStyle, which needs no
// Kit). Every page handler goes through s.page, which applies the pages'
// security middleware (CSP, framing, CSRF, cross-origin check).

// page wraps a page handler with the pages' middleware; without an
// authentication kit it answers 503.
func (s *Server) page(h func(p *pages.Pages, w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := s.pages
		if p == nil {
			s.error(w, r, yard.Errorf(yard.EUNAVAILABLE, "This server does not offer sign-in pages."))
			return
		}
		p.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(p, w, r) })).ServeHTTP(w, r)
	}
}

// mountConsole routes the console's paths to the console (without a Kit,
// to nothing: they answer 404 as any unknown path).
func (s *Server) mountConsole() {
	if s.console == nil {
		return
	}
	for _, p := range s.console.Patterns() {
		s.mux.Handle(p, s.console)
	}
}
