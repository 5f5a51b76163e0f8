package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

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

// nonZero returns a pointer to a copy of v, or nil for the zero value: a
// member that is null when it has nothing to say.
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
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

// writeRepresentation writes v, the JSON representation of a resource,
// with the status and the ETag (a hash of the body) and Last-Modified a GET
// of it answers with (modified zero: no Last-Modified): a 200 to a GET or
// HEAD whose validators match is 304 (RFC 9110 §13.1.2, §13.1.3), and the
// answer to a write that created (201) or changed (200) the resource lets
// a client make its next request conditional without reading the
// resource again (RFC 9110 §8.8.2, §8.8.3).
func writeRepresentation(w http.ResponseWriter, r *http.Request, status int, v any, modified time.Time) {
	body, err := marshalJSON(v)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "encoding"})
		return
	}
	writeValidated(w, r, status, mediaJSON, body, modified)
}

// writeValidated writes body, a representation of type ct, with the status, its
// ETag and, unless modified is zero, its Last-Modified; a 200 to a GET or
// HEAD whose validators match is 304 instead, and a HEAD gets no body.
func writeValidated(w http.ResponseWriter, r *http.Request, status int, ct string, body []byte, modified time.Time) {
	etag := setValidators(w.Header(), body, modified)
	if status == http.StatusOK && notModified(r, etag, modified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(body, '\n'))
	}
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

// pageViews renders the items of a page with view; a page of max=0 holds
// none, whatever the store returned.
func pageViews[T, V any](items []T, p yard.Page, view func(T) V) []V {
	if p.Max == 0 {
		items = nil
	}
	views := make([]V, 0, len(items))
	for _, it := range items {
		views = append(views, view(it))
	}
	return views
}

// window is the part of all, a whole list held in memory, that page p
// shows.
func window[T any](all []T, p yard.Page) []T {
	return all[min(p.Offset, len(all)):min(p.Offset+p.Max, len(all))]
}

// writePagedList answers a list that takes only offset and max: find reads
// the page, view renders each item.
func writePagedList[T, V any](s *Server, w http.ResponseWriter, r *http.Request,
	find func(context.Context, yard.Page) ([]T, int, error), view func(T) V) {
	page, err := s.pageOf(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	items, total, err := find(r.Context(), page)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writePage(w, r, pageViews(items, page, view), total, page)
}

// writePage writes a page of items with the RFC 8288 Link header (first,
// prev, next, last) built from the request's own query.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, items any, total int, p yard.Page) {
	links := s.pageLinks(r, total, p)
	if other := w.Header().Get("Link"); other != "" { // e.g. a successor-version link
		links += ", " + other
	}
	w.Header().Set("Link", links)
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "offset": p.Offset, "max": p.Max, "total": total})
}

// pageLinks builds the Link header of a page. It edits the raw query,
// keeping its other pairs and the separators between them as sent (`&` or
// `;`), so it also works for the car grammar, which Go's url.ParseQuery
// cannot read. offset and max go at the end, joined by the query's first
// separator (`&` when it has none).
func (s *Server) pageLinks(r *http.Request, total int, p yard.Page) string {
	raw := s.grammarQuery(r) // without credentials (a signature, an API key)
	sep := "&"
	if i := strings.IndexAny(raw, "&;"); i >= 0 {
		sep = raw[i : i+1]
	}
	kept := dropPairs(raw, func(pair string) bool {
		name, _, _ := strings.Cut(pair, "=")
		return name == "offset" || name == "max"
	})
	if kept != "" {
		kept = uriQuery(kept) + sep
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

// uriQuery percent-encodes the bytes of a raw query that a URI may not
// hold (RFC 3986 §3.4 allows unreserved characters, sub-delims, ':', '@',
// '/', '?' and escapes: every visible ASCII byte but the twelve listed),
// such as '>', '"' or a space, so that the query can stand between a
// Link's angle brackets (RFC 8288 §3). The rest stays as the client wrote
// it.
func uriQuery(raw string) string {
	ok := func(c byte) bool { return c > ' ' && c < 0x7f && strings.IndexByte("\"#<>[\\]^`{|}", c) < 0 }
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; !ok(c) {
			if b.Len() == 0 {
				b.WriteString(raw[:i])
			}
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return raw
	}
	return b.String()
}
