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
	vars := s.Auth.QueryVars()
	if raw == "" || len(vars) == 0 {
		return raw
	}
	pairs := strings.FieldsFunc(raw, func(c rune) bool { return c == '&' || c == ';' })
	kept := pairs[:0:0]
	for _, pair := range pairs {
		rawName, _, hasEq := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		name = strings.ToLower(name)
		if hasEq && err == nil && slices.ContainsFunc(vars, func(v string) bool { return strings.ToLower(v) == name }) {
			continue
		}
		kept = append(kept, pair)
	}
	if len(kept) == len(pairs) {
		return raw
	}
	return strings.Join(kept, "&")
}
