package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// openSQLite opens (and migrates) the SQLite store of the data directory.
func openSQLite(t *testing.T, data string, opts ...store.Option) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), "sqlite", data, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// TestSQLiteSync: --sqlite-sync sets the pragma synchronous of the writer
// and of the readers (FULL is 2, NORMAL 1), FULL by default, and the store
// reports what an answered write survives; PostgreSQL reports its server's
// settings.
func TestSQLiteSync(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		opts      []store.Option
		want      int64
		powerSafe bool
	}{
		{nil, 2, true},
		{[]store.Option{store.WithSQLiteSync(store.SyncFull)}, 2, true},
		{[]store.Option{store.WithSQLiteSync(store.SyncNormal)}, 1, false},
	} {
		db := openSQLite(t, t.TempDir(), tc.opts...)
		for _, reader := range []bool{false, true} {
			got, err := db.SQLitePragma(ctx, reader, "synchronous")
			if err != nil || got != tc.want {
				t.Errorf("PRAGMA synchronous (reader %v): got %d (%v), want %d", reader, got, err, tc.want)
			}
		}
		d, err := db.Durability(ctx)
		if err != nil || d.PowerSafe != tc.powerSafe || !strings.HasPrefix(d.Setting, "sqlite synchronous=") {
			t.Errorf("Durability: got %+v (%v), want power-safe %v", d, err, tc.powerSafe)
		}
	}
	if _, err := store.Open(ctx, "sqlite", t.TempDir(), store.WithSQLiteSync("off")); err == nil {
		t.Error("WithSQLiteSync(off) was accepted")
	}
	t.Run(store.Postgres, func(t *testing.T) {
		// The test cluster runs without fsync (storetest): the store
		// reports the server's settings, whatever they are.
		db := storetest.Open(t, store.Postgres)
		var commit, fsync string
		if err := db.Read().QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&commit); err != nil {
			t.Fatal(err)
		}
		if err := db.Read().QueryRowContext(ctx, `SHOW fsync`).Scan(&fsync); err != nil {
			t.Fatal(err)
		}
		d, err := db.Durability(ctx)
		want := "postgres synchronous_commit=" + commit + ", fsync=" + fsync
		if err != nil || d.Setting != want || d.PowerSafe != (commit != "off" && fsync == "on") {
			t.Errorf("Durability on PostgreSQL: got %+v (%v), want %s", d, err, want)
		}
		if _, err := db.Backup(ctx, filepath.Join(t.TempDir(), "x.db"), nil); !errors.Is(err, store.ErrNotSQLite) {
			t.Errorf("Backup of PostgreSQL: got %v, want ErrNotSQLite", err)
		}
	})
}

// TestBackupUnderWrites: a backup taken while writers commit holds every
// write committed before it began, opens as a store, and is one file of
// mode 0600 with no temporary file left beside it.
func TestBackupUnderWrites(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	db := openSQLite(t, data)
	owner := &yard.User{Name: "owner", Roles: []string{yard.RoleUser}}
	if err := db.CreateUser(ctx, owner, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	type write struct {
		id string
		at time.Time // when the commit returned
	}
	var (
		mu     sync.Mutex
		writes []write
		stop   atomic.Bool
		wg     sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				d := &yard.Dog{Name: fmt.Sprintf("w%d-%d", w, i), Email: "d@example.org", Owner: owner.ID}
				if err := db.CreateDog(ctx, d); err != nil {
					t.Errorf("create dog: %v", err)
					return
				}
				mu.Lock()
				writes = append(writes, write{d.ID, time.Now()})
				mu.Unlock()
			}
		})
	}
	for {
		mu.Lock()
		n := len(writes)
		mu.Unlock()
		if n >= 300 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	dest := filepath.Join(t.TempDir(), "copy.db")
	began := time.Now()
	var last store.BackupProgress
	st, err := db.Backup(ctx, dest, func(p store.BackupProgress) { last = p })
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	fi, err := os.Stat(dest)
	if err != nil || fi.Size() != st.Bytes || last.Written != st.Bytes || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v, stats %+v, last progress %+v", fi, err, st, last)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 1 {
		t.Errorf("beside the backup: got %d files, want only it", len(entries))
	}
	if _, err := db.Backup(ctx, dest, nil); err == nil {
		t.Error("a backup over an existing file was taken")
	}

	copyDB, err := store.Open(ctx, "sqlite:"+dest, "")
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	if pending, err := copyDB.Pending(ctx); err != nil || pending {
		t.Fatalf("the copy has pending migrations: %v %v", pending, err)
	}
	before := 0
	for _, w := range writes {
		if !w.at.Before(began) {
			continue
		}
		before++
		if _, err := copyDB.FindDogByID(ctx, w.id); err != nil {
			t.Fatalf("dog %s, committed before the backup began, is not in the copy: %v", w.id, err)
		}
	}
	t.Logf("%d writes, %d committed before the backup began, all in the copy (%d bytes, %s)", len(writes), before, st.Bytes, st.Took)
}

