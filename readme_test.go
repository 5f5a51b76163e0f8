package yard_test

import (
	"os"
	"regexp"
	"testing"
)

// TestReadmeGoVersion: the Go version README.md asks for is the one
// go.mod requires.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`Requires Go (\d+(?:\.\d+)*)`).FindSubmatch(readme)
	if got == nil {
		t.Fatalf("README.md does not say \"Requires Go %s\"", m[1])
	}
	if string(got[1]) != string(m[1]) {
		t.Fatalf("README.md requires Go %s, go.mod requires %s", got[1], m[1])
	}
}
