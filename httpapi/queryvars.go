package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	vars := s.deps.Auth.QueryVars()
	if raw == "" || len(vars) == 0 {
		return raw
	}
	kept, dropped := dropPairs(raw, func(pair string) bool {
		rawName, _, hasEq := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		name = strings.ToLower(name)
		return hasEq && err == nil && slices.ContainsFunc(vars, func(v string) bool { return strings.ToLower(v) == name })
	})
	if !dropped {
		return raw
	}
	return kept
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
