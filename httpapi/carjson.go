package httpapi

import (
	"strconv"
	"unicode/utf8"
)

// Cars are the API's hottest representation (a page of 20 per list), so
// they are written by hand rather than by encoding/json's reflection:
// appendJSON gives exactly the bytes marshalJSON gives for the same value
// (TestCarJSONMatchesEncodingJSON holds them together on random cars).

// appendJSON appends the car's JSON representation.
func (v carView) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, v.ID)
	b = append(b, `,"color":`...)
	b = appendJSONString(b, v.Color)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, v.Type)
	b = append(b, `,"doors":`...)
	b = strconv.AppendInt(b, int64(v.Doors), 10)
	b = append(b, `,"make":`...)
	b = appendJSONString(b, v.Make)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, v.Model)
	b = append(b, `,"year":`...)
	b = strconv.AppendInt(b, int64(v.Year), 10)
	b = append(b, `,"garage":`...)
	if v.Garage == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *v.Garage)
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with appendJSON.
func (v carView) MarshalJSON() ([]byte, error) { return v.appendJSON(make([]byte, 0, 160)), nil }

// appendJSON appends the page's JSON body: members in the order
// encoding/json gives the struct's fields.
func (p carPage) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	if len(p.Facets) > 0 {
		b = append(b, `"facets":`...)
		b = p.Facets.appendJSON(b)
		b = append(b, ',')
	}
	b = append(b, `"items":`...)
	if p.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range p.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.appendJSON(b)
		}
		b = append(b, ']')
	}
	b = append(b, `,"max":`...)
	b = strconv.AppendInt(b, int64(p.Max), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, int64(p.Offset), 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

// plainASCII holds the ASCII bytes a JSON string keeps as they are: one
// load per byte where three comparisons were (a car page's strings are
// nearly all plain).
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string the way encoding/json does
// without HTML escaping (marshalJSON): `"` and `\` escaped, control
// characters as \b \f \n \r \t or \u00XX, U+2028 and U+2029 as \u2028 and
// \u2029, each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
