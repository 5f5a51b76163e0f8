package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// grammarQuery returns the raw query of r for an endpoint's own query
// grammar (the car grammar of docs/cars.md, the order filters): the query
// as sent, without the variables the authentication schemes consume
// (auth.QueryCredentials: a signed request's apiKey, signature, timestamp,
// method and bodyHash). The grammar never sees them, so it knows nothing of
// authentication; the schemes verify r.URL, which is left as sent (a
// signature covers the whole query). A pair is dropped by its decoded,
// lower-cased name; a pair without '=' or with a badly escaped name is
// kept, for the grammar to refuse.
func (s *Server) grammarQuery(r *http.Request) string {
	raw := r.URL.RawQuery
	s.queryVarsOnce.Do(func() { s.queryVars = s.deps.Auth.QueryVars() })
	vars := s.queryVars
	if raw == "" || len(vars) == 0 {
		return raw
	}
	isVar := func(pair string) bool {
		rawName, _, hasEq := strings.Cut(pair, "=")
		if !hasEq {
			return false
		}
		name := rawName
		if strings.ContainsAny(rawName, "%+") {
			var err error
			if name, err = url.QueryUnescape(rawName); err != nil {
				return false
			}
		}
		return slices.ContainsFunc(vars, func(v string) bool { return sameLower(v, name) })
	}
	// Most queries hold none: they are answered without a copy.
	if !anyPair(raw, isVar) {
		return raw
	}
	kept, _ := dropPairs(raw, isVar)
	return kept
}

// sameLower reports whether strings.ToLower gives a and b alike, without
// making the lower-case strings when b is ASCII (a, a variable's name,
// always is).
func sameLower(a, b string) bool {
	for i := 0; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			// Not strings.EqualFold: it folds LATIN SMALL LETTER LONG S
			// to s, so a look-alike name would be taken for a variable.
			la := strings.ToLower(a)
			return la == strings.ToLower(b)
		}
	}
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// anyPair reports whether some pair of the raw query satisfies f.
func anyPair(raw string, f func(pair string) bool) bool {
	for raw != "" {
		pair := raw
		if i := strings.IndexAny(raw, "&;"); i >= 0 {
			pair, raw = raw[:i], raw[i+1:]
		} else {
			raw = ""
		}
		if pair != "" && f(pair) {
			return true
		}
	}
	return false
}

// dropPairs returns the raw query without its empty pairs and the pairs
// drop selects, each kept pair after the separator ('&' or ';') written
// just before it, so the client's separators survive; dropped says whether
// drop selected any pair.
func dropPairs(raw string, drop func(pair string) bool) (kept string, dropped bool) {
	var b strings.Builder
	before := ""
	for raw != "" {
		pair, sep := raw, ""
		if i := strings.IndexAny(raw, "&;"); i >= 0 {
			pair, sep, raw = raw[:i], raw[i:i+1], raw[i+1:]
		} else {
			raw = ""
		}
		switch {
		case pair == "":
		case drop(pair):
			dropped = true
		default:
			if b.Len() > 0 {
				b.WriteString(before)
			}
			b.WriteString(pair)
		}
		before = sep
	}
	return b.String(), dropped
}
