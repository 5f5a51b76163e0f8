package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/yard-api/yard"
)

// Request bodies are read here: decode is the one JSON decoder of the API
// (docs/api.md, "Strict input"); readBody gives the raw body to the
// readers of other formats (XML orders, a text/plain cancel, sign-in
// forms).

// decode reads the JSON body of r into a T: the media type must be JSON
// (requireJSON), the body at most MaxBodyBytes (413 past it), and the
// document strict (unmarshalStrict). A T that embeds sent also gets the
// body as received and its null members.
func decode[T any](r *http.Request) (T, error) {
	var zero T
	if err := requireJSON(r); err != nil {
		return zero, err
	}
	body, err := readBody(r)
	if err != nil {
		return zero, err
	}
	return unmarshalStrict[T](body)
}

// decodeOptional is decode for a body that may be left out: an empty body
// (or one of white space) is the zero T, whatever its Content-Type.
func decodeOptional[T any](r *http.Request) (T, error) {
	var zero T
	body, err := readBody(r)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return zero, err
	}
	if err := requireJSON(r); err != nil {
		return zero, err
	}
	return unmarshalStrict[T](body)
}

// unmarshalStrict decodes a JSON document, a body already read (or a
// member of one), into a T by the rules of decode: the document must be
// well-formed UTF-8 with nothing after it; no object may hold two members
// whose names are equal or differ only in case; member names match struct
// fields exactly, and unknown members are refused. Errors say where (line,
// column) and name the member, never echoing a value. A T that embeds
// sent gets the document and its null members.
func unmarshalStrict[T any](body []byte) (T, error) {
	var v T
	// One strict pass over the body, which also finds its null members.
	nulls, err := scanJSON(body)
	if err != nil {
		return v, err
	}
	// The decoder leaves a struct as it is for a document of null; such a
	// body is no object, as [] is not (as a merge patch, RFC 7396, it
	// would remove the whole resource).
	if k := reflect.TypeFor[T]().Kind(); (k == reflect.Struct || k == reflect.Map) && string(bytes.TrimSpace(body)) == "null" {
		return v, yard.Invalid("A field has the wrong type.", yard.FieldError{Field: "(document)", Message: "must be an object, not null"})
	}
	if err := jsonv2.Unmarshal(body, &v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return v, jsonError(body, err)
	}
	if s, ok := any(&v).(interface{ setSent([]byte, []string) }); ok {
		s.setSent(body, nulls)
	}
	return v, nil
}

// sent, embedded in a body type (tagged json:"-"), gives it what decode
// saw of the body besides its members: the body as received (a schedule
// PATCH hashes it) and the names of the top-level members sent as null
// (in a merge patch, RFC 7396, null removes a member).
type sent struct {
	raw   []byte
	nulls []string
}

func (b *sent) setSent(raw []byte, nulls []string) { b.raw, b.nulls = raw, nulls }

// isNull reports whether the top-level member name was sent as null.
func (b sent) isNull(name string) bool { return slices.Contains(b.nulls, name) }

// orEmpty is p, the string member name, or "" when it was sent as null: in
// a merge patch null removes a member (RFC 7396), and a removed string is
// empty.
func (b sent) orEmpty(p *string, name string) *string {
	if b.isNull(name) {
		return new(string)
	}
	return p
}

// refuseNulls refuses null for the members other than the allowed
// (optional) ones: a merge patch null removes a member, and a required
// one cannot be removed. Every write body with required fields asks it
// (cars, garages, dogs, people, webhooks).
func (b sent) refuseNulls(allowed ...string) error {
	var f []yard.FieldError
	for _, k := range b.nulls {
		f = fieldIf(f, !slices.Contains(allowed, k), k, "cannot be null")
	}
	return sortedInvalid("A required field cannot be null (in a merge patch, null removes a member).", f)
}

// fieldIf appends the problem entry of field to fields when bad holds.
func fieldIf(fields []yard.FieldError, bad bool, field, message string) []yard.FieldError {
	if bad {
		fields = append(fields, yard.FieldError{Field: field, Message: message})
	}
	return fields
}

// sortedInvalid is the EINVALID error of the field problems f, in the
// order of their field names; nil when there are none.
func sortedInvalid(message string, f []yard.FieldError) error {
	if len(f) == 0 {
		return nil
	}
	slices.SortStableFunc(f, func(a, b yard.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return yard.Invalid(message, f...)
}

// setIf sets *dst to *src when src is not nil: a member a body sent
// replaces the stored value.
func setIf[T any](dst, src *T) {
	if src != nil {
		*dst = *src
	}
}

// readBody reads a request body; over MaxBodyBytes is 413 (the
// *http.MaxBytesError goes to s.error as it is), any other failure 400.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, yard.Errorf(yard.EMALFORMED, "The request body could not be read.")
	}
	return body, nil
}

