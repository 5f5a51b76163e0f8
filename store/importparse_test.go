package store

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// checkFast fails when parseLineFast accepts a line that decodeLine (the
// slow path) refuses or reads otherwise.
func checkFast(t *testing.T, line []byte) bool {
	t.Helper()
	var fast importLine
	if !parseLineFast(line, &fast, interner{}.intern) {
		return false
	}
	slow, err := decodeLine(line)
	if err != nil {
		t.Fatalf("fast path accepts %q, decodeLine refuses it: %s", line, err.Msg)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("line %q:\nfast %+v\njson %+v", line, fast, slow)
	}
	return true
}

// TestParseLineFastMatchesJSON: the fast path of the import's parser reads
// what encoding/json reads, and leaves everything else (other spellings,
// escapes, fractions, stray bytes) to it.
func TestParseLineFastMatchesJSON(t *testing.T) {
	accepted := []string{
		`{"kind":"car","id":"car-1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}`,
		`{"kind":"garage","id":"g1","name":"Main Street","state":"CA"}`,
		` { "kind" : "car" , "doors" : -0 , "garage" : null } `,
		"{\t\"year\":\r\n1999}",
		`{}`,
		`{"make":"Škoda","model":"日本"}`,
		`{"doors":123456789}`,
	}
	for _, s := range accepted {
		if !checkFast(t, []byte(s)) {
			t.Errorf("fast path refuses %q", s)
		}
	}
	refused := []string{
		`{"Kind":"car"}`, `{"kind":"c\u0061r"}`, `{"doors":4.0}`, `{"doors":1e1}`, `{"doors":04}`,
		`{"doors":1234567890}`, `{"doors":"4"}`, `{"color":null}`, `{"kind":"car",}`, `{"kind":"car"} x`,
		`{"kind":"car"`, `["kind"]`, `{"extra":1}`, `{"garage":nul}`, `{"garage":true}`, "{\"make\":\"a\x01\"}",
		"{\"make\":\"\xff\"}", `{"doors":4x}`, `{"color":"rouge","color":"bleu"}`, `{"garage":"g","garage":null}`, `{"kind" "car"}`, `{"doors":-}`, ``, `{`,
	}
	for _, s := range refused {
		if checkFast(t, []byte(s)) {
			t.Errorf("fast path accepts %q, which is for encoding/json to judge", s)
		}
	}

	// Random lines built from fragments, well and badly formed: whatever
	// the fast path accepts, encoding/json reads the same.
	keys := []string{`"kind"`, `"id"`, `"name"`, `"state"`, `"color"`, `"type"`, `"doors"`, `"make"`, `"model"`,
		`"year"`, `"garage"`, `"KIND"`, `"extra"`, `"do\u006frs"`, `kind`, `""`}
	values := []string{`"car"`, `"garage"`, `"red"`, `""`, `"a\"b"`, `"é"`, "\"\xc3\"", `4`, `-12`, `0`, `007`, `2.5`,
		`1e3`, `null`, `true`, `{}`, `[]`, `"x`, `9999999999`, `-`}
	seps := []string{``, ` `, "\t", "\n", `,`, `:`, `}`}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	fastOK := 0
	for range 200000 {
		var b strings.Builder
		b.WriteString(pick([]string{`{`, ` {`, `{`, `[`}))
		for n := rng.IntN(5); n > 0; n-- {
			b.WriteString(pick(keys))
			if rng.IntN(20) > 0 {
				b.WriteString(":")
			} else {
				b.WriteString(pick(seps))
			}
			b.WriteString(pick(values))
			if n > 1 {
				if rng.IntN(20) > 0 {
					b.WriteString(",")
				} else {
					b.WriteString(pick(seps))
				}
			}
		}
		b.WriteString(pick([]string{`}`, `}`, `} `, `},`, ``}))
		if checkFast(t, []byte(b.String())) {
			fastOK++
		}
	}
	if fastOK < 1000 {
		t.Fatalf("the fast path took only %d of the random lines: the test no longer reaches it", fastOK)
	}
}

// FuzzParseLineFast: go test ./store -run '^$' -fuzz FuzzParseLineFast
func FuzzParseLineFast(f *testing.F) {
	f.Add([]byte(`{"kind":"car","id":"car-1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}`))
	f.Add([]byte(`{"kind":"garage","id":"g1","name":"Main Street","state":"CA"}`))
	f.Add([]byte(`{"garage":null,"doors":-0}`))
	f.Fuzz(func(t *testing.T, line []byte) { checkFast(t, line) })
}
