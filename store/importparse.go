package store

import (
	"unicode/utf8"
)

// parseLineFast reads an import line of the common shape into l without
// encoding/json's reflection: one object of the known keys, spelled
// exactly, with plain string values (no escapes), whole numbers of up to
// nine digits, and null for garage. It reports false for anything else,
// and the caller then decodes the line with encoding/json, which accepts
// or refuses it and words the error (docs/cars.md, "How an import is made
// fast"). When it reports true, l is what encoding/json would have
// decoded, with DisallowUnknownFields and nothing after the object
// (TestParseLineFastMatchesJSON).
//
// intern returns a string of the bytes, shared by equal values (colours,
// makes, models: a handful of values over a million lines).
func parseLineFast(line []byte, l *importLine, intern func([]byte) string) bool {
	*l = importLine{}
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipSpace(line, i+1) == len(line)
	}
	for {
		key, next, ok := plainString(line, i)
		if !ok {
			return false
		}
		i = skipSpace(line, next)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return false
		}
		switch string(key) {
		case "doors", "year":
			n, next, ok := plainInt(line, i)
			if !ok {
				return false
			}
			if key[0] == 'd' {
				l.Doors = n
			} else {
				l.Year = n
			}
			i = next
		case "garage":
			if line[i] == 'n' {
				if len(line)-i < 4 || string(line[i:i+4]) != "null" {
					return false
				}
				l.Garage, i = nil, i+4
				break
			}
			v, next, ok := plainString(line, i)
			if !ok {
				return false
			}
			s := string(v)
			l.Garage, i = &s, next
		default:
			v, next, ok := plainString(line, i)
			if !ok {
				return false
			}
			switch string(key) {
			case "kind":
				l.Kind = intern(v)
			case "id":
				l.ID = string(v)
			case "name":
				l.Name = string(v)
			case "state":
				l.State = intern(v)
			case "color":
				l.Color = intern(v)
			case "type":
				l.Type = intern(v)
			case "make":
				l.Make = intern(v)
			case "model":
				l.Model = intern(v)
			default:
				return false // unknown, or a known key spelled otherwise
			}
			i = next
		}
		// A number ends at the first byte that is not a digit: that byte
		// must be a separator, like after any other value.
		i = skipSpace(line, i)
		if i >= len(line) {
			return false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return skipSpace(line, i+1) == len(line)
		default:
			return false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at b[i] when it has no escapes and no
// control bytes and is valid UTF-8 (so that encoding/json would return its
// bytes as they are): its contents and the index after the closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// plainInt reads the JSON number at b[i] when it is a whole number of at
// most nine digits, without fraction or exponent: its value and the index
// after it.
func plainInt(b []byte, i int) (int, int, bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start, n := i, 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 9 || (digits > 1 && b[start] == '0') {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// interner shares the strings of repeated values: at most maxInterned of
// them, so that a file of distinct values does not grow it without bound.
type interner map[string]string

const maxInterned = 4096

func (m interner) intern(b []byte) string {
	if s, ok := m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(m) < maxInterned {
		m[s] = s
	}
	return s
}
