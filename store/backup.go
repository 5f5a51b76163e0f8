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
	"strings"
	"time"

	"github.com/pressly/goose/v3"
)

// Backups and restore of an SQLite store (docs/operations.md, "Backups and
// restore").
//
// A backup is SQLite's VACUUM INTO run on a connection of its own: one read
// transaction, so the copy is the store as of one commit, and in WAL mode
// it takes no lock a writer waits for. It writes a temporary file beside the
// destination, syncs it and renames it into place, so a backup file that
// exists is whole.
//
// Every process that opens an SQLite store holds a shared flock(2) on its
// lock file, PATH-lock (holdStore), for as long as the store is open;
// Restore takes it exclusively without waiting, so it refuses while any
// process (yard serve, or any other yard command) has the store open, and a
// process that starts while a restore runs stops at once.

// storeLockSuffix names the lock file beside an SQLite store file.
const storeLockSuffix = "-lock"

// ErrStoreInUse is returned by Restore when another process has the store
// open.
var ErrStoreInUse = errors.New("the store is in use")

// ErrNotSQLite is returned by Backup and Restore for a PostgreSQL store.
var ErrNotSQLite = errors.New("not an SQLite store")

// SQLitePath returns the file of an SQLite store named as Open names it
// ("", "sqlite", "sqlite:PATH", "file:PATH"), and false for any other store.
func SQLitePath(dsn, dataDir string) (string, bool) {
	if dsn != "" && dsn != "sqlite" && !strings.HasPrefix(dsn, "sqlite:") && !strings.HasPrefix(dsn, "file:") {
		return "", false
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite"), ":")
	path = strings.TrimPrefix(path, "file:")
	if path == "" {
		path = filepath.Join(dataDir, "yard.db")
	}
	return path, true
}

// holdStore takes the shared lock of the SQLite store at path, which the
// caller keeps open while it uses the store.
func holdStore(path string) (*os.File, error) {
	f, err := os.OpenFile(path+storeLockSuffix, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	if err := lockFileShared(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open sqlite: %s is being restored (yard restore holds %s: %v): start again once it is done",
			path, path+storeLockSuffix, err)
	}
	return f, nil
}

// BackupProgress is what a running backup reports.
type BackupProgress struct {
	// Written is the bytes of the copy written so far.
	Written int64
	// Total is the bytes of the store's pages in use: about the size the
	// copy will have.
	Total int64
}

// BackupStats describes a finished backup.
type BackupStats struct {
	Path  string
	Bytes int64
	Took  time.Duration
}

// Backup writes a consistent copy of the SQLite store into dest, which
// must not exist, while the store keeps serving. progress, when not nil,
// is called four times a second while the copy is written, and once at the
// end. The copy is a single file in rollback-journal mode with mode 0600.
// On PostgreSQL it returns ErrNotSQLite: back up with pg_dump.
func (db *DB) Backup(ctx context.Context, dest string, progress func(BackupProgress)) (BackupStats, error) {
	start := time.Now()
	if db.engine != SQLite {
		return BackupStats{}, ErrNotSQLite
	}
	if _, err := os.Lstat(dest); err == nil {
		return BackupStats{}, fmt.Errorf("backup: %s exists", dest)
	}
	dir := filepath.Dir(dest)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	tmpName := tmp.Name()
	tmp.Close() // VACUUM INTO writes into an empty file
	done := false
	defer func() {
		if !done {
			removeSQLiteFiles(tmpName)
		}
	}()

	// A connection of its own, not one of the pool that serves reads:
	// the copy holds it for as long as it takes.
	conn, err := openSQLite(db.dsn, false, DefaultSQLiteBusyTimeout, "NORMAL")
	if err != nil {
		return BackupStats{}, err
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	var pages, free, size int64
	for q, v := range map[string]*int64{`PRAGMA page_count`: &pages, `PRAGMA freelist_count`: &free, `PRAGMA page_size`: &size} {
		if err := conn.QueryRowContext(ctx, q).Scan(v); err != nil {
			return BackupStats{}, fmt.Errorf("backup: %w", err)
		}
	}
	total := (pages - free) * size

	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if progress == nil {
			return
		}
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if fi, err := os.Stat(tmpName); err == nil {
					progress(BackupProgress{Written: fi.Size(), Total: total})
				}
			}
		}
	}()
	_, err = conn.ExecContext(ctx, `VACUUM INTO $1`, tmpName)
	close(stop)
	<-watched
	if err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	if err := syncFile(tmpName); err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	fi, err := os.Stat(tmpName)
	if err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	// A hard link does not replace an existing file, as a rename would.
	if err := os.Link(tmpName, dest); err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	done = true
	os.Remove(tmpName)
	if err := syncDir(dir); err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	if progress != nil {
		progress(BackupProgress{Written: fi.Size(), Total: total})
	}
	return BackupStats{Path: dest, Bytes: fi.Size(), Took: time.Since(start)}, nil
}

