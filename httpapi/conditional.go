package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// conditional reports whether a write carries a precondition
// (RFC 9110 §13.1): only then do the writes of cars, garages and webhooks
// read the stored resource first to evaluate it.
func conditional(r *http.Request) bool {
	h := r.Header
	return h.Get("If-Match") != "" || h.Get("If-Unmodified-Since") != "" || h.Get("If-None-Match") != ""
}

// writePreconditions evaluates the preconditions of a write on a resource
// in the order of RFC 9110 §13.2.2: If-Match (strong comparison; * is any
// current representation), else If-Unmodified-Since (ignored when it is
// not an HTTP date, §13.1.4, or the resource has no date), then
// If-None-Match (weak comparison; * is any current representation). etag
// is the entity tag a GET of the resource answers with, "" when it does
// not exist (a PUT that would create it); modified its Last-Modified, zero
// when it has none. A failed precondition is 412 naming the resource.
func writePreconditions(r *http.Request, etag string, modified time.Time, noun string) error {
	exists := etag != ""
	if im := r.Header.Get("If-Match"); im != "" {
		if !exists {
			return yard.Errorf(yard.EPRECONDITION, "If-Match names a current %s, and there is none at this URI.", noun)
		}
		if !matchesTag(im, etag, false) {
			return yard.Errorf(yard.EPRECONDITION, "The %s changed since the ETag given in If-Match.", noun)
		}
	} else if ius := r.Header.Get("If-Unmodified-Since"); ius != "" && exists && !modified.IsZero() {
		if t, err := http.ParseTime(ius); err == nil && modified.Truncate(time.Second).After(t) {
			return yard.Errorf(yard.EPRECONDITION, "The %s changed after %s.", noun, ius)
		}
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && exists && matchesTag(inm, etag, true) {
		return yard.Errorf(yard.EPRECONDITION, "If-None-Match: the %s exists in the representation it names.", noun)
	}
	return nil
}

// matchesTag reports whether a list of entity tags (or *) holds etag, a
// strong tag: by weak comparison a W/ tag of the same opaque value matches
// too, by strong comparison it never does (RFC 9110 §8.8.3.2).
func matchesTag(list, etag string, weak bool) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		if weak {
			t = strings.TrimPrefix(t, "W/")
		}
		if t == etag {
			return true
		}
	}
	return false
}