// oldStore makes an SQLite store as a binary of schema version 10 left it:
// a person, a dog, and two bark tasks, one pending and one running under
// the lease of a process that is gone.
func oldStore(t *testing.T, path string) (dogID string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.MigrateTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	w, now := db.Read(), time.Now().UnixMilli()
	dogID = yard.NewID()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO users (id, name, name_key, roles, created_at, updated_at) VALUES ('u1', 'Old', 'old', 'user', $1, $1)`, []any{now}},
		{`INSERT INTO dogs (id, name, email, owner_id, bark_effect, created_at, updated_at) VALUES ($1, 'Rex', 'rex@example.org', 'u1', 'record', $2, $2)`, []any{dogID, now}},
		{`INSERT INTO tasks (id, dog_id, effect, status, async, source, created_at, run_at) VALUES ('t-pending', $1, 'record', 'pending', TRUE, 'request', $2, $2)`, []any{dogID, now}},
		{`INSERT INTO tasks (id, dog_id, effect, status, async, source, created_at, run_at, started_at, attempts, lease_owner, lease_token, lease_until)
			VALUES ('t-running', $1, 'record', 'running', TRUE, 'request', $2, $2, $2, 1, 'gone-1', 'tok', $3)`, []any{dogID, now, now + time.Hour.Milliseconds()}},
	} {
		if _, err := w.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	return dogID
}

// TestRestoreOlderSchema: a backup of a store of an older schema restores
// into the current binary: it is checked, migrated forward, and its
// running task is handed back, so each task runs once.
func TestRestoreOlderSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dogID := oldStore(t, filepath.Join(dir, "old.db"))
	old, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "old.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "old-backup.db")
	if _, err := old.Backup(ctx, backup, nil); err != nil {
		t.Fatal(err)
	}
	old.Close()

	data := t.TempDir()
	current := openSQLite(t, data)
	if err := current.CreateUser(ctx, &yard.User{Name: "newer", Roles: []string{yard.RoleUser}}, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	current.Close()
	// The staged copy of a restore that died half-way is removed.
	stale := filepath.Join(data, "yard.db.restore-19991231T235959Z")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := fileSum(t, backup)
	var steps []string
	rep, err := store.Restore(ctx, backup, "sqlite", data, time.Now(), func(s string) { steps = append(steps, s) })
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if rep.From != 10 || rep.To <= 10 || rep.Released != 1 || len(rep.Aside) == 0 {
		t.Fatalf("report: %+v", rep)
	}
	if !slices.ContainsFunc(steps, func(s string) bool { return strings.Contains(s, "migrating the copy from schema version 10") }) {
		t.Errorf("steps: %q", steps)
	}
	if fileSum(t, backup) != sum {
		t.Error("restore changed the backup file")
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the staged copy of an earlier restore is still there")
	}
	// The replaced store is kept aside and still opens with what it held.
	aside, err := store.Open(ctx, "sqlite:"+rep.Aside[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aside.FindUserByName(ctx, "newer"); err != nil {
		t.Errorf("the store kept aside lost its person: %v", err)
	}
	aside.Close()

	db := openSQLite(t, data)
	if pending, err := db.Pending(ctx); err != nil || pending {
		t.Fatalf("restored store has pending migrations: %v %v", pending, err)
	}
	if d, err := db.FindDogByID(ctx, dogID); err != nil || d.Name != "Rex" {
		t.Fatalf("dog of the old store: %v %v", d, err)
	}
	if _, err := db.FindUserByName(ctx, "newer"); err == nil {
		t.Error("the restored store holds a person of the replaced one")
	}
	// Both tasks are due now, each claimed once.
	claimed := map[string]int{}
	for range 3 {
		b, _, err := db.ClaimTaskOf(ctx, "restored", time.Minute, yard.ClaimFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if b != nil {
			claimed[b.ID]++
		}
	}
	if len(claimed) != 2 || claimed["t-pending"] != 1 || claimed["t-running"] != 1 {
		t.Fatalf("claims after restore: got %v, want each task once", claimed)
	}
}

// TestRestoreRefusesStoreInUse: while a process has the store open,
// restore refuses and changes nothing; while a restore holds it, the store
// does not open.
func TestRestoreRefusesStoreInUse(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	db := openSQLite(t, data)
	if err := db.CreateUser(ctx, &yard.User{Name: "kept", Roles: []string{yard.RoleUser}}, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := db.Backup(ctx, backup, nil); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, data)
	_, err := store.Restore(ctx, backup, "sqlite", data, time.Now(), nil)
	if !errors.Is(err, store.ErrStoreInUse) || !strings.Contains(err.Error(), "Nothing was changed") {
		t.Fatalf("restore of a store in use: got %v, want ErrStoreInUse", err)
	}
	if after := dirState(t, data); !slices.Equal(before, after) {
		t.Fatalf("a refused restore changed the data directory:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := db.FindUserByName(ctx, "kept"); err != nil {
		t.Fatal(err)
	}

	// A process that starts while a restore holds the store stops.
	db.Close()
	lock, err := os.OpenFile(filepath.Join(data, "yard.db-lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(ctx, "sqlite", data); err == nil || !strings.Contains(err.Error(), "being restored") {
		t.Fatalf("open during a restore: got %v", err)
	}
	lock.Close()
	if _, err := store.Restore(ctx, backup, "sqlite", data, time.Now(), nil); err != nil {
		t.Fatalf("restore once nobody holds the store: %v", err)
	}
}

// TestRestoreRefusesBadCopies: a file that is not a database, a damaged
// one, a database that is not a yard store, a store of a newer schema, and a live database
// with its write-ahead log are refused, and the store is left as it was.
func TestRestoreRefusesBadCopies(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	openSQLite(t, data).Close()
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.db") // an SQLite header, then garbage
	if err := os.WriteFile(corrupt, []byte("SQLite format 3\x00"+strings.Repeat("not a page ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	execSQLite(t, foreign, `CREATE TABLE t (x)`, `PRAGMA journal_mode = DELETE`)
	newer := filepath.Join(dir, "newer.db")
	src, _ := store.Open(ctx, "sqlite:"+filepath.Join(dir, "src.db"), "")
	if err := src.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Backup(ctx, newer, nil); err != nil {
		t.Fatal(err)
	}
	src.Close()
	execSQLite(t, newer, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, TRUE)`)
	live := filepath.Join(dir, "live.db")
	liveDB := storetest.OpenDSN(t, "sqlite:"+live)
	if err := liveDB.CreateUser(ctx, &yard.User{Name: "x", Roles: []string{yard.RoleUser}}, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}

	before := dirState(t, data)
	for _, tc := range []struct {
		file, want string
	}{
		{garbage, "not an SQLite database"},
		{corrupt, "integrity_check"},
		{foreign, "not a yard store"},
		{newer, "newer than this binary"},
		{live, "write-ahead log"},
		{filepath.Join(dir, "missing.db"), "no such file"},
	} {
		_, err := store.Restore(ctx, tc.file, "sqlite", data, time.Now(), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("restore %s: got %v, want an error saying %q", filepath.Base(tc.file), err, tc.want)
		}
		if after := dirState(t, data); !slices.Equal(before, after) {
			t.Fatalf("a refused restore of %s changed the data directory:\nbefore %v\nafter  %v", tc.file, before, after)
		}
	}
}

