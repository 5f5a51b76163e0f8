package console

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/yard-api/yard"
)

// The car query grammar as the console handles it (docs/cars.md, "The
// query grammar"): it never interprets a query, it only splits one into
// pairs, toggles a facet's value, and writes the same query in each URL
// shape and as a search body. The API parses and judges it.

// facetFields are the fields whose counts the car pages ask for.
var facetFields = []string{"make", "color", "type", "doors", "garage.state"}

// pair is one field=value pair of a raw query: values split on literal
// commas, still percent-encoded.
type pair struct {
	key    string
	values []string
}

// pagingKeys are the names of a list's query that are not filters.
var pagingKeys = map[string]bool{"offset": true, "max": true, "facets": true, "grammar": true}

// splitQuery splits a raw query on & and ; into its filter pairs, leaving
// out paging and the console's own names.
func splitQuery(raw string) []pair {
	var out []pair
	for _, part := range strings.FieldsFunc(raw, func(c rune) bool { return c == '&' || c == ';' }) {
		k, v, _ := strings.Cut(part, "=")
		if k == "" || pagingKeys[k] {
			continue
		}
		out = append(out, pair{key: k, values: strings.Split(v, ",")})
	}
	return out
}

// joinQuery writes pairs back as a raw query joined by sep.
func joinQuery(pairs []pair, sep string) string {
	var parts []string
	for _, p := range pairs {
		if len(p.values) == 0 {
			continue
		}
		parts = append(parts, p.key+"="+strings.Join(p.values, ","))
	}
	return strings.Join(parts, sep)
}

// decoded is a raw value percent-decoded ('+' is a space), or raw.
func decoded(raw string) string {
	if v, err := url.QueryUnescape(raw); err == nil {
		return v
	}
	return raw
}

// sameField compares field names as the grammar does (case and aliases,
// yard.CanonicalField); a name the grammar does not know matches itself.
func sameField(a, b string) bool {
	canon := func(s string) string {
		s = decoded(s)
		if path, ok := yard.CanonicalField(s); ok {
			return path
		}
		return strings.ToLower(s)
	}
	return canon(a) == canon(b)
}

// selected reports whether the query asks for field = value.
func selected(pairs []pair, field, value string) bool {
	return slices.ContainsFunc(pairs, func(p pair) bool {
		return sameField(p.key, field) && slices.ContainsFunc(p.values, func(v string) bool {
			return strings.EqualFold(decoded(v), value)
		})
	})
}

// toggle returns the query with field = value added, or removed when it
// is there.
func toggle(pairs []pair, field, value string) []pair {
	out := make([]pair, 0, len(pairs)+1)
	removed := false
	for _, p := range pairs {
		if !sameField(p.key, field) {
			out = append(out, p)
			continue
		}
		keep := slices.DeleteFunc(slices.Clone(p.values), func(v string) bool { return strings.EqualFold(decoded(v), value) })
		removed = removed || len(keep) < len(p.values)
		if len(keep) > 0 {
			out = append(out, pair{key: p.key, values: keep})
		}
	}
	if !removed {
		out = append(out, pair{key: field, values: []string{url.QueryEscape(value)}})
	}
	return out
}

// shape is one URL that answers a query.
type shape struct{ Label, URL string }

// shapes writes the query in each URL shape of a car list (docs/cars.md,
// "Paths").
func shapes(base, query string, pairs []pair) []shape {
	q := ""
	if query != "" {
		q = "?" + query
	}
	out := []shape{
		{"list", base + "/cars" + q},
		{"search", base + "/cars/search" + q},
		{"search/all", base + "/cars/search/all" + q},
		{"search/by-parameters", base + "/cars/search/by-parameters" + q},
	}
	if query != "" {
		out = append(out, shape{"the query as a path segment", base + "/search/" + joinQuery(pairs, ";")})
	}
	// The first make filter, named vendor.
	if i := slices.IndexFunc(pairs, func(p pair) bool { return sameField(p.key, "make") && !strings.HasPrefix(p.key, "q.") }); i >= 0 {
		vendor := slices.Clone(pairs)
		vendor[i].key = "vendor"
		out = append(out, shape{"search/by-vendor", base + "/cars/search/by-vendor?" + joinQuery(vendor, "&")})
	}
	return out
}

// searchBody writes the query as the body of POST /searches (docs/cars.md,
// "Search bodies"): included values under $eq, excluded ones under $ne,
// q.<path>.<op> under $<op>; numbers for doors and year, null for "in no
// garage".
func searchBody(pairs []pair, name string) map[string]any {
	ops := map[string]map[string]any{}
	add := func(op, path, raw string) {
		v := decoded(raw)
		var val any = v
		switch strings.ToLower(path) {
		case "doors", "year":
			if n, err := strconv.Atoi(v); err == nil {
				val = n
			}
		}
		if strings.HasPrefix(strings.ToLower(path), "garage") && strings.EqualFold(v, "null") {
			val = nil
		}
		if ops[op] == nil {
			ops[op] = map[string]any{}
		}
		// A second value of a path makes a list.
		if old, had := ops[op][path]; !had {
			ops[op][path] = val
		} else if list, ok := old.([]any); ok {
			ops[op][path] = append(list, val)
		} else {
			ops[op][path] = []any{old, val}
		}
	}
	for _, p := range pairs {
		key := decoded(p.key)
		if rest, ok := strings.CutPrefix(strings.ToLower(key), "q."); ok {
			if i := strings.LastIndex(rest, "."); i > 0 {
				for _, v := range p.values {
					add("$"+rest[i+1:], rest[:i], v)
				}
				continue
			}
		}
		for _, v := range p.values {
			if d, ok := strings.CutPrefix(v, "!"); ok {
				add("$ne", key, d)
			} else {
				add("$eq", key, v)
			}
		}
	}
	body := map[string]any{"$class": "car", "$q": ops}
	if name != "" {
		body["name"] = name
	}
	return body
}
