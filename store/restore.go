package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Restore of an SQLite store from a backup (docs/operations.md, "Backups
// and restore"); the locks it takes are described in backup.go.

// RestoreReport describes a finished restore.
type RestoreReport struct {
	// Path is the store file the copy now is.
	Path string
	// From is the copy's schema version; To the version after migrating
	// it forward (the binary's).
	From, To int64
	// Aside lists the files of the replaced store, renamed
	// PATH.replaced-TIME (with -wal and -shm when they were there).
	Aside []string
	// Released counts the bark tasks recorded as running in the copy,
	// handed back to run again once.
	Released int
}

// Restore replaces the SQLite store named by dsn and dataDir (as Open
// names it) by the backup src. It refuses with ErrStoreInUse, changing
// nothing, while any process has the store open. It checks a staged copy
// of src (PRAGMA integrity_check and foreign_key_check; a goose version
// no newer than the binary's), migrates it forward, hands back the bark
// tasks it records as running (their processes are gone: each runs again
// once), renames the current store's files aside (PATH.replaced-TIME,
// -wal and -shm with it) and moves the copy into place, mode 0600 and
// owned as the store it replaces (files.go). src itself is never written.
// A refused restore leaves nothing behind: src is checked to be an SQLite
// file before anything is created, and what a failed attempt created (the
// data directory, the lock file, the staged copy) is removed. say, when
// not nil, is told each step.
func Restore(ctx context.Context, src, dsn, dataDir string, now time.Time, say func(string)) (rep RestoreReport, err error) {
	if say == nil {
		say = func(string) {}
	}
	path, ok := SQLitePath(dsn, dataDir)
	if !ok {
		return rep, ErrNotSQLite
	}
	rep.Path = path
	if err := checkBackupFile(src, path); err != nil {
		return rep, err
	}

	// From here on what this attempt creates is removed if it fails, the
	// deepest first (a directory only when empty), and the lock files
	// only then closed.
	var created []string
	var held []*os.File
	defer func() {
		if err != nil {
			for _, p := range slices.Backward(created) {
				os.Remove(p)
			}
		}
		for _, f := range held {
			f.Close()
		}
	}()
	if dsn == "" || dsn == "sqlite" || dsn == "sqlite:" {
		dirs, err := privateDir(dataDir)
		slices.Reverse(dirs) // the shallowest first
		created = append(created, dirs...)
		if err != nil {
			return rep, fmt.Errorf("data directory: %w", err)
		}
	}

	// Nobody may have the store open: its own lock, and the replay log's
	// for a serve process of a binary older than the lock.
	lock, made, err := openPrivate(path + storeLockSuffix)
	if err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	held = append(held, lock)
	if made {
		created = append(created, lock.Name())
	}
	if err := lockFile(lock); err != nil {
		return rep, fmt.Errorf("%w: a process has %s open (a running yard serve, or another yard command); stop it and run yard restore again. Nothing was changed", ErrStoreInUse, path)
	}
	if _, err := os.Stat(replayLogDir(path)); err == nil {
		replay, made, err := openPrivate(filepath.Join(replayLogDir(path), "lock"))
		if err != nil {
			return rep, fmt.Errorf("restore: %w", err)
		}
		held = append(held, replay)
		if made {
			created = append(created, replay.Name())
		}
		if err := lockFile(replay); err != nil {
			return rep, fmt.Errorf("%w: a yard serve%s holds %s; stop it and run yard restore again. Nothing was changed",
				ErrStoreInUse, heldBy(replay), replayLogDir(path))
		}
	}

	// Staged copies of restores that did not finish (the process died):
	// no one else restores while the lock is held.
	for _, f := range filesWithPrefix(filepath.Dir(path), filepath.Base(path)+".restore-") {
		removeSQLiteFiles(f)
	}
	stamp := now.UTC().Format(backupStamp)
	staged := path + ".restore-" + stamp
	say("copying " + src + " to " + staged)
	// Removed at the end whatever happens: once moved into place (below)
	// the copy is the store's, and this removes nothing.
	defer removeSQLiteFiles(staged)
	if err := copyFile(src, staged); err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	if rep.From, rep.To, rep.Released, err = prepareRestore(ctx, staged, now, say); err != nil {
		return rep, err
	}
	// The copy takes the owner of the store it replaces (a restore run
	// as root keeps the service's store the service's).
	if current, serr := os.Stat(path); serr == nil {
		if err := ownLike(staged, current); err != nil {
			return rep, fmt.Errorf("restore: %w", err)
		}
	}

	// Swap: the current store's files aside (under a name no earlier
	// restore of the same second took), then the copy in.
	aside := path + ".replaced-" + stamp
	for n := 2; len(filesWithPrefix(filepath.Dir(path), filepath.Base(aside))) > 0; n++ {
		aside = path + ".replaced-" + stamp + "-" + strconv.Itoa(n)
	}
	var moved [][2]string
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		from, to := path+suffix, aside+suffix
		if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Rename(from, to); err != nil {
			for _, m := range slices.Backward(moved) {
				_ = os.Rename(m[1], m[0])
			}
			return rep, fmt.Errorf("restore: keeping the current store aside: %w", err)
		}
		moved = append(moved, [2]string{from, to})
		rep.Aside = append(rep.Aside, to)
	}
	if err := os.Rename(staged, path); err != nil {
		for _, m := range slices.Backward(moved) {
			_ = os.Rename(m[1], m[0])
		}
		return rep, fmt.Errorf("restore: %w", err)
	}
	// What is kept aside holds what the store held: 0600 too (a store of
	// an older release may be 0644).
	for _, f := range rep.Aside {
		_ = os.Chmod(f, 0o600)
	}
	if err := fsync(filepath.Dir(path), os.O_RDONLY); err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	return rep, nil
}

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// checkBackupFile checks, before a restore creates anything, that src is
// a file that can be a backup of the store at path: an SQLite database
// that is not the store itself and has no write-ahead log beside it.
func checkBackupFile(src, path string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("restore: %s is not a file", src)
	}
	if store, err := os.Stat(path); err == nil && os.SameFile(fi, store) {
		return fmt.Errorf("restore: %s is the store itself", src)
	}
	if wal, err := os.Stat(src + "-wal"); err == nil && wal.Size() > 0 {
		return fmt.Errorf("restore: %s has a write-ahead log beside it (%s): it is a live database or a file copy of one, not a backup", src, src+"-wal")
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != sqliteHeader {
		return fmt.Errorf("restore: %s is not an SQLite database (it does not begin with %q): not a backup", src, strings.TrimSuffix(sqliteHeader, "\x00"))
	}
	return nil
}

