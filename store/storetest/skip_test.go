package storetest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestSkipIsLogged: a test skipped for want of PostgreSQL is counted and
// leaves a line in the file scripts/test prints after the run.
func TestSkipIsLogged(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skips")
	t.Setenv(SkipLogEnv, log)
	t.Setenv("CI", "")
	before := skips.n.Load()
	t.Cleanup(func() { skips.n.Store(before) }) // not a real skip: no summary
	skips.once = sync.Once{}
	ok := t.Run("needs postgres", func(t *testing.T) {
		skipPostgres(t, errors.New("no PostgreSQL server binaries (initdb) found"), "install postgresql-15")
		t.Error("skipPostgres returned")
	})
	if !ok {
		t.Fatal("the subtest failed instead of skipping")
	}
	if got := skips.n.Load() - before; got != 1 {
		t.Errorf("counted %d skips, want 1", got)
	}
	data, err := os.ReadFile(log)
	want := "storetest: PostgreSQL tests skipped: no PostgreSQL server binaries (initdb) found\n"
	if err != nil || string(data) != want {
		t.Fatalf("skip log %q (%v), want %q", data, err, want)
	}
}