// The backups of a backups directory are named by the UTC time they began,
// to the second: yard-20261125T170000Z.db.
const (
	backupPrefix = "yard-"
	backupSuffix = ".db"
	backupStamp  = "20060102T150405Z"
	// backupsLock is the lock file of a backups directory: whoever holds
	// it exclusively is taking a backup into the directory.
	backupsLock = ".lock"
)

// BackupName is the file name of a backup begun at t.
func BackupName(t time.Time) string {
	return backupPrefix + t.UTC().Format(backupStamp) + backupSuffix
}

// backupTime parses a name made by BackupName.
func backupTime(name string) (time.Time, bool) {
	s, ok := strings.CutPrefix(name, backupPrefix)
	if !ok {
		return time.Time{}, false
	}
	if s, ok = strings.CutSuffix(s, backupSuffix); !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(backupStamp, s)
	return t, err == nil
}

// Backups lists the backups in dir (files named by BackupName), newest
// first.
func Backups(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if _, ok := backupTime(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // the time's digits sort as the times do
	slices.Reverse(names)
	for i, n := range names {
		names[i] = filepath.Join(dir, n)
	}
	return names, nil
}

// lockBackups takes the lock of the backups directory dir, creating both.
// With wait it waits for the lock (until ctx ends); without, it returns
// nil and no error when another process holds it.
func lockBackups(ctx context.Context, dir string, wait bool) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("backups: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, backupsLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("backups: %w", err)
	}
	for {
		if err := lockFile(f); err == nil {
			return f, nil
		}
		if !wait {
			f.Close()
			return nil, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// BackupInto takes a backup into the backups directory dir, named by the
// store's clock (BackupName). It waits while another process takes one
// into the same directory.
func (db *DB) BackupInto(ctx context.Context, dir string, progress func(BackupProgress)) (BackupStats, error) {
	if db.engine != SQLite {
		return BackupStats{}, ErrNotSQLite
	}
	lock, err := lockBackups(ctx, dir, true)
	if err != nil {
		return BackupStats{}, err
	}
	defer lock.Close()
	return db.Backup(ctx, filepath.Join(dir, BackupName(db.Now())), progress)
}

// ScheduledBackup is the result of one ScheduledBackup call.
type ScheduledBackup struct {
	// Taken is the backup taken, nil when none was.
	Taken *BackupStats
	// Skipped says why none was taken: another process is taking one,
	// or the newest is younger than the interval.
	Skipped string
	// Pruned lists the backups removed to keep the newest ones.
	Pruned []string
}

// ScheduledBackup takes a backup into dir when the newest there is at
// least every old, then keeps the newest keep backups and removes the
// others. Processes sharing dir take turns through its lock: one that
// finds the lock held skips, and one that gets it after another took a
// backup finds that backup younger than every and skips too, so one backup
// is taken per interval whatever the number of processes.
func (db *DB) ScheduledBackup(ctx context.Context, dir string, every time.Duration, keep int) (ScheduledBackup, error) {
	var res ScheduledBackup
	if db.engine != SQLite {
		return res, ErrNotSQLite
	}
	lock, err := lockBackups(ctx, dir, false)
	if err != nil {
		return res, err
	}
	if lock == nil {
		res.Skipped = "another process is taking a backup"
		return res, nil
	}
	defer lock.Close()
	// Temporary files of backups that did not finish (the process died):
	// no one writes into dir but the lock's holder.
	for _, f := range filesWithPrefix(dir, "."+backupPrefix) {
		if strings.Contains(filepath.Base(f), backupSuffix+".tmp-") {
			removeSQLiteFiles(f)
		}
	}
	names, err := Backups(dir)
	if err != nil {
		return res, err
	}
	now := db.Now()
	if len(names) > 0 {
		newest, _ := backupTime(filepath.Base(names[0]))
		if now.Sub(newest) < every {
			res.Skipped = "the newest backup is " + now.Sub(newest).Truncate(time.Second).String() + " old"
		}
	}
	if res.Skipped == "" {
		st, err := db.Backup(ctx, filepath.Join(dir, BackupName(now)), nil)
		if err != nil {
			return res, err
		}
		res.Taken = &st
		if names, err = Backups(dir); err != nil {
			return res, err
		}
	}
	if keep > 0 && len(names) > keep {
		for _, n := range names[keep:] {
			if err := os.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, fmt.Errorf("backups: %w", err)
			}
			res.Pruned = append(res.Pruned, n)
		}
	}
	return res, nil
}

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
// -wal and -shm with it) and moves the copy into place. src itself is
// never written. say, when not nil, is told each step.
func Restore(ctx context.Context, src, dsn, dataDir string, now time.Time, say func(string)) (rep RestoreReport, err error) {
	if say == nil {
		say = func(string) {}
	}
	path, ok := SQLitePath(dsn, dataDir)
	if !ok {
		return rep, ErrNotSQLite
	}
	rep.Path = path
	fi, err := os.Stat(src)
	if err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return rep, fmt.Errorf("restore: %s is not a file", src)
	}
	if same, _ := sameFile(src, path); same {
		return rep, fmt.Errorf("restore: %s is the store itself", src)
	}
	if wal, err := os.Stat(src + "-wal"); err == nil && wal.Size() > 0 {
		return rep, fmt.Errorf("restore: %s has a write-ahead log beside it (%s): it is a live database or a file copy of one, not a backup", src, src+"-wal")
	}
	if dsn == "" || dsn == "sqlite" || dsn == "sqlite:" {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return rep, fmt.Errorf("data directory: %w", err)
		}
	}

	// Nobody may have the store open: its own lock, and the replay log's
	// for a serve process of a binary older than the lock.
	lock, err := os.OpenFile(path+storeLockSuffix, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	defer lock.Close()
	if err := lockFile(lock); err != nil {
		return rep, fmt.Errorf("%w: a process has %s open (a running yard serve, or another yard command); stop it and run yard restore again. Nothing was changed", ErrStoreInUse, path)
	}
	if _, err := os.Stat(replayLogDir(path)); err == nil {
		replay, err := os.OpenFile(filepath.Join(replayLogDir(path), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return rep, fmt.Errorf("restore: %w", err)
		}
		defer replay.Close()
		if err := lockFile(replay); err != nil {
			return rep, fmt.Errorf("%w: a yard serve holds %s; stop it and run yard restore again. Nothing was changed", ErrStoreInUse, replayLogDir(path))
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
	if err := copyFile(src, staged); err != nil {
		removeSQLiteFiles(staged)
		return rep, fmt.Errorf("restore: %w", err)
	}
	installed := false
	defer func() {
		if !installed {
			removeSQLiteFiles(staged)
		}
	}()
	if rep.From, rep.To, rep.Released, err = prepareRestore(ctx, staged, now, say); err != nil {
		return rep, err
	}

	// Swap: the current store's files aside, then the copy in.
	aside := path + ".replaced-" + stamp
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
	installed = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return rep, fmt.Errorf("restore: %w", err)
	}
	return rep, nil
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
	p, err := migrationProvider(conn)
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
	res, err := conn.ExecContext(ctx, `UPDATE tasks SET status = 'pending', run_at = $1, lease_owner = '', lease_token = '', lease_until = 0
		WHERE status = 'running'`, Millis(now))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("restore: %w", err)
	}
	n, _ := res.RowsAffected()
	released = int(n)
	// One self-contained file to move into place; serve turns WAL back on.
	if _, err := conn.ExecContext(ctx, `PRAGMA journal_mode = DELETE`); err != nil {
		return 0, 0, 0, fmt.Errorf("restore: %w", err)
	}
	return from, to, released, nil
}

// migrationProvider is goose over the embedded migrations on an SQLite
// connection pool.
func migrationProvider(conn *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, conn, sub)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// checkRows runs a checking pragma and fails unless it answers exactly one
// row want, or no row when want is "".
func checkRows(ctx context.Context, conn *sql.DB, query, want string) error {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var got []string
	for rows.Next() {
		vals, err := scanValues(rows, len(cols))
		if err != nil {
			return err
		}
		if len(got) < 10 {
			got = append(got, strings.TrimSpace(fmt.Sprintln(vals...)))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if (want == "" && len(got) == 0) || (len(got) == 1 && got[0] == want) {
		return nil
	}
	return errors.New(strings.Join(got, "; "))
}

// copyFile copies src into the new file dst (mode 0600) and syncs it.
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
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// filesWithPrefix lists the files of dir whose names start with prefix.
func filesWithPrefix(dir, prefix string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// removeSQLiteFiles removes an SQLite file and its companions.
func removeSQLiteFiles(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + suffix)
	}
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename or a new file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// sameFile reports whether a and b are one file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}
