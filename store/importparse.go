package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/yard-api/yard"
)

// Reading one line of an import: the line parsed (parseLineFast, or
// encoding/json for anything but the common shape), checked, given an id
// when it has none, and added to its batch; what is wrong said in words.

// importLine is one NDJSON line of `yard import`.
type importLine struct {
	Kind   string  `json:"kind"`
	ID     string  `json:"id"`
	Name   string  `json:"name"`  // garage
	State  string  `json:"state"` // garage
	Color  string  `json:"color"`
	Type   string  `json:"type"`
	Doors  int     `json:"doors"`
	Make   string  `json:"make"`
	Model  string  `json:"model"`
	Year   int     `json:"year"`
	Garage *string `json:"garage"`

	hasDoors bool // the line gives doors (a car's doors are required, as in the API)
}

// importKey is the index of a member a line may hold, spelled exactly,
// or -1.
func importKey(name string) int {
	for i, k := range [...]string{"kind", "id", "name", "state", "color", "type", "doors", "make", "model", "year", "garage"} {
		if k == name {
			return i
		}
	}
	return -1
}

// parse reads one non-empty line into the batch. Its errors are
// *ImportError without the line number, or errors of the store.
func (im *importer) parse(ctx context.Context, line []byte, b *importBatch) error {
	b.lines++
	var l importLine
	if !parseLineFast(line, &l, im.interned.intern) {
		var err *ImportError
		if l, err = decodeLine(line); err != nil {
			return err
		}
	}
	switch l.Kind {
	case "garage":
		if l.Color != "" || l.Type != "" || l.hasDoors || l.Make != "" || l.Model != "" || l.Year != 0 || l.Garage != nil {
			return &ImportError{Msg: describeLine("garage", l.ID) + "only kind, id, name and state belong on a garage line"}
		}
		g := &yard.Garage{ID: l.ID, Name: l.Name, State: l.State}
		if err := g.Validate(); err != nil {
			return &ImportError{Msg: describeLine("garage", l.ID) + describeInvalid(err), Err: err}
		}
		if g.ID == "" {
			g.ID = im.newImportID("garage", l.Name, l.State)
		}
		b.garageLines++
		b.garages = putByID(b.garages, b.garageAt, g.ID, g)
		im.states[g.ID] = strings.ToLower(g.State)
	case "car":
		if l.Name != "" || l.State != "" {
			return &ImportError{Msg: describeLine("car", l.ID) + "name and state belong on a garage line"}
		}
		if !l.hasDoors {
			return &ImportError{Msg: describeLine("car", l.ID) + "doors is required (a whole number from 0 to 16)"}
		}
		c := &yard.Car{ID: l.ID, Color: l.Color, Type: l.Type, Doors: l.Doors, Make: l.Make, Model: l.Model, Year: l.Year}
		if l.Garage != nil {
			c.Garage = *l.Garage
		}
		if err := c.Validate(); err != nil {
			return &ImportError{Msg: describeLine("car", l.ID) + describeInvalid(err), Err: err}
		}
		if c.Garage != "" {
			known, err := im.knowGarage(ctx, c.Garage)
			if err != nil {
				return err
			}
			if !known {
				return &ImportError{Msg: describeLine("car", l.ID) + fmt.Sprintf("garage %q is unknown: define it on an earlier line or import it first", c.Garage)}
			}
		}
		if c.ID == "" {
			c.ID = im.newImportID("car", c.Color, c.Type, strconv.Itoa(c.Doors), c.Make, c.Model, strconv.Itoa(c.Year), c.Garage)
		}
		b.carLines++
		b.cars = putByID(b.cars, b.carAt, c.ID, importedCar{c, im.states[c.Garage]})
	case "":
		return &ImportError{Msg: `no "kind": it must be "garage" or "car"`}
	default:
		return &ImportError{Msg: fmt.Sprintf("kind must be \"garage\" or \"car\", not %q", l.Kind)}
	}
	return nil
}

