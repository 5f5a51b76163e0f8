package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

// Timestamp renders a time as the API does: RFC 3339, UTC, milliseconds.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// TimestampPtr renders a time, or nil for the zero time.
func TimestampPtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := Timestamp(t)
	return &s
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

// decodeJSON reads a JSON request body into v strictly: the media type must
// be JSON, unknown fields and trailing data are refused, and errors say where.
func decodeJSON(r *http.Request, v any) error {
	_, err := readJSON(r, v)
	return err
}

// readJSON is decodeJSON that also returns the body as received.
func readJSON(r *http.Request, v any) ([]byte, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return body, unmarshalStrict(body, v)
}

// readJSONBody reads a JSON request body, checked to be well-formed
// (checkJSON), for a parser of its own.
func readJSONBody(r *http.Request) ([]byte, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return body, checkJSON(body)
}

// readBody reads a request body; over MaxBodyBytes is 413 (the
// *http.MaxBytesError goes to s.error as it is), any other failure 400.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, yard.Errorf(yard.EMALFORMED, "The request body could not be read.")
	}
	return body, nil
}

// unmarshalStrict decodes a JSON document into v. It is the one JSON
// decoder of the API (docs/api.md, "Strict input"): the document must be
// well-formed UTF-8 with nothing after it; no object may hold two members
// whose names are equal or differ only in case; member names match struct
// fields exactly, and unknown members are refused. Errors say where (line,
// column) and name the member, never echoing a value.
func unmarshalStrict(body []byte, v any) error {
	if err := checkJSON(body); err != nil {
		return err
	}
	return unmarshalChecked(body, v)
}

// unmarshalChecked is unmarshalStrict for a body scanJSON has checked.
func unmarshalChecked(body []byte, v any) error {
	if err := jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return jsonError(body, err)
	}
	return nil
}

// checkJSON checks that body is one strict JSON document (see
// unmarshalStrict) without decoding it into anything, for parsers that read
// the body themselves.
func checkJSON(body []byte) error {
	_, err := scanJSON(body)
	return err
}

// scanJSON checks body as checkJSON does and, in the same pass, returns the
// names of the top-level object's members whose value is null (for
// nullFields): a write body is read once, not once per question asked of it.
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
					return nil, duplicateMember(body, dec, name)
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

// duplicateMember is the error for a member whose name, ignoring case,
// an earlier member of the same object already has.
func duplicateMember(body []byte, dec *jsontext.Decoder, name string) error {
	field := pointerField(dec.StackPointer())
	line, col := position(body, dec.InputOffset())
	return &yard.Error{Code: yard.EINVALID,
		Message: fmt.Sprintf("The JSON object at line %d, column %d has a member twice (names differing only in case are the same member).", line, col),
		Fields:  []yard.FieldError{{Field: field, Message: "appears more than once in its object (names are compared ignoring case)"}}}
}

// pointerField renders an RFC 6901 JSON pointer as a field path:
// "/barks/next" is "barks.next".
func pointerField(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	if len(parts) == 0 {
		return "(document)"
	}
	return strings.Join(parts, ".")
}