// scanJSON checks that body is one strict JSON document (unmarshalStrict)
// without decoding it into anything and, in the same pass, returns the
// names of the top-level object's members whose value is null (sent): a
// write body is read once, not once per question asked of it.
func scanJSON(body []byte) (nulls []string, err error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, yard.Errorf(yard.EMALFORMED, "The request body is empty; a JSON document is required.")
	}
	sc := scanners.Get().(*scanner)
	defer sc.release(len(body))
	sc.in = *bytes.NewBuffer(body) // the decoder reads a bytes.Buffer in place
	sc.dec.Reset(&sc.in)
	dec := &sc.dec
	// sc.levels[i] is the i-th open container (its member names when it
	// is an object); depth is how many are open.
	depth := 0
	topName := "" // the top-level object's member whose value comes next
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, jsonError(body, err)
		}
		kind := tok.Kind()
		if kind == '"' && depth > 0 && sc.levels[depth-1].object {
			// A string token at an odd position of an object is a name.
			if _, length := dec.StackIndex(dec.StackDepth()); length%2 == 1 {
				name := tok.String()
				if !sc.levels[depth-1].add(name) {
					return nil, duplicateError(body, dec.StackPointer(), dec.InputOffset())
				}
				if depth == 1 {
					topName = name
				}
				continue
			}
		}
		if depth == 1 && sc.levels[0].object && kind == 'n' {
			nulls = append(nulls, topName)
		}
		switch kind {
		case '{', '[':
			if depth == len(sc.levels) {
				sc.levels = append(sc.levels, memberNames{})
			}
			sc.levels[depth].reset(kind == '{')
			depth++
		case '}', ']':
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, yard.Errorf(yard.EMALFORMED, "The request body holds data after the JSON document (offset %d).", dec.InputOffset())
	}
	return nulls, nil
}

// scanner is scanJSON's reusable state: a request body's check allocates
// no decoder and, for the small objects of a write, no map. The decoder
// reads the body where it is, so a scanner keeps no copy of one.
type scanner struct {
	in     bytes.Buffer
	dec    jsontext.Decoder
	levels []memberNames
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}

// release returns the scanner to the pool, dropping what it refers to,
// unless it read a large or deep document: the decoder's own state grows
// with the objects it read, and the pool keeps only what a write needs.
func (sc *scanner) release(size int) {
	if size > 64<<10 || len(sc.levels) > 64 {
		return
	}
	sc.in = bytes.Buffer{}
	sc.dec.Reset(&sc.in)
	for i := range sc.levels {
		sc.levels[i].reset(false)
	}
	scanners.Put(sc)
}

// memberNames are an open object's member names folded to lower case: a
// list while the object is small, a set past memberListMax members (a
// hostile object of many members costs no more than a map).
type memberNames struct {
	object bool
	list   []string
	set    map[string]bool
}

const memberListMax = 16

func (m *memberNames) reset(object bool) {
	m.object = object
	clear(m.list)
	m.list = m.list[:0]
	m.set = nil
}

// add records name; false when the object already has a member of that
// name, ignoring case.
func (m *memberNames) add(name string) bool {
	key := strings.ToLower(name) // no copy for a name without upper case
	if m.set != nil {
		if m.set[key] {
			return false
		}
		m.set[key] = true
		return true
	}
	if slices.Contains(m.list, key) {
		return false
	}
	if len(m.list) < memberListMax {
		m.list = append(m.list, key)
		return true
	}
	m.set = make(map[string]bool, 2*memberListMax)
	for _, k := range m.list {
		m.set[k] = true
	}
	m.set[key] = true
	return true
}

// duplicateError is the error for a member at ptr (its name at offset off
// of body) whose name, ignoring case, an earlier member of the same object
// already has.
func duplicateError(body []byte, ptr jsontext.Pointer, off int64) error {
	field := pointerField(ptr)
	line, col := position(body, off)
	return yard.Invalid(fmt.Sprintf("The JSON object at line %d, column %d has a member twice (names differing only in case are the same member).", line, col),
		yard.FieldError{Field: field, Message: "appears more than once in its object (names are compared ignoring case)"})
}

// pointerField renders an RFC 6901 JSON pointer as a field path:
// "/barks/next" is "barks.next".
func pointerField(p jsontext.Pointer) string {
	parts := slices.Collect(p.Tokens())
	if len(parts) == 0 {
		return "(document)"
	}
	return strings.Join(parts, ".")
}

