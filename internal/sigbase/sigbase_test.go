package sigbase

import (
	"slices"
	"strings"
	"testing"
)

// The worked example published in docs/auth.md ("Signed requests").
const (
	exampleSignedPath   = "/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/"
	exampleSignedQuery  = "timestamp=1763800000&apiKey=ak_3xAmPlE&Note=rex%20%26%20co&tag=b&tag=a&signature=6d865e1e2f43cf9bc4409495ce713cdaee78c839520cb2e34abac0c0dde7345b"
	exampleSignedSecret = "sk_example-secret-do-not-use"
	exampleSignedString = "/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/?apikey=ak_3xAmPlE&note=rex & co&tag=a&tag=b&timestamp=1763800000"
	exampleSignature    = "6d865e1e2f43cf9bc4409495ce713cdaee78c839520cb2e34abac0c0dde7345b"
)

func TestSignedWorkedExample(t *testing.T) {
	pairs, err := ParseRawQuery(exampleSignedQuery)
	if err != nil {
		t.Fatal(err)
	}
	if got := CanonicalString(exampleSignedPath, pairs); got != exampleSignedString {
		t.Fatalf("canonical string\n got %q\nwant %q", got, exampleSignedString)
	}
	if got := Sign([]byte(exampleSignedSecret), exampleSignedString); got != exampleSignature {
		t.Errorf("signature = %s, want %s", got, exampleSignature)
	}
}

func TestParseRawQuery(t *testing.T) {
	got, err := ParseRawQuery("a=1&&b=x+y&c&d=%41")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"a", "1"}, {"b", "x y"}, {"c", ""}, {"d", "A"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d = %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := ParseRawQuery("a=%zz"); err == nil {
		t.Error("a bad escape was accepted")
	}
}

// The worked example of a bound request in docs/auth.md ("Binding the
// method and the body"): a DELETE with no body.
func TestSignedBoundWorkedExample(t *testing.T) {
	const (
		query  = "timestamp=1763800000&apiKey=ak_3xAmPlE&method=DELETE&bodyhash=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		signed = "/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/?apikey=ak_3xAmPlE&bodyhash=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855&method=DELETE&timestamp=1763800000"
		sig    = "96d86efc3d38eb8a7233caeb4cacd28d98ddfc3fa8f66b474cc2ec2fcb50f2e6"
	)
	pairs, err := ParseRawQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	if got := CanonicalString(exampleSignedPath, pairs); got != signed {
		t.Fatalf("canonical string\n got %q\nwant %q", got, signed)
	}
	if got := Sign([]byte(exampleSignedSecret), signed); got != sig {
		t.Errorf("signature = %s, want %s", got, sig)
	}
}

// The seed corpus is in testdata/fuzz/FuzzCanonicalString (run by every go
// test); docs/security.md records the fuzzing runs.

// FuzzCanonicalString feeds arbitrary paths and raw queries to the
// signed-request canonical string. It must not panic; the string must not
// depend on the order of the query pairs, must leave out every signature
// pair. (The server and the Go client both sign with this function.)
func FuzzCanonicalString(f *testing.F) {
	f.Fuzz(func(t *testing.T, path, raw string) {
		pairs, err := ParseRawQuery(raw)
		if err != nil {
			return
		}
		s := CanonicalString(path, pairs)
		if !strings.HasPrefix(s, path+"?") {
			t.Fatalf("canonical string %q does not start with the path %q", s, path)
		}
		reversed := slices.Clone(pairs)
		slices.Reverse(reversed)
		if r := CanonicalString(path, reversed); r != s {
			t.Fatalf("order matters: %q vs %q", s, r)
		}
		var kept [][2]string
		for _, p := range pairs {
			if !strings.EqualFold(p[0], "signature") {
				kept = append(kept, p)
			}
		}
		if k := CanonicalString(path, kept); k != s {
			t.Fatalf("a signature pair changes the string: %q vs %q", s, k)
		}
	})
}
