package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"sync"
)

// A shape is an endpoint that ServeMux cannot take as a pattern of its
// own, because its pattern and another route's both match some path and
// neither is more specific (ServeMux refuses such a pair at registration).
// GET /{garage_id}/cars/{car_id} is one: it and GET
// /garages/{garage_id}/cars both match /garages/cars/cars. routes.go lists
// shapes with their real patterns in a dispatch group; the group registers
// one method-less catch-all pattern that no other route is less specific
// than, and this file matches the shapes within it.
type shape struct {
	method  string
	pattern string
	h       http.HandlerFunc
}

// dispatcher serves the shapes of one dispatch group.
type dispatcher struct {
	s *Server
	// names are the wildcards of the catch-all pattern, one a segment.
	names  []string
	shapes []shape
	// shadow is a mux of every route but this group's shapes: what the
	// catch-all receives that no shape takes is answered as that mux
	// would (404, or 405 with the Allow of the path's other routes).
	// Built on first use (routes do not change after New).
	shadow func() *http.ServeMux
}

// dispatch registers a dispatch group: catchAll is a method-less pattern
// whose every segment is a wildcard ("/{a}/{b}/{c}"); each shape is listed
// among the routes (index, OpenAPI check) under its own pattern, whose
// segments are literals or wildcards of the catch-all's names.
func (s *Server) dispatch(catchAll string, shapes ...shape) {
	d := &dispatcher{s: s, shapes: shapes}
	d.shadow = sync.OnceValue(d.shadowMux)
	for _, seg := range pathSegments(catchAll) {
		d.names = append(d.names, strings.Trim(seg, "{}"))
	}
	for _, sh := range shapes {
		if len(pathSegments(sh.pattern)) != len(d.names) {
			panic("httpapi: shape " + sh.pattern + " has not the segments of " + catchAll)
		}
		s.routes = append(s.routes, route{Method: sh.method, Pattern: sh.pattern})
	}
	s.mux.HandleFunc(catchAll, d.serve)
}

func pathSegments(pattern string) []string {
	return strings.Split(strings.Trim(pattern, "/"), "/")
}

// matches reports whether the request's path, as bound to the catch-all's
// wildcards, has the shape of pattern, and binds the shape's wildcards.
func (d *dispatcher) matches(r *http.Request, pattern string) bool {
	segs := pathSegments(pattern)
	for i, seg := range segs {
		if !strings.HasPrefix(seg, "{") && r.PathValue(d.names[i]) != seg {
			return false
		}
	}
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") {
			r.SetPathValue(strings.Trim(seg, "{}"), r.PathValue(d.names[i]))
		}
	}
	return true
}

func (d *dispatcher) serve(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, sh := range d.shapes {
		if !d.matches(r, sh.pattern) {
			continue
		}
		if sh.method == r.Method || sh.method == http.MethodGet && r.Method == http.MethodHead {
			sh.h(w, r)
			return
		}
		allow = append(allow, sh.method)
	}
	if len(allow) > 0 {
		d.s.notAllowed(w, r, allowList(allow)+", OPTIONS")
		return
	}
	// No shape takes the path: answer as the mux would without the
	// catch-all, 404, or 405 (or the OPTIONS answer) with the Allow of the
	// patterns registered for the path. (No pattern of the shadow mux
	// matches: the real mux would have chosen it over the catch-all.)
	h, _ := d.shadow().Handler(r)
	d.s.unrouted(w, r, h)
}

// shadowMux builds the shadow mux.
func (d *dispatcher) shadowMux() *http.ServeMux {
	shadow := http.NewServeMux()
	for _, rt := range d.s.routes {
		if slices.ContainsFunc(d.shapes, func(sh shape) bool { return sh.method == rt.Method && sh.pattern == rt.Pattern }) {
			continue
		}
		shadow.HandleFunc(muxPattern(rt.Method, rt.Pattern), func(http.ResponseWriter, *http.Request) {})
	}
	return shadow
}
