package store_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
)

func TestCompileCarQuery(t *testing.T) {
	tests := []struct {
		raw, sql string
		args     []any
	}{
		{"", "1=1", nil},
		{"color=Red", "color_key IN ($2)", []any{"x", "red"}},
		{"doors=2,4&make=!ford", "doors IN ($2, $3) AND NOT make_key IN ($4)", []any{"x", int64(2), int64(4), "ford"}},
		{"garage=null,g1", "(garage_id IN ($2) OR garage_id IS NULL)", []any{"x", "g1"}},
		{"garage.state=!ca", "(garage_state_key IS NULL OR NOT garage_state_key IN ($2))", []any{"x", "ca"}},
		{"garage.name=Main", "garage_id IN (SELECT id FROM garages WHERE name_key IN ($2))", []any{"x", "main"}},
		{"garage=!null", "garage_id IS NOT NULL", []any{"x"}},
		{"q.year.ge=2000&q.year.lt=2010", "year >= $2 AND year < $3", []any{"x", int64(2000), int64(2010)}},
	}
	for _, tt := range tests {
		q, _, err := yard.ParseCarQuery(tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		sql, args := store.CompileCarQuery(q, []any{"x"})
		if tt.raw == "" {
			args = args[1:]
		}
		if sql != tt.sql {
			t.Errorf("%q: got SQL %q, want %q", tt.raw, sql, tt.sql)
		}
		if tt.raw != "" && !equalArgs(args, tt.args) {
			t.Errorf("%q: got args %#v, want %#v", tt.raw, args, tt.args)
		}
	}
}

func equalArgs(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sqlToken matches every token the compiler may emit. Anything else in
// the SQL text would be a value that escaped into it.
var sqlToken = regexp.MustCompile(`^(\$[0-9]+|[(),=<>]+|1=1|1=0|IN|NOT|IS|NULL|OR|AND|SELECT|FROM|WHERE|id|garages|name_key|` +
	`color_key|type_key|doors|make_key|model_key|year|garage_id|garage_state_key)$`)

// checkParameterised fails unless sql is made only of compiler tokens and
// its placeholders are exactly $1..$len(args), each used once.
func checkParameterised(t *testing.T, raw, sql string, args []any) {
	t.Helper()
	spaced := strings.NewReplacer("(", " ( ", ")", " ) ", ",", " , ").Replace(sql)
	seen := map[int]bool{}
	for _, tok := range strings.Fields(spaced) {
		if !sqlToken.MatchString(tok) {
			t.Fatalf("query %q: SQL %q holds token %q that is not the compiler's", raw, sql, tok)
		}
		if strings.HasPrefix(tok, "$") {
			n, _ := strconv.Atoi(tok[1:])
			if n < 1 || n > len(args) || seen[n] {
				t.Fatalf("query %q: SQL %q: placeholder %s out of 1..%d or repeated", raw, sql, tok, len(args))
			}
			seen[n] = true
		}
	}
	if len(seen) != len(args) {
		t.Fatalf("query %q: SQL %q uses %d placeholders for %d arguments", raw, sql, len(seen), len(args))
	}
}

// FuzzCarQuery feeds raw query strings to the parser: it must never
// panic, an accepted query must compile to SQL whose only variable parts
// are placeholders, and its canonical form must parse to the same query.
// `go test` runs the seeds; `go test -fuzz FuzzCarQuery ./store` explores.
func FuzzCarQuery(f *testing.F) {
	for _, seed := range []string{
		"", "color=red", "color=red,blue;doors=4&make=!ford", "model=a%2Cb", "q.year.gt=2000&q.year.le=2010",
		"garage=null", "garage.state=CA,!NY", "q.garage.name.ne=x'; DROP TABLE cars; --", "vendor=%27%22%3B",
		"max=1000&offset=5", "q..eq=1", "color=%", "color=!%21", "doors=99999999999999999999", "garage=!null,null",
		"color=red)+OR+1=1--", "q.color.eq=$1", "garage.name=null,a,!b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, page, err := yard.ParseCarQuery(raw)
		if err != nil {
			if yard.ErrorCode(err) != yard.EINVALID {
				t.Fatalf("query %q: error %v is not a validation error", raw, err)
			}
			return
		}
		if page.Max < 0 || page.Max > yard.MaxPageMax || page.Offset < 0 {
			t.Fatalf("query %q: page %+v out of bounds", raw, page)
		}
		sql, args := store.CompileCarQuery(q, nil)
		checkParameterised(t, raw, sql, args)
		again, _, err := yard.ParseCarQuery(q.String())
		if err != nil || !again.Equal(q) {
			t.Fatalf("query %q: canonical %q parses to %q, %v", raw, q.String(), again.String(), err)
		}
	})
}
