package store

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The statements a migration may run and still leave the previous
// release's binaries working beside it (docs/operations.md, "Upgrades"):
// it adds tables, indexes and columns an old binary does not know (a new
// column nullable or with a default, so the old INSERTs still work), fills
// data, and drops indexes (which only make queries slower). It never drops
// or renames a table or column, nor changes a column's type or constraint.
var (
	compatible = regexp.MustCompile(`(?is)^(create (unique )?index|create table|drop index|insert into|update|alter table \w+ add column)\b`)
	addNotNull = regexp.MustCompile(`(?is)^alter table \w+ add column .*\bnot null\b`)
	hasDefault = regexp.MustCompile(`(?is)\bdefault\b`)
	// A migration that cannot be compatible says so, and why, on a line of
	// its own; docs/operations.md must then name it.
	incompatible = regexp.MustCompile(`(?m)^-- yard:incompatible: \S`)
)

// TestMigrationsKeepThePreviousReleaseWorking checks every migration's Up
// section statement by statement; one marked incompatible must be named in
// docs/operations.md, where operators read that all processes are
// replaced at once for it.
func TestMigrationsKeepThePreviousReleaseWorking(t *testing.T) {
	ops, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	for _, f := range files {
		raw, _ := fs.ReadFile(migrations, f)
		text := string(raw)
		name := strings.TrimPrefix(f, "migrations/")
		up, _, _ := strings.Cut(text, "-- +goose Down")
		if incompatible.MatchString(up) {
			if !strings.Contains(string(ops), name) {
				t.Errorf("%s is marked incompatible but docs/operations.md does not name it", name)
			}
			continue
		}
		for _, stmt := range statements(up) {
			switch {
			case !compatible.MatchString(stmt):
				t.Errorf("%s: %q would break the previous release's binaries (see docs/operations.md, Upgrades)", name, firstLine(stmt))
			case addNotNull.MatchString(stmt) && !hasDefault.MatchString(stmt):
				t.Errorf("%s: %q adds a NOT NULL column without a default: the previous release's INSERTs would fail", name, firstLine(stmt))
			}
		}
	}
}

// statements splits SQL into statements without comments.
func statements(sql string) []string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	var out []string
	for s := range strings.SplitSeq(b.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
