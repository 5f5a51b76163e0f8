// Package weblink reads the Link header field of RFC 8288 as the API's
// clients in this module need it (the console's pagers, the conformance
// kit's checks of the list links): the target of each relation type.
package weblink

import (
	"net/http"
	"strings"
)

// Targets returns, for each relation type named by the links of h's Link
// fields, the target of the first link that names it (RFC 8288 §3). A
// target is the URI reference between "<" and ">", so a comma inside it
// (a query such as facets=make,color) belongs to it, not to the list of
// links; so does a comma in a quoted parameter value. Relation types are
// compared case-insensitively (§2.1.1), so the keys are lower case.
func Targets(h http.Header) map[string]string {
	out := map[string]string{}
	for _, v := range h.Values("Link") {
		for {
			_, rest, ok := strings.Cut(v, "<")
			if !ok {
				break
			}
			target, rest, ok := strings.Cut(rest, ">")
			if !ok {
				break
			}
			var params string
			params, v = cutParams(rest)
			for _, rel := range relTypes(params) {
				if _, seen := out[rel]; !seen {
					out[rel] = target
				}
			}
		}
	}
	return out
}

// cutParams splits s, what follows a link's target, at the comma that ends
// the link's parameters: the first one outside a quoted string.
func cutParams(s string) (params, rest string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if quoted {
				i++
			}
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				return s[:i], s[i+1:]
			}
		}
	}
	return s, ""
}

// relTypes returns the relation types of a link's first rel parameter (a
// later one is ignored, §3.3), lower-cased.
func relTypes(params string) []string {
	for p := range strings.SplitSeq(params, ";") {
		name, value, ok := strings.Cut(p, "=")
		if ok && strings.EqualFold(strings.TrimSpace(name), "rel") {
			return strings.Fields(strings.ToLower(strings.Trim(strings.TrimSpace(value), `"`)))
		}
	}
	return nil
}
