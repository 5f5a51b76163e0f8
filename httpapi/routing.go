package httpapi

import (
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/yard-api/yard"
)

// What the mux answers by itself, made to answer as the API does: its
// redirects absolute and permanent, its 404 and 405 problems with Allow;
// and the writers that keep the status of an answer.

// muxRedirects makes the mux's own redirects absolute. The mux answers a
// path it cleans (dot segments, "//") or completes (a missing trailing
// slash) with a redirect to a relative path and an HTML body, under the
// pattern of the new path; every Location of the API is absolute (built
// from the base URL) and every redirect permanent, so a redirect with a
// relative Location is rewritten: 308, absolute, no body. The handlers of
// the API never set a relative Location.
type muxRedirects struct {
	*statusWriter
	s       *Server
	r       *http.Request
	swallow bool
}

func (w *muxRedirects) WriteHeader(code int) {
	if code >= 300 && code < 400 && !w.wrote {
		if loc := w.Header().Get("Location"); strings.HasPrefix(loc, "/") {
			w.Header().Set("Location", w.s.cleanLocation(w.r, loc))
			w.Header().Del("Content-Type")
			code, w.swallow = http.StatusPermanentRedirect, true
		}
	}
	w.statusWriter.WriteHeader(code)
}

func (w *muxRedirects) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.statusWriter.Write(b)
}

// cleanLocation is the absolute URL of a redirect of the mux, which
// answered r with a Location of muxLoc: r's path as sent (escaped) with
// its dot segments and repeated slashes removed, the trailing slash of
// muxLoc, and r's query. The mux's own Location is not used as it is: it
// escapes an escaped path again (a %2D becomes %252D, another resource).
// The cleaned path starts with one slash, so it can never name another
// host.
func (s *Server) cleanLocation(r *http.Request, muxLoc string) string {
	p := path.Clean(r.URL.EscapedPath())
	if muxPath, _, _ := strings.Cut(muxLoc, "?"); strings.HasSuffix(muxPath, "/") && p != "/" {
		p += "/"
	}
	return s.redirectURL(r, p)
}

// redirectURL is where a redirect of r to path goes: the absolute URL of
// path with r's query, its bytes a URI may not hold escaped (uriQuery).
func (s *Server) redirectURL(r *http.Request, path string) string {
	if r.URL.RawQuery != "" {
		path += "?" + uriQuery(r.URL.RawQuery)
	}
	return s.url(path)
}

// unrouted answers a request no endpoint matched: 404, 405 with Allow, or
// the answer to OPTIONS (204 with Allow), each with a problem body.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if methods := s.literals[r.URL.Path]; methods != nil {
		// A path some route names as it is: only its own routes' methods.
		s.notAllowed(w, r, allowList(methods)+", OPTIONS")
		return
	}
	rec := &recorder{header: http.Header{}, Code: http.StatusOK}
	h.ServeHTTP(rec, r)
	switch {
	case rec.Code == http.StatusMethodNotAllowed:
		allow := rec.header.Get("Allow")
		if !strings.Contains(allow, "OPTIONS") {
			allow += ", OPTIONS"
		}
		s.notAllowed(w, r, allow)
	case rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect || rec.Code == http.StatusPermanentRedirect:
		// The mux cleaned the path (e.g. "//", "/./" or "/.."): redirect
		// permanently, to an absolute URL under the base URL like every
		// other Location.
		w.Header().Set("Location", s.cleanLocation(r, rec.header.Get("Location")))
		w.WriteHeader(http.StatusPermanentRedirect)
	default:
		s.error(w, r, yard.Errorf(yard.ENOTFOUND, "No resource has the path %s.", r.URL.Path))
	}
}

// allowList is the Allow value of routes' methods: sorted, once each, and
// HEAD wherever GET is.
func allowList(methods []string) string {
	allow := slices.Clone(methods)
	if slices.Contains(allow, http.MethodGet) {
		allow = append(allow, http.MethodHead)
	}
	slices.Sort(allow)
	return strings.Join(slices.Compact(allow), ", ")
}

// notAllowed answers a method the resource does not take: 405 with Allow,
// or the answer to OPTIONS (204 with Allow).
func (s *Server) notAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.error(w, r, &yard.Error{Code: "method_not_allowed", Message: "This resource takes " + allow + "."})
}

// literalRoute returns the methods of the routes that name the request's
// path without a wildcard when the mux matched it to a pattern with one (for
// another method): ServeMux would give DELETE /cars/search to DELETE
// /cars/{car_id}, but /cars/search is a resource of its own that takes GET
// only, so the answer is its 405. Nil otherwise.
func (s *Server) literalRoute(r *http.Request, pattern string) []string {
	if !strings.Contains(strings.TrimSuffix(pattern, "{$}"), "{") {
		return nil
	}
	return s.literals[r.URL.Path]
}

// recorder captures the answer of the mux's own 404/405 handlers.
type recorder struct {
	header http.Header
	Code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.Code = code }

// statusWriter remembers the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (flushes, deadlines, the hijack of an event stream).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
