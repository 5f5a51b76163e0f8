package auth_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
)

// The seed corpora are in testdata/fuzz/<name>/ (run by every go test);
// docs/security.md records the fuzzing runs.

// FuzzParseDigestParams feeds arbitrary Authorization values to the Digest
// parameter parser. It must not panic, and what it accepts must survive a
// round trip: written back as name="value" pairs (RFC 9110 §5.6.4 quoting)
// and parsed again, it gives the same parameters.
func FuzzParseDigestParams(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := auth.ParseDigestParams(s)
		if !ok {
			return
		}
		if len(p) == 0 {
			t.Fatalf("accepted %q with no parameters", s)
		}
		var b strings.Builder
		for i, name := range slices.Sorted(maps.Keys(p)) {
			if name == "" || strings.ContainsAny(name, "= ,") {
				t.Fatalf("parameter name %q from %q", name, s)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(name + `="`)
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p[name]))
			b.WriteString(`"`)
		}
		again, ok := auth.ParseDigestParams(b.String())
		if !ok || !maps.Equal(p, again) {
			t.Fatalf("round trip of %q: %v, then %q gives %v (%v)", s, p, b.String(), again, ok)
		}
	})
}

// FuzzCanonicalString feeds arbitrary paths and raw queries to the
// signed-request canonical string. It must not panic; the string must not
// depend on the order of the query pairs, must leave out every signature
// pair, and must equal what the Go client signs for the same pairs (a
// difference is a request the server refuses).
func FuzzCanonicalString(f *testing.F) {
	f.Fuzz(func(t *testing.T, path, raw string) {
		pairs, err := auth.ParseRawQuery(raw)
		if err != nil {
			return
		}
		s := auth.CanonicalString(path, pairs)
		if !strings.HasPrefix(s, path+"?") {
			t.Fatalf("canonical string %q does not start with the path %q", s, path)
		}
		reversed := slices.Clone(pairs)
		slices.Reverse(reversed)
		if r := auth.CanonicalString(path, reversed); r != s {
			t.Fatalf("order matters: %q vs %q", s, r)
		}
		var kept [][2]string
		for _, p := range pairs {
			if !strings.EqualFold(p[0], "signature") {
				kept = append(kept, p)
			}
		}
		if k := auth.CanonicalString(path, kept); k != s {
			t.Fatalf("a signature pair changes the string: %q vs %q", s, k)
		}
		if c := client.CanonicalString(path, pairs); c != s {
			t.Fatalf("the client signs %q, the server checks %q", c, s)
		}
	})
}