func jsonError(body []byte, err error) error {
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	var typ *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		line, col := position(body, int64(len(body))+1)
		return yard.Errorf(yard.EMALFORMED, "Malformed JSON at line %d, column %d (offset %d): the document ends too early.", line, col, len(body))
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		field := pointerField(syn.JSONPointer)
		line, col := position(body, syn.ByteOffset+1)
		return &yard.Error{Code: yard.EINVALID,
			Message: fmt.Sprintf("The JSON object at line %d, column %d has a member twice (names differing only in case are the same member).", line, col),
			Fields:  []yard.FieldError{{Field: field, Message: "appears more than once in its object (names are compared ignoring case)"}}}
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
		return &yard.Error{Code: yard.EINVALID, Message: "The request body has an unknown field.",
			Fields: []yard.FieldError{{Field: pointerField(sem.JSONPointer), Message: "is not a field of this resource (names match exactly, case included)"}}}
	case errors.As(err, &sem):
		field := pointerField(sem.JSONPointer)
		want := "of another type"
		t := sem.GoType
		if errors.As(err, &typ) && typ.Type != nil {
			t = typ.Type
		}
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil {
			want = jsonKind(t.Kind().String())
		}
		got := kindName(sem.JSONKind)
		if t != nil && got == "number" && (want == "a number") {
			return &yard.Error{Code: yard.EINVALID, Message: "A field has a number out of range.",
				Fields: []yard.FieldError{{Field: field, Message: "must be a whole number in range"}}}
		}
		if got == "" {
			return &yard.Error{Code: yard.EINVALID, Message: "A field has the wrong type.",
				Fields: []yard.FieldError{{Field: field, Message: "must be " + want}}}
		}
		return &yard.Error{Code: yard.EINVALID, Message: "A field has the wrong type.",
			Fields: []yard.FieldError{{Field: field, Message: fmt.Sprintf("must be %s, not %s", want, got)}}}
	}
	return yard.Errorf(yard.EMALFORMED, "Malformed JSON.")
}

var quotedInput = regexp.MustCompile("`[^`]*`")

// kindName names a JSON kind as the type errors do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return ""
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return k
}

func position(body []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off-1 && i < int64(len(body)); i++ {
		if body[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
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

// marshalJSON is json.Marshal without HTML escaping: API bodies are JSON
// documents, not HTML, so `<`, `>` and `&` are written as themselves (a
// saved search's query "color=red&max=5", not "color=red\u0026max=5").
// HTML pages escape their values with html/template instead.
func marshalJSON(v any) ([]byte, error) {
	if c, ok := v.(carView); ok {
		return c.appendJSON(make([]byte, 0, 160)), nil // carjson.go
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// writeJSON writes v as a JSON response with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		body = []byte(`{"error":"encoding"}`)
		status = http.StatusInternalServerError
	}
	writeJSONBody(w, status, body)
}

// writeJSONBody writes body, a JSON document, with the status (and the
// newline every JSON answer ends with).
func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = jsonValue
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeRepresentation writes v as the 200 representation of a resource with
// an ETag (a hash of the body) and Last-Modified, answering a matching
// conditional GET or HEAD with 304 (RFC 9110 §13.1.2, §13.1.3).
func writeRepresentation(w http.ResponseWriter, r *http.Request, v any, modified time.Time) {
	body, err := marshalJSON(v)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "encoding"})
		return
	}
	etag := setValidators(w.Header(), body, modified)
	h := w.Header()
	if notModified(r, etag, modified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(body, '\n'))
	}
}

// writeCreated writes v, the representation of a resource just created,
// as 201 with the ETag and Last-Modified a GET of it answers with (RFC 9110
// §8.8.2, §8.8.3), so a client can make its next request conditional
// without reading the resource again.
func writeCreated(w http.ResponseWriter, v any, modified time.Time) {
	writeWithValidators(w, http.StatusCreated, v, modified)
}

// writeUpdated writes v, the representation of a resource just changed,
// as 200 with the validators a GET of it answers with (modified zero: no
// Last-Modified).
func writeUpdated(w http.ResponseWriter, v any, modified time.Time) {
	writeWithValidators(w, http.StatusOK, v, modified)
}

func writeWithValidators(w http.ResponseWriter, status int, v any, modified time.Time) {
	body, err := marshalJSON(v)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "encoding"})
		return
	}
	setValidators(w.Header(), body, modified)
	writeJSONBody(w, status, body)
}

// setValidators sets the ETag of body and, unless modified is zero, its
// Last-Modified; it returns the ETag.
func setValidators(h http.Header, body []byte, modified time.Time) string {
	etag := etagOfBody(body)
	h.Set("ETag", etag)
	if !modified.IsZero() {
		h.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	}
	return etag
}

