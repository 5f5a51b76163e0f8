package yard

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The query string of every list is read by one rule (docs/api.md, "Query
// parameters of lists"), ReadQuery:
//
//   - pairs are separated by '&' or ';'; empty pairs are skipped; each is
//     name=value, percent-decoded ('+' is a space);
//   - names are case-sensitive, as documented: max pages, MAX is an
//     unknown parameter (the car grammar's field paths ignore case, a rule
//     of that grammar, docs/cars.md);
//   - offset and max page, each at most once (Paging);
//   - every other name is a parameter of the list or unknown, which is
//     400 like any bad parameter;
//   - every refusal is ParamError: 400 validation naming the parameter.
//
// The query variables of the authentication schemes are not the list's:
// the HTTP layer takes them out before the list reads its query.

// Page selects a window of a collection (docs/api.md, "Paging": offset
// default 0, max default 20, at most 100).
type Page struct {
	Offset int
	Max    int
}

// Paging defaults and limits of every list but the events'.
const (
	DefaultPageMax = 20
	MaxPageMax     = 100
)

// MaxCount is the largest paging value: larger ones read as it (an offset
// that far is past the end of any list).
const MaxCount = 1<<31 - 1

// Paging is how a list pages. Its zero value is the paging of every list
// but the events' (DefaultPageMax, MaxPageMax, with offset).
type Paging struct {
	// DefaultMax is the max of a query without one; 0 is DefaultPageMax.
	DefaultMax int
	// Limit is the largest max: a larger one is cut to it, not refused;
	// 0 is MaxPageMax.
	Limit int
	// NoOffset is set for a list that pages by a cursor of its own (the
	// events' after): offset is then not one of its parameters.
	NoOffset bool
}

// The reasons a parameter is refused, each the message of its FieldError.
const (
	// UnknownParam: the list has no parameter of that name.
	UnknownParam = "unknown parameter"
	// RepeatedParam: a parameter that takes one value was given twice.
	RepeatedParam = "given more than once"
	// NotACount: a paging value is not a whole number, 0 or more.
	NotACount = "must be a whole number, 0 or more"
	// BadValueEscape: a value is not correctly percent-encoded.
	BadValueEscape = "the value is not correctly percent-encoded"
)

// ParamError is the refusal of a query parameter: 400 validation whose
// one field error names the parameter and says why.
func ParamError(name, why string) *Error {
	if len(name) > 100 {
		name = name[:100] + "..."
	}
	return &Error{Code: EINVALID, Message: fmt.Sprintf("Bad query parameter %q: %s.", name, why),
		Fields: []FieldError{{Field: name, Message: why}}}
}

// ReadQuery reads the raw (still percent-encoded) query string of a list by
// the one rule above: offset and max go to the page, the paging's default
// and limit applied; every other pair goes to param with its name, decoded,
// and its value as sent (a grammar splits it before decoding: the car
// grammar's commas). param returns why it refuses the pair, "" when it
// takes it, UnknownParam when the list has no such parameter; a nil param
// takes nothing (a list of offset and max only). The first refused pair is
// the error, a ParamError.
func ReadQuery(raw string, paging Paging, param func(name, rawValue string) string) (Page, error) {
	page := Page{Max: cmp.Or(paging.DefaultMax, DefaultPageMax)}
	limit := cmp.Or(paging.Limit, MaxPageMax)
	var seenOffset, seenMax bool
	// Empty pairs are no fields.
	for pair := range strings.FieldsFuncSeq(raw, func(c rune) bool { return c == '&' || c == ';' }) {
		rawName, rawValue, hasEq := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return Page{}, ParamError(rawName, "the name is not correctly percent-encoded")
		}
		if !hasEq {
			return Page{}, ParamError(name, "a pair needs the form name=value")
		}
		var why string
		switch {
		case name == "max":
			why = readCount(&page.Max, &seenMax, rawValue)
			page.Max = min(page.Max, limit)
		case name == "offset" && !paging.NoOffset:
			why = readCount(&page.Offset, &seenOffset, rawValue)
		case param == nil:
			why = UnknownParam
		default:
			why = param(name, rawValue)
		}
		if why != "" {
			return Page{}, ParamError(name, why)
		}
	}
	return page, nil
}

// readCount reads a paging value into n, once (seen): one or more ASCII
// digits and nothing else (no sign, no space), saturating at MaxCount.
func readCount(n *int, seen *bool, rawValue string) string {
	if *seen {
		return RepeatedParam
	}
	*seen = true
	v, err := url.QueryUnescape(rawValue)
	if err != nil {
		return BadValueEscape
	}
	if v == "" {
		return NotACount
	}
	c := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return NotACount
		}
		if c = c*10 + int(v[i]-'0'); c > MaxCount {
			c = MaxCount
		}
	}
	*n = c
	return ""
}

// ReadParams is ReadQuery for a list whose own parameters are names, each
// taking one value: it returns their values, decoded, by name (a name
// left out is not in the map).
func ReadParams(raw string, paging Paging, names ...string) (Page, map[string]string, error) {
	vals := map[string]string{}
	page, err := ReadQuery(raw, paging, func(name, rawValue string) string {
		if !slices.Contains(names, name) {
			return UnknownParam
		}
		if _, ok := vals[name]; ok {
			return RepeatedParam
		}
		v, err := url.QueryUnescape(rawValue)
		if err != nil {
			return BadValueEscape
		}
		vals[name] = v
		return ""
	})
	return page, vals, err
}
