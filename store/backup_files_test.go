package store_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
)

// TestBackupsInOneSecond: two backups into one directory begun within one
// second of the store's clock both succeed, into two files.
func TestBackupsInOneSecond(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	db := openSQLite(t, data)
	// A clock at the start of a second, so both backups begin in it.
	start := time.Now()
	base := start.Truncate(time.Second)
	db.Now = func() time.Time { return base.Add(time.Since(start)) }
	dir := filepath.Join(data, "backups")
	a, err := db.BackupInto(ctx, dir, nil)
	if err != nil {
		t.Fatalf("first backup: %v", err)
	}
	b, err := db.BackupInto(ctx, dir, nil)
	if err != nil {
		t.Fatalf("second backup in the same second: %v", err)
	}
	names, err := store.Backups(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path == b.Path || len(names) != 2 {
		t.Fatalf("two backups: got %s and %s, directory %v; want two files", a.Path, b.Path, names)
	}
	if filepath.Base(a.Path) != store.BackupName(base) {
		t.Errorf("first backup %s, want %s", a.Path, store.BackupName(base))
	}
}

// withUmask runs f under the process's umask mask (process-wide: the
// caller must not run in parallel).
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// wantMode fails t unless path has the permission bits want.
func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", filepath.Base(path), got, want)
	}
}

// TestStoreFileModes: under a umask that takes nothing away, the store,
// its -wal, -shm and lock, its replay log, its backups and the store a
// restore keeps aside are mode 0600 in directories of mode 0700, and a
// data directory made beforehand at 0755 is tightened to 0700.
func TestStoreFileModes(t *testing.T) {
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	withUmask(0, func() {
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		wantMode(t, data, 0o755)
		db, err := store.Open(ctx, "sqlite", data)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateUser(ctx, &yard.User{Name: "kept", Roles: []string{yard.RoleUser}}, &yard.Credentials{PasswordHash: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := db.OpenSignatureLog(); err != nil {
			t.Fatal(err)
		}
		wantMode(t, data, 0o700)
		for _, f := range []string{"yard.db", "yard.db-wal", "yard.db-shm", "yard.db-lock", "yard.db-signatures/lock"} {
			wantMode(t, filepath.Join(data, f), 0o600)
		}
		wantMode(t, filepath.Join(data, "yard.db-signatures"), 0o700)
		st, err := db.BackupInto(ctx, filepath.Join(data, "backups"), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantMode(t, filepath.Join(data, "backups"), 0o700)
		wantMode(t, filepath.Join(data, "backups", ".lock"), 0o600)
		wantMode(t, st.Path, 0o600)
		db.Close()

		// A store of an older release, 0644: restored, the copy and the
		// store kept aside are 0600.
		if err := os.Chmod(filepath.Join(data, "yard.db"), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := store.Restore(ctx, st.Path, "sqlite", data, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantMode(t, filepath.Join(data, "yard.db"), 0o600)
		if len(rep.Aside) == 0 {
			t.Fatal("restore kept nothing aside")
		}
		for _, f := range rep.Aside {
			wantMode(t, f, 0o600)
		}
	})
}

// owner returns the user and group owning path.
func owner(t *testing.T, path string) (uid, gid uint32) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// TestRestoreKeepsOwner: yard backup and yard restore run as root in a
// data directory owned by the service's user (here 65534) leave what they
// create, and the restored store, owned by that user, so the service still
// opens its store.
func TestRestoreKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another user")
	}
	const uid, gid = 65534, 65534
	ctx := context.Background()
	data := t.TempDir()
	// The service's store: made, then given to the service's user.
	openSQLite(t, data).Close()
	entries, _ := os.ReadDir(data)
	for _, p := range append([]string{data}, func() (out []string) {
		for _, e := range entries {
			out = append(out, filepath.Join(data, e.Name()))
		}
		return out
	}()...) {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(data, "yard.db-lock")) // the root commands make it again

	db, err := store.Open(ctx, "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.BackupInto(ctx, filepath.Join(data, "backups"), nil)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := store.Restore(ctx, st.Path, "sqlite", data, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(data, "yard.db-lock"),
		filepath.Join(data, "backups"),
		filepath.Join(data, "backups", ".lock"),
		st.Path,
		rep.Path,
	} {
		if u, g := owner(t, p); u != uid || g != gid {
			t.Errorf("%s: owned by %d:%d, want %d:%d", p, u, g, uid, gid)
		}
	}
	wantMode(t, rep.Path, 0o600)
}

// TestRestoreLeavesNothing: a refused restore into a data directory that
// does not exist creates none, nor a lock file beside an existing store
// that had none.
func TestRestoreLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	notADB := filepath.Join(dir, "notadb.db")
	if err := os.WriteFile(notADB, []byte("not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	execSQLite(t, foreign, `CREATE TABLE t (x)`, `PRAGMA journal_mode = DELETE`)
	for _, tc := range []struct{ file, want string }{
		{notADB, "not an SQLite database"},
		{foreign, "not a yard store"},
	} {
		newdir := filepath.Join(dir, "newdir")
		_, err := store.Restore(ctx, tc.file, "sqlite", newdir, time.Now(), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("restore %s: got %v, want an error saying %q", filepath.Base(tc.file), err, tc.want)
		}
		if _, err := os.Lstat(newdir); !errors.Is(err, fs.ErrNotExist) {
			entries, _ := os.ReadDir(newdir)
			t.Errorf("restore %s: the refused restore left %s (%v)", filepath.Base(tc.file), newdir, entries)
			os.RemoveAll(newdir)
		}

		data := t.TempDir()
		if _, err := store.Restore(ctx, tc.file, "sqlite", data, time.Now(), nil); err == nil {
			t.Errorf("restore %s into an empty directory succeeded", filepath.Base(tc.file))
		}
		if entries, _ := os.ReadDir(data); len(entries) > 0 {
			t.Errorf("restore %s: the refused restore left %v in the data directory", filepath.Base(tc.file), entries)
		}
	}
}

// TestOpenNamesTheStore: a store file that cannot be opened is refused
// with its path and the cause.
func TestOpenNamesTheStore(t *testing.T) {
	data := t.TempDir()
	path := filepath.Join(data, "yard.db")
	if err := os.Mkdir(path, 0o700); err != nil { // not a file: no one opens it
		t.Fatal(err)
	}
	_, err := store.Open(context.Background(), "sqlite", data)
	if err == nil || !strings.Contains(err.Error(), "open store "+path+": ") {
		t.Fatalf("open of a store that cannot be opened: got %v, want an error naming %s", err, path)
	}
	t.Log(err)
}
