package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yard-api/yard"
)

// fuzzBody is a request body shape with the kinds of members the API's
// bodies have: strings, numbers, a raw member, a nested object, a list.
type fuzzBody struct {
	Name  *string         `json:"name"`
	Count *int            `json:"count"`
	Raw   json.RawMessage `json:"raw"`
	Owner *struct {
		ID string `json:"id"`
	} `json:"owner"`
	Tags []string `json:"tags"`
}

// FuzzDecodeJSON feeds bodies to the API's one JSON decoder: it must never
// panic; it refuses everything encoding/json refuses, invalid UTF-8, and
// objects with two members whose names differ only in case; its errors are
// malformed or invalid problems that never echo the body's values.
// `go test` runs the seeds (and testdata/fuzz/FuzzDecodeJSON);
// `go test -fuzz FuzzDecodeJSON ./httpapi` explores.
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"name":"Rex"}`, `{"name":"a","name":"b"}`, `{"name":"a","Name":"b"}`, `{"NAME":"a"}`,
		"{\"name\":\"R\xffx\"}", `{"name":"\ud800"}`, `{"name":"\u0000"}`, `{"count":1.5}`, `{"count":1e999}`,
		`{"raw":{"a":1,"A":2}}`, `{"raw":null}`, `{"owner":{"id":"x","id":"y"}}`, `{"tags":["a",1]}`,
		`{"name":"Rex"} {}`, `{"name":"Rex"`, ``, `   `, `null`, `[]`, `{"unknown":"secret-value"}`,
		`{"name":5}`, `{"owner":"x"}`, "{\n  \"name\" \"Rex\"}", `{"name":"Rex",}`, `{"raw":[{"k":1},{"k":2}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := unmarshalStrict[fuzzBody](body)
		if err == nil {
			var w fuzzBody
			if !json.Valid(body) || !utf8.Valid(body) {
				t.Fatalf("body %q: accepted, but it is not valid JSON in UTF-8", body)
			}
			if json.Unmarshal(body, &w) != nil {
				t.Fatalf("body %q: accepted, but encoding/json refuses it", body)
			}
			if dup := foldedDuplicate(body); dup != "" {
				t.Fatalf("body %q: accepted with member %q twice", body, dup)
			}
			return
		}
		code := yard.ErrorCode(err)
		if code != yard.EMALFORMED && code != yard.EINVALID {
			t.Fatalf("body %q: error %v is neither malformed nor invalid", body, err)
		}
		// Problems never echo a string value of the body.
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			for _, val := range m {
				if s, ok := val.(string); ok && len(s) >= 4 && strings.Contains(yard.ErrorMessage(err), s) {
					t.Fatalf("body %q: error %q echoes a value", body, yard.ErrorMessage(err))
				}
			}
		}
	})
}

// foldedDuplicate returns a member name that appears twice, ignoring case,
// in one object of a valid JSON document, or "".
func foldedDuplicate(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var walk func() string
	walk = func() string {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key := strings.ToLower(k.(string))
				if seen[key] {
					return key
				}
				seen[key] = true
				if d := walk(); d != "" {
					return d
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if d := walk(); d != "" {
					return d
				}
			}
			_, _ = dec.Token()
		}
		return ""
	}
	return walk()
}
