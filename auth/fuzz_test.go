package auth_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
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
