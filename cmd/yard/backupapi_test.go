package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
)

// TestServeBacksUpThroughAPI: serve wires POST /v1/backups to the data
// directory's backups/, named and pruned as --backup-every does
// (--backup-keep), the file mode 0600; a person is refused.
func TestServeBacksUpThroughAPI(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	dir := filepath.Join(data, "backups")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var older []string
	for h := 1; h <= 2; h++ {
		name := store.BackupName(time.Now().Add(-time.Duration(h) * time.Hour))
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		older = append(older, name)
	}
	s := startProcess(t, "--data", data, "--backup-keep", "2")

	if st, _, _, err := do("POST", s.URL+"/v1/backups", "", "", nil); err != nil || st != 401 {
		t.Fatalf("without credentials: %d %v, want 401", st, err)
	}
	st, loc, body, err := do("POST", s.URL+"/v1/backups", "admin", s.Password, nil)
	if err != nil || st != 201 {
		t.Fatalf("POST /v1/backups: %d %v %v, want 201", st, err, body)
	}
	name, _ := body["name"].(string)
	if pathOf(t, loc) != "/v1/backups/"+name {
		t.Fatalf("Location: got %q, want it to name %q", loc, name)
	}
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil || fi.Mode().Perm() != 0o600 || float64(fi.Size()) != body["size"] {
		t.Fatalf("the backup: %v %v, want mode 0600 and size %v", fi, err, body["size"])
	}
	paths, err := store.Backups(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range paths {
		got = append(got, filepath.Base(p))
	}
	if want := []string{name, older[0]}; !slices.Equal(got, want) {
		t.Fatalf("with --backup-keep 2: got %v, want %v", got, want)
	}
	if st, _, body, _ := do("GET", s.URL+"/v1/backups", "admin", s.Password, nil); st != 200 || body["total"] != float64(2) {
		t.Fatalf("GET /v1/backups: %d %v", st, body)
	}
}