// etagOf returns the strong entity tag of v's JSON representation.
func etagOf(v any) string {
	body, _ := marshalJSON(v)
	return etagOfBody(body)
}

func etagOfBody(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

func notModified(r *http.Request, etag string, modified time.Time) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == etag || t == "*" {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !modified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !modified.Truncate(time.Second).After(t)
	}
	return false
}

// pageOf reads the query of a list whose only parameters are offset and
// max, by the one reader of a list's query (yard.ReadQuery, docs/api.md
// "Query parameters of lists"), without the authentication schemes'
// variables (grammarQuery).
func (s *Server) pageOf(r *http.Request) (yard.Page, error) {
	return yard.ReadQuery(s.grammarQuery(r), yard.Paging{}, nil)
}

// PageBody is the body of every collection page (docs/api.md, HTTP).
type PageBody[T any] struct {
	Items  []T `json:"items"`
	Offset int `json:"offset"`
	Max    int `json:"max"`
	Total  int `json:"total"`
}

// writePage writes a page of items with the RFC 8288 Link header (first,
// prev, next, last) built from the request's own query.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, items any, total int, p yard.Page) {
	s.writePageWith(w, r, items, total, p, nil)
}

// writePageWith is writePage with extra members in the body (a car
// list's facets).
func (s *Server) writePageWith(w http.ResponseWriter, r *http.Request, items any, total int, p yard.Page, extra map[string]any) {
	links := s.pageLinks(r, total, p)
	if other := w.Header().Get("Link"); other != "" { // e.g. a successor-version link
		links += ", " + other
	}
	w.Header().Set("Link", links)
	body := map[string]any{"items": items, "offset": p.Offset, "max": p.Max, "total": total}
	if items == nil {
		body["items"] = []any{}
	}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, http.StatusOK, body)
}

// pageLinks builds the Link header of a page. It edits the raw query,
// keeping its other pairs and the separators between them as sent (`&` or
// `;`), so it also works for the car grammar, which Go's url.ParseQuery
// cannot read. offset and max go at the end, joined by the query's first
// separator (`&` when it has none).
func (s *Server) pageLinks(r *http.Request, total int, p yard.Page) string {
	raw := r.URL.RawQuery
	sep := "&"
	if i := strings.IndexAny(raw, "&;"); i >= 0 {
		sep = raw[i : i+1]
	}
	kept, _ := dropPairs(raw, func(pair string) bool {
		name, _, _ := strings.Cut(pair, "=")
		return name == "offset" || name == "max"
	})
	if kept != "" {
		kept += sep
	}
	// Up to four links of one prefix, written to one builder: the
	// busiest answer's header, made with one allocation and no copy.
	prefix := "<" + s.url(r.URL.EscapedPath()) + "?" + kept
	var b strings.Builder
	b.Grow(4 * (len(prefix) + 64))
	var num [20]byte
	link := func(offset int, rel string) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(prefix)
		b.WriteString("offset=")
		b.Write(strconv.AppendInt(num[:0], int64(offset), 10))
		b.WriteString(sep)
		b.WriteString("max=")
		b.Write(strconv.AppendInt(num[:0], int64(p.Max), 10))
		b.WriteString(`>; rel="`)
		b.WriteString(rel)
		b.WriteByte('"')
	}
	size := max(p.Max, 1)
	last := 0
	if total > 0 {
		last = ((total - 1) / size) * size
	}
	link(0, "first")
	// A page of max=0 holds nothing at any offset: it has no neighbours.
	// Past the end, prev is the last page, not a page past the end.
	if p.Offset > 0 && p.Max > 0 {
		link(min(max(p.Offset-size, 0), last), "prev")
	}
	if p.Offset+size < total && p.Max > 0 {
		link(p.Offset+size, "next")
	}
	if p.Max == 0 {
		last = 0
	}
	link(last, "last")
	return b.String()
}
