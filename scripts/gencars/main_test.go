package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputIsIgnored: where the docs tell gencars to write (data/ with -o,
// or the repository root through a redirection), git ignores the file.
func TestOutputIsIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git checkout")
	}
	for _, p := range []string{"data/cars.ndjson", "cars.ndjson", "more-cars.ndjson"} {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", p)
		cmd.Dir = strings.TrimSpace(string(root))
		if err := cmd.Run(); err != nil {
			t.Errorf("%s is not ignored by .gitignore: %v", p, err)
		}
	}
}

// TestWriteFile: -o creates the file (and its directory) with one line
// per garage and car, garages first.
func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "cars.ndjson")
	if err := writeFile(path, 30, 3, 1); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, _, _ := strings.Cut(strings.TrimPrefix(sc.Text(), `{"kind":"`), `"`)
		kinds = append(kinds, kind)
	}
	if len(kinds) != 33 || kinds[2] != "garage" || kinds[3] != "car" || kinds[32] != "car" {
		t.Fatalf("got %d lines %v, want 3 garages then 30 cars", len(kinds), kinds)
	}
}
