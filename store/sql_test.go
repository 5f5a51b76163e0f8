package store_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoBoundLimit holds the store's SQL to LIMIT CAST($n AS BIGINT): a
// bare LIMIT $n makes SQLite compile the statement again at every run
// (the stmts field of store.DB says why).
func TestNoBoundLimit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile(`(?i)LIMIT\s+\$`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if bare.MatchString(line) {
				t.Errorf("%s:%d: a bare LIMIT parameter: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
