package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/yard-api/yard"
)

// TestScanJSON checks the one pass a write body gets: the strict checks
// and the top-level null members, across the switch from a list of names
// to a set (memberListMax) and across reuses of the pooled scanner.
func TestScanJSON(t *testing.T) {
	many := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"m%d":%d,`, i, i)
		}
		b.WriteString(extra + "}")
		return b.String()
	}
	for _, tc := range []struct {
		body  string
		nulls []string
		err   string // a substring of the problem; "" when accepted
	}{
		{`{"color":"red","garage":null}`, []string{"garage"}, ""},
		{`{"a":null,"b":{"c":null},"d":[null],"e":null}`, []string{"a", "e"}, ""},
		{`[null,{"a":null}]`, nil, ""},
		{`null`, nil, ""},
		{`{"\u0063olor":null}`, []string{"color"}, ""},
		{`{"a":{"x":1},"b":{"x":1,"X":2}}`, nil, "twice"},
		{`{"a":{"x":1},"b":{"x":1}}`, nil, ""}, // a level's names do not leak into the next object
		{`{"a":[{"x":1}],"b":[{"x":null}]}`, nil, ""},
		{many(memberListMax-1, `"M3":1`), nil, "twice"},  // in the list
		{many(memberListMax+5, `"M3":1`), nil, "twice"},  // in the set, first seen in the list
		{many(memberListMax+5, `"M20":1`), nil, "twice"}, // in the set, first seen in the set
		{many(memberListMax+5, `"last":null`), []string{"last"}, ""},
		{`{"a":1} {}`, nil, "after the JSON document"},
		{`{"a":1`, nil, "ends too early"},
		{``, nil, "empty"},
		{"{\"a\":\"\xff\"}", nil, "UTF-8"},
	} {
		// Twice, and after a refused body: the pooled state must not carry
		// over.
		for range 2 {
			_, _ = scanJSON([]byte(`{"q":{"x":1,"X":1}}`))
			nulls, err := scanJSON([]byte(tc.body))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%s: refused: %v", tc.body, err)
			case tc.err != "" && (err == nil || !strings.Contains(yard.ErrorMessage(err), tc.err)):
				t.Fatalf("%s: got %v, want a problem saying %q", tc.body, err, tc.err)
			case !slices.Equal(nulls, tc.nulls):
				t.Fatalf("%s: nulls %q, want %q", tc.body, nulls, tc.nulls)
			}
		}
	}
}

// TestScanJSONMatchesEncodingJSON compares scanJSON with what the API
// asked before it: encoding/json's top-level members whose value is null,
// and a member twice in an object, ignoring case (foldedDuplicate), on
// random documents.
func TestScanJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(25, 1))
	names := []string{"a", "A", "color", "Color", "garage", "x", "ß", "ẞ", "K", "k", "İ", "i", `\u0061`, "codeUrl", "CODEURL"}
	var value func(b *bytes.Buffer, depth int)
	object := func(b *bytes.Buffer, depth int) {
		b.WriteByte('{')
		n := r.IntN(4)
		if r.IntN(8) == 0 {
			n = memberListMax + r.IntN(8)
		}
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			if r.IntN(3) == 0 {
				fmt.Fprintf(b, `"n%d"`, r.IntN(3*memberListMax))
			} else {
				fmt.Fprintf(b, `"%s"`, names[r.IntN(len(names))])
			}
			b.WriteByte(':')
			value(b, depth+1)
		}
		b.WriteByte('}')
	}
	value = func(b *bytes.Buffer, depth int) {
		switch k := r.IntN(7); {
		case k == 0 && depth < 4:
			object(b, depth)
		case k == 1 && depth < 4:
			b.WriteByte('[')
			for i := range r.IntN(3) {
				if i > 0 {
					b.WriteByte(',')
				}
				value(b, depth+1)
			}
			b.WriteByte(']')
		case k <= 3:
			b.WriteString("null")
		case k == 4:
			fmt.Fprintf(b, "%d", r.IntN(100))
		default:
			b.WriteString(`"v"`)
		}
	}
	accepted := 0
	for range 20000 {
		var b bytes.Buffer
		object(&b, 0)
		body := b.Bytes()
		nulls, err := scanJSON(body)
		dup := foldedDuplicate(body)
		if (err != nil) != (dup != "") {
			t.Fatalf("%s: scanJSON %v, duplicate %q", body, err, dup)
		}
		if err != nil {
			continue
		}
		accepted++
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: encoding/json: %v", body, err)
		}
		var want []string
		for k, v := range m {
			if string(v) == "null" {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		got := slices.Sorted(slices.Values(nulls))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: nulls %q, encoding/json %q", body, got, want)
		}
	}
	if accepted < 5000 {
		t.Fatalf("only %d of the random documents were accepted: the test compares too little", accepted)
	}
}
