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
	// Each kept pair keeps the separator ('&' or ';') written before it,
	// so links built from the query keep the client's separators.
	var b strings.Builder
	dropped := false
	before := "&"
	for rest := raw; ; {
		pair, sep := rest, ""
		if i := strings.IndexAny(rest, "&;"); i >= 0 {
			pair, sep, rest = rest[:i], rest[i:i+1], rest[i+1:]
		}
		rawName, _, hasEq := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		name = strings.ToLower(name)
		switch {
		case pair == "":
		case hasEq && err == nil && slices.ContainsFunc(vars, func(v string) bool { return strings.ToLower(v) == name }):
			dropped = true
		default:
			if b.Len() > 0 {
				b.WriteString(before)
			}
			b.WriteString(pair)
		}
		if sep == "" {
			break
		}
		if pair != "" {
			before = sep
		}
	}
	if !dropped {
		return raw
	}
	return b.String()
}
