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
	vars := s.queryVars
	if raw == "" || len(vars.names) == 0 {
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
		if !vars.mayHold(name) {
			return false
		}
		return slices.ContainsFunc(vars.names, func(v string) bool { return sameLower(v, name) })
	}
	// Most queries hold none: they are answered without a copy.
	if !anyPair(raw, isVar) {
		return raw
	}
	return dropPairs(raw, isVar)
}

// queryVarSet is the chain's query variables, with what turns most of a
// query's pairs away at once: a grammar query (color, make, max…) is
// checked against some fifteen names twice a request.
type queryVarSet struct {
	names   []string
	lengths uint64    // bit n: a name n bytes long
	first   [256]bool // a name's first byte, in lower case
	all     bool      // a name the two above cannot describe: mayHold is always true
}

func newQueryVarSet(names []string) *queryVarSet {
	v := &queryVarSet{names: names}
	for _, n := range names {
		if n == "" || len(n) >= 64 || !isASCII(n) {
			v.all = true
			continue
		}
		v.lengths |= 1 << len(n)
		v.first[asciiLower(n[0])] = true
	}
	return v
}

// mayHold reports whether name may be one of the names, as sameLower
// compares them; false only when it cannot be. A name that is not ASCII
// always may: its lower case can differ in length (KELVIN SIGN is k).
func (v *queryVarSet) mayHold(name string) bool {
	if v.all || !isASCII(name) {
		return true
	}
	return len(name) < 64 && v.lengths&(1<<len(name)) != 0 && v.first[asciiLower(name[0])]
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
		if asciiLower(a[i]) != asciiLower(b[i]) {
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
// just before it, so the client's separators survive.
func dropPairs(raw string, drop func(pair string) bool) string {
	var b strings.Builder
	before := ""
	for raw != "" {
		pair, sep := raw, ""
		if i := strings.IndexAny(raw, "&;"); i >= 0 {
			pair, sep, raw = raw[:i], raw[i:i+1], raw[i+1:]
		} else {
			raw = ""
		}
		if pair != "" && !drop(pair) {
			if b.Len() > 0 {
				b.WriteString(before)
			}
			b.WriteString(pair)
		}
		before = sep
	}
	return b.String()
}
