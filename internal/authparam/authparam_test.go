package authparam

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		strict bool
		want   []Param
	}{
		{`realm="yard", qop="auth", algorithm=SHA-256, nonce="a\"b", stale=true`, false, []Param{
			{"realm", "yard", true}, {"qop", "auth", true}, {"algorithm", "SHA-256", false}, {"nonce", `a"b`, true}, {"stale", "true", false}}},
		{`uri=/dir/index.html,nc=00000001`, false, []Param{{"uri", "/dir/index.html", false}, {"nc", "00000001", false}}},
		{` a = "x\\y" ,, b="" ,`, false, []Param{{"a", `x\y`, true}, {"b", "", true}}},
		{"a=\"tab\there\"", true, []Param{{"a", "tab\there", true}}},
		{`oauth_signature="MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D", realm="Photos"`, true, []Param{
			{"oauth_signature", "MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D", true}, {"realm", "Photos", true}}},
	} {
		got, err := Parse(tc.in, tc.strict)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in     string
		strict bool
		want   error
	}{
		{``, false, ErrEmpty},
		{` , ,`, false, ErrEmpty},
		{`username`, false, ErrSyntax},
		{`=x`, false, ErrSyntax},
		{`a=`, false, ErrSyntax},
		{`a="open`, false, ErrSyntax},
		{`a="b\`, false, ErrSyntax},
		{`a="b" c="d"`, false, ErrSyntax},
		{`a=b"c`, false, ErrSyntax},
		{"a=\"b\x01\"", false, ErrSyntax},
		{`na me=x`, false, ErrSyntax},
		{`a="b",`, true, ErrElement},
		{`a="b",, c="d"`, true, ErrElement},
	} {
		if got, err := Parse(tc.in, tc.strict); err != tc.want {
			t.Errorf("Parse(%q, strict %v) = %v, %v; want %v", tc.in, tc.strict, got, err, tc.want)
		}
	}
}

// FuzzParse: no input panics, and what is accepted survives a round trip:
// written back with every value quoted, it parses to the same names and
// values, in order, strictly.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`realm="yard", qop="auth", nonce="a\"b", stale=true`, `a=1,,b="x\\y",`, `a="b" c`, `x="\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := Parse(s, false)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, p := range ps {
			if p.Name == "" || strings.ContainsAny(p.Name, "=, \t\"") {
				t.Fatalf("name %q from %q", p.Name, s)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.Name + "=" + Quote(p.Value))
		}
		again, err := Parse(b.String(), true)
		if err != nil || len(again) != len(ps) {
			t.Fatalf("round trip of %q: %v then %q: %v, %v", s, ps, b.String(), again, err)
		}
		for i := range ps {
			if again[i].Name != ps[i].Name || again[i].Value != ps[i].Value {
				t.Fatalf("round trip of %q: %v then %v", s, ps, again)
			}
		}
	})
}