// prepareRestore checks the staged copy at path, migrates it forward,
// hands back its running tasks and leaves it a single file.
func prepareRestore(ctx context.Context, path string, now time.Time, say func(string)) (from, to int64, released int, err error) {
	conn, err := openSQLite(path, true, DefaultSQLiteBusyTimeout, "FULL")
	if err != nil {
		return 0, 0, 0, err
	}
	db := &DB{engine: SQLite, dsn: path, write: conn, read: conn, Now: func() time.Time { return now }, eventWake: make(chan struct{}, 1)}
	defer db.Close()

	say("checking " + path + ": PRAGMA integrity_check")
	if err := checkRows(ctx, conn, `PRAGMA integrity_check`, "ok"); err != nil {
		return 0, 0, 0, fmt.Errorf("restore: the copy fails PRAGMA integrity_check: %w", err)
	}
	if err := checkRows(ctx, conn, `PRAGMA foreign_key_check`, ""); err != nil {
		return 0, 0, 0, fmt.Errorf("restore: the copy fails PRAGMA foreign_key_check: %w", err)
	}
	var tables int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'`).Scan(&tables); err != nil {
		return 0, 0, 0, fmt.Errorf("restore: %w", err)
	}
	if tables == 0 {
		return 0, 0, 0, errors.New("restore: the copy is not a yard store (it has no goose_db_version table)")
	}
	p, err := newMigrations(SQLite, conn)
	if err != nil {
		return 0, 0, 0, err
	}
	if from, err = p.GetDBVersion(ctx); err != nil {
		return 0, 0, 0, fmt.Errorf("restore: schema version of the copy: %w", err)
	}
	sources := p.ListSources()
	to = sources[len(sources)-1].Version
	if from > to {
		return 0, 0, 0, fmt.Errorf("restore: the copy's schema (version %d) is newer than this binary's (%d): restore it with the yard that made it", from, to)
	}
	if from < to {
		say(fmt.Sprintf("migrating the copy from schema version %d to %d", from, to))
		if err := db.Migrate(ctx); err != nil {
			return 0, 0, 0, fmt.Errorf("restore: %w", err)
		}
	}
	// The processes that held these leases are gone: no one runs these
	// tasks. Pending again now, each runs once on the restored server
	// (the interrupted run counts as an attempt, as after a crash).
	n, err := affected(conn.ExecContext(ctx, `UPDATE tasks SET status = 'pending', run_at = $1, lease_owner = '', lease_token = '', lease_until = 0
		WHERE status = 'running'`, Millis(now)))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("restore: %w", err)
	}
	released = int(n)
	// One self-contained file to move into place; serve turns WAL back on.
	if _, err := conn.ExecContext(ctx, `PRAGMA journal_mode = DELETE`); err != nil {
		return 0, 0, 0, fmt.Errorf("restore: %w", err)
	}
	return from, to, released, nil
}

// checkRows runs a checking pragma and fails unless it answers exactly one
// row want, or no row when want is "".
func checkRows(ctx context.Context, conn *sql.DB, query, want string) error {
	rows, err := queryValues(ctx, conn, query)
	if err != nil {
		return err
	}
	var got []string
	for _, vals := range rows[:min(len(rows), 10)] {
		got = append(got, strings.TrimSpace(fmt.Sprintln(vals...)))
	}
	if (want == "" && len(got) == 0) || (len(got) == 1 && got[0] == want) {
		return nil
	}
	return errors.New(strings.Join(got, "; "))
}

// copyFile copies src into the new file dst (mode 0600, owned as its
// directory: makePrivate) and syncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = makePrivate(dst)
	if err == nil {
		_, err = io.Copy(out, in)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
