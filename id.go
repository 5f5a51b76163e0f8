package yard

import (
	"net/url"
	"strings"

	"github.com/google/uuid"
)

// NewID returns a new opaque identifier (a UUIDv7, so ids sort by creation).
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// ReservedIDs are path words that are never identifiers (docs/api.md, HTTP).
var ReservedIDs = []string{"search", "all", "by-parameters", "by-vendor"}

// ValidClientID reports whether a client-chosen id is acceptable: 1-64
// characters of letters, digits, '-', '_' and '.', not starting with '-' or
// '.', and not a reserved word.
func ValidClientID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '-' || id[0] == '.' {
		return false
	}
	for _, w := range ReservedIDs {
		if strings.EqualFold(id, w) {
			return false
		}
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Page selects a window of a collection (docs/api.md, HTTP: offset default 0, max
// default 20, at most 100).
type Page struct {
	Offset int
	Max    int
}

// The one paging rule of every list (docs/api.md, "Paging"): offset and
// max each at most once, each a whole number, 0 or more, written in ASCII
// digits and nothing else (no sign, no space); max above MaxPageMax is cut
// to it, and a value above MaxCount reads as MaxCount (an offset that far
// is past the end of any list). Every parser of a list's query string uses
// these.

// MaxCount is the largest paging value: larger ones read as it.
const MaxCount = 1<<31 - 1

// ParseCount reads a paging value: one or more ASCII digits, saturating
// at MaxCount.
func ParseCount(v string) (int, bool) {
	if v == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		if n = n*10 + int(v[i]-'0'); n > MaxCount {
			n = MaxCount
		}
	}
	return n, true
}

// SetValue records the raw value v of the paging parameter name ("offset"
// or "max", lower case) in p, a max cut to MaxPageMax; a value that is not
// a count is a field error.
func (p *Page) SetValue(name, v string) *FieldError {
	n, ok := ParseCount(v)
	if !ok {
		return &FieldError{Field: name, Message: "must be a whole number, 0 or more"}
	}
	if name == "offset" {
		p.Offset = n
	} else {
		p.Max = min(n, MaxPageMax)
	}
	return nil
}

// ParsePage reads offset and max from a decoded query string by the paging
// rule; the page of a query without them is offset 0, max DefaultPageMax.
func ParsePage(q url.Values) (Page, error) {
	p := Page{Max: DefaultPageMax}
	var fields []FieldError
	for _, name := range []string{"offset", "max"} {
		vs := q[name]
		switch {
		case len(vs) > 1:
			fields = append(fields, FieldError{Field: name, Message: "given more than once"})
		case len(vs) == 1:
			if fe := p.SetValue(name, vs[0]); fe != nil {
				fields = append(fields, *fe)
			}
		}
	}
	if len(fields) > 0 {
		return p, Invalid("Bad paging values.", fields...)
	}
	return p, nil
}

// Paging defaults and limits.
const (
	DefaultPageMax = 20
	MaxPageMax     = 100
)