// jsonError turns an error of the JSON decoder over body, a body already
// read, into its problem: where it is, never what was sent.
func jsonError(body []byte, err error) error {
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		line, col := position(body, int64(len(body))+1)
		return yard.Errorf(yard.EMALFORMED, "Malformed JSON at line %d, column %d (offset %d): the document ends too early.", line, col, len(body))
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return duplicateError(body, syn.JSONPointer, syn.ByteOffset+1)
	case errors.As(err, &syn):
		line, col := position(body, syn.ByteOffset+1)
		msg := "syntax error"
		if syn.Err != nil {
			// The decoder quotes bad input between backquotes: drop it, a
			// problem never echoes what was sent.
			msg = strings.Join(strings.Fields(quotedInput.ReplaceAllString(syn.Err.Error(), "")), " ")
		}
		return yard.Errorf(yard.EMALFORMED, "Malformed JSON at line %d, column %d (offset %d): %s.", line, col, syn.ByteOffset, msg)
	case errors.As(err, &sem) && errors.Is(sem.Err, jsonv2.ErrUnknownName):
		return yard.Invalid("The request body has an unknown field.",
			yard.FieldError{Field: pointerField(sem.JSONPointer), Message: "is not a field of this resource (names match exactly, case included)"})
	case errors.As(err, &sem):
		field := pointerField(sem.JSONPointer)
		want := "of another type"
		t := sem.GoType
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil {
			want = cmp.Or(goKinds[t.Kind()], t.Kind().String())
		}
		got := kindNames[sem.JSONKind]
		if got == "number" && want == "a number" {
			return yard.Invalid("A field has a number out of range.", yard.FieldError{Field: field, Message: "must be a whole number in range"})
		}
		msg := "must be " + want
		if got != "" {
			msg += ", not " + got
		}
		return yard.Invalid("A field has the wrong type.", yard.FieldError{Field: field, Message: msg})
	}
	return yard.Errorf(yard.EMALFORMED, "Malformed JSON.")
}

var quotedInput = regexp.MustCompile("`[^`]*`")

// kindNames name the JSON kinds as the type errors do.
var kindNames = map[jsontext.Kind]string{'"': "string", '0': "number", 't': "bool", 'f': "bool", 'n': "null", '{': "object", '[': "array"}

// goKinds name what a Go kind takes in JSON; the others go by their Go
// name.
var goKinds = map[reflect.Kind]string{
	reflect.String: "a string", reflect.Bool: "true or false", reflect.Slice: "an array", reflect.Struct: "an object", reflect.Map: "an object",
	reflect.Int: "a number", reflect.Int64: "a number", reflect.Int32: "a number", reflect.Float64: "a number", reflect.Uint: "a number", reflect.Uint64: "a number",
}

// position is the line and the column (in bytes), each from 1, of the
// byte at offset off-1 of body.
func position(body []byte, off int64) (line, col int) {
	before := body[:min(max(off-1, 0), int64(len(body)))]
	return 1 + bytes.Count(before, []byte("\n")), len(before) - bytes.LastIndexByte(before, '\n')
}

// mergePatch is the patch format every PATCH of the API takes (RFC 7396),
// as its 415 answers say in Accept-Patch (RFC 5789 §3.1).
const mergePatch = "application/merge-patch+json"

// requireJSON refuses a request body whose media type is not JSON. A PATCH
// body is a patch document whose media type says how to apply it (RFC 5789
// §2): only a merge patch, sent as application/merge-patch+json or
// application/json, is taken; another (application/json-patch+json) is
// 415 rather than read as a merge patch.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if r.Method == http.MethodPatch && (err != nil || (mt != "application/json" && mt != mergePatch)) {
		e := yard.Errorf(yard.EUNSUPPORTED, "A PATCH body is a JSON merge patch (RFC 7396), sent as %s or application/json, not %q.", mergePatch, ct)
		e.AcceptPatch = mergePatch + ", application/json"
		return e
	}
	if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return yard.Errorf(yard.EUNSUPPORTED, "Send the body as application/json, not %q.", ct)
	}
	// JSON is UTF-8 (RFC 8259 §8.1); a body declared in another charset is
	// refused rather than read as if it were UTF-8.
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return yard.Errorf(yard.EUNSUPPORTED, "JSON bodies must be UTF-8; charset %q is not accepted.", cs)
	}
	return nil
}

// ParseTimestamp reads a request timestamp: an RFC 3339 string or a number
// of Unix seconds; 0 means now (docs/api.md, HTTP).
func ParseTimestamp(raw json.RawMessage, now time.Time) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, errors.New("is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, errors.New("must be an RFC 3339 string or Unix seconds")
		}
		if s == "0" {
			return now, nil
		}
		// RFC 3339 §5.6 allows a lower-case t and z.
		t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
		if err != nil {
			return time.Time{}, errors.New("must be an RFC 3339 string or Unix seconds")
		}
		return t.UTC(), nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > 1e11 {
		return time.Time{}, errors.New("must be an RFC 3339 string or Unix seconds")
	}
	if f == 0 {
		return now, nil
	}
	return time.UnixMilli(int64(f * 1000)).UTC(), nil
}