// TestScheduledBackupsTwoProcesses: two handles on one store (each holds
// its own open file of the backups directory's lock, as two processes do)
// ask for a backup at every tick of one clock: one backup is taken per
// interval, none in between, and only the newest keep stay.
func TestScheduledBackupsTwoProcesses(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	a, b := openSQLite(t, data), openSQLite(t, data)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC).UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	a.Now, b.Now = now, now
	dir := filepath.Join(data, "backups")
	const every, keep = 6 * time.Hour, 3
	// The temporary file of a backup whose process died is removed.
	stale := filepath.Join(dir, ".yard-19991231T235959Z.db.tmp-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	var want []string
	for tick := range 16 { // every 2 h: a backup on every third tick
		var taken atomic.Int32
		var wg sync.WaitGroup
		for _, db := range []*store.DB{a, b} {
			wg.Go(func() {
				res, err := db.ScheduledBackup(ctx, dir, every, keep)
				if err != nil {
					t.Errorf("tick %d: %v", tick, err)
				}
				if res.Taken != nil {
					taken.Add(1)
				}
			})
		}
		wg.Wait()
		wantTaken := int32(0)
		if tick%3 == 0 {
			wantTaken = 1
			want = append(want, store.BackupName(now()))
		}
		if taken.Load() != wantTaken {
			t.Fatalf("tick %d (%s): %d backups taken, want %d", tick, now().Format(time.TimeOnly), taken.Load(), wantTaken)
		}
		clock.Add((2 * time.Hour).Milliseconds())
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the temporary file of a backup that died is still there")
	}
	got, err := store.Backups(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		got[i] = filepath.Base(p)
	}
	slices.Reverse(want)
	if !slices.Equal(got, want[:keep]) {
		t.Fatalf("backups kept: got %v, want the newest %d of %v", got, keep, want)
	}
	// A manual backup waits for the lock and goes beside them.
	clock.Add(time.Second.Milliseconds())
	st, err := a.BackupInto(ctx, dir, nil)
	if err != nil || filepath.Base(st.Path) != store.BackupName(now()) {
		t.Fatalf("BackupInto: %+v %v", st, err)
	}
}

// dirState lists a directory's files with their sizes and contents' sums.
func dirState(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		s := e.Name()
		if e.Type().IsRegular() {
			s += " " + fileSum(t, filepath.Join(dir, e.Name()))
		}
		out = append(out, s)
	}
	return out
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))[:16]
}

// execSQLite runs statements on an SQLite file outside the store.
func execSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	d, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, s := range stmts {
		if _, err := d.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