// decodeLine reads a line that is not of the common shape: encoding/json
// decides and words what is wrong, then the line is held to the API's
// strict rules (docs/api.md, "Strict input"), which encoding/json does
// not keep: member names spelled exactly, none twice, valid UTF-8.
func decodeLine(line []byte) (importLine, *ImportError) {
	var l importLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, &ImportError{Msg: describeJSONError(err), Err: err}
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return l, &ImportError{Msg: fmt.Sprintf("not JSON: more after the object, at column %d", int(dec.InputOffset())+1)}
	}
	var members map[string]jsontext.Value
	if err := jsonv2.Unmarshal(line, &members); err != nil {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName) {
			return l, &ImportError{Msg: fmt.Sprintf("member %q is given twice", syn.JSONPointer.LastToken()), Err: err}
		}
		return l, &ImportError{Msg: "not JSON: invalid UTF-8", Err: err}
	}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if importKey(name) < 0 {
			return l, &ImportError{Msg: unknownField(strconv.Quote(name))}
		}
	}
	l.hasDoors = members["doors"] != nil && members["doors"].Kind() != 'n'
	return l, nil
}

// newImportID returns the id of an id-less line of the kind with these
// field values: "car-" or "garage-" and 20 hex digits of a SHA-256 over
// the kind, the values and how many identical id-less lines the import
// has seen before this one. The same file imported again gives the same
// ids; so does any file holding the same id-less lines in any order.
func (im *importer) newImportID(kind string, values ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, v := range values {
		h.Write([]byte{0})
		h.Write([]byte(v))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	n := im.seen[key]
	im.seen[key] = n + 1
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(n)))
	return kind + "-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// describeLine starts the message about a line: `car "c1": ` or `car: `.
func describeLine(kind, id string) string {
	if id == "" || !yard.ValidClientID(id) {
		return kind + ": "
	}
	return fmt.Sprintf("%s %q: ", kind, id)
}

// describeInvalid says in words what a validation error found wrong:
// "year must be ...; doors must be ...".
func describeInvalid(err error) string {
	var ye *yard.Error
	if !errors.As(err, &ye) {
		return err.Error()
	}
	if len(ye.Fields) == 0 {
		return ye.Message
	}
	parts := make([]string, len(ye.Fields))
	for i, f := range ye.Fields {
		parts[i] = f.Field + " " + f.Message
	}
	return strings.Join(parts, "; ")
}

// describeJSONError says in words why a line is not the JSON object an
// import expects.
func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "not JSON: the line ends inside the object"
	case errors.As(err, &syn):
		what := "unexpected input"
		if _, rest, ok := strings.Cut(syn.Error(), "invalid character "); ok {
			// 'o' in literal null (expecting 'u') → unexpected 'o'
			if i := strings.LastIndex(rest, "' "); i > 0 && rest[0] == '\'' {
				what = "unexpected " + rest[:i+1]
			}
		}
		return fmt.Sprintf("not JSON: %s at column %d", what, syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "not a JSON object (each line is one garage or car object)"
		}
		want := "a string"
		switch typ.Type.Kind() {
		case reflect.Int:
			want = "a whole number"
		case reflect.Pointer:
			want = "a string or null"
		}
		return fmt.Sprintf("%s must be %s, not %s", typ.Field, want, typ.Value)
	case strings.HasPrefix(msg, "json: unknown field "):
		return unknownField(strings.TrimPrefix(msg, "json: unknown field "))
	}
	return "not JSON: " + strings.TrimPrefix(msg, "json: ")
}

// unknownField says that a line holds the member named quoted (a JSON
// string) and which members a line may hold.
func unknownField(quoted string) string {
	return "unknown field " + quoted +
		" (a garage line has kind, id, name, state; a car line has kind, id, color, type, doors, make, model, year, garage)"
}

// knowGarage reports whether garage id was defined by the import or is
// stored, learning its state from the store in the second case.
func (im *importer) knowGarage(ctx context.Context, id string) (bool, error) {
	if _, ok := im.states[id]; ok {
		return true, nil
	}
	var state string
	err := im.db.read.QueryRowContext(ctx, `SELECT state_key FROM garages WHERE id = $1`, id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	im.states[id] = state
	return true, nil
}

// parseLineFast reads an import line of the common shape into l without
// encoding/json's reflection: one object of the known keys, spelled
// exactly, each once, with plain string values (no escapes), whole numbers
// of up to nine digits, and null for garage. It reports false for anything
// else, and the caller then decodes the line with decodeLine, which
// accepts or refuses it and words the error (docs/cars.md, "How an import
// is made fast"). When it reports true, l is what decodeLine decodes
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
	var seen uint16 // the keys read so far, by importKey
	for {
		key, next, ok := plainString(line, i)
		if !ok {
			return false
		}
		k := importKey(string(key))
		if k < 0 || seen&(1<<k) != 0 {
			return false // unknown, spelled otherwise, or given twice
		}
		seen |= 1 << k
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
				l.Doors, l.hasDoors = n, true
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
