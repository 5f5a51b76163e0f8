package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
	path, ok := sqliteFile(dsn)
	if !ok {
		return "", false
	}
	return cmp.Or(path, filepath.Join(dataDir, "yard.db")), true
}

// sqliteFile is the file an SQLite store's dsn names, "" when it names
// none (the data directory's yard.db), and false for any other store.
func sqliteFile(dsn string) (string, bool) {
	if dsn != "" && dsn != "sqlite" && !strings.HasPrefix(dsn, "sqlite:") && !strings.HasPrefix(dsn, "file:") {
		return "", false
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite"), ":")
	return strings.TrimPrefix(path, "file:"), true
}

// holdStore takes the shared lock of the SQLite store at path, which the
// caller keeps open while it uses the store.
func holdStore(path string) (*os.File, error) {
	f, _, err := openPrivate(path + storeLockSuffix)
	if err != nil {
		return nil, storeOpenError(path, err)
	}
	if err := lockFileShared(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open store %s: it is being restored (yard restore holds %s: %v): start again once it is done",
			path, path+storeLockSuffix, err)
	}
	return f, nil
}

// heldBy names the holder of the lock file f by the process id it wrote
// (openReplayLog): " (pid 1234)", or "" when it wrote none.
func heldBy(f *os.File) string {
	b := make([]byte, 20)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 {
		return ""
	}
	return " (pid " + strconv.Itoa(pid) + ")"
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
	// Removed at the end whatever happens: once linked into place (below)
	// the copy is dest's, and this removes nothing.
	defer removeSQLiteFiles(tmpName)
	// 0600 whatever the umask, owned as the directory (files.go); VACUUM
	// INTO keeps the file.
	if err := makePrivate(tmpName); err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}

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
	var watch sync.WaitGroup
	if progress != nil {
		watch.Go(func() {
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
		})
	}
	_, err = conn.ExecContext(ctx, `VACUUM INTO $1`, tmpName)
	close(stop)
	watch.Wait()
	if err != nil {
		return BackupStats{}, fmt.Errorf("backup: %w", err)
	}
	if err := fsync(tmpName, os.O_RDWR); err != nil {
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
	os.Remove(tmpName)
	if err := fsync(dir, os.O_RDONLY); err != nil {
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
	// os.ReadDir sorts by name, and a name's digits sort as its time does.
	var names []string
	for _, e := range slices.Backward(entries) {
		if _, ok := backupTime(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	return names, nil
}

// lockBackups takes the lock of the backups directory dir, creating both
// (files.go: mode 0700 and 0600, owned as the data directory). With wait
// it waits for the lock (until ctx ends); without, it returns nil and no
// error when another process holds it.
func lockBackups(ctx context.Context, dir string, wait bool) (*os.File, error) {
	if _, err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("backups: %w", err)
	}
	f, _, err := openPrivate(filepath.Join(dir, backupsLock))
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
// into the same directory, and for the next second while a backup of this
// second is there (newBackupPath).
func (db *DB) BackupInto(ctx context.Context, dir string, progress func(BackupProgress)) (BackupStats, error) {
	if db.engine != SQLite {
		return BackupStats{}, ErrNotSQLite
	}
	lock, err := lockBackups(ctx, dir, true)
	if err != nil {
		return BackupStats{}, err
	}
	defer lock.Close()
	dest, err := db.newBackupPath(ctx, dir)
	if err != nil {
		return BackupStats{}, err
	}
	return db.Backup(ctx, dest, progress)
}

// newBackupPath names a backup begun now in dir, whose lock the caller
// holds. Names are to the second: while a backup of the store clock's
// second is there (two backups begun within one second), it waits for the
// next second, for at most a few seconds of a clock that stands still.
func (db *DB) newBackupPath(ctx context.Context, dir string) (string, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		dest := filepath.Join(dir, BackupName(db.Now()))
		if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
			return dest, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("backup: %s exists", dest)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ScheduledBackup is the result of one ScheduledBackup call.
type ScheduledBackup struct {
	// Taken is the backup taken, nil when none was: another process is
	// taking one (Busy), or the newest is younger than the interval.
	Taken *BackupStats
	// Busy is set when another process (or another call in this one)
	// holds the directory's lock: it is taking a backup.
	Busy bool
	// Newest is the time of the newest backup in the directory before
	// this call, zero when there was none.
	Newest time.Time
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
		res.Busy = true
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
	due := true
	if len(names) > 0 {
		res.Newest, _ = backupTime(filepath.Base(names[0]))
		due = db.Now().Sub(res.Newest) >= every
	}
	if due {
		dest, err := db.newBackupPath(ctx, dir)
		if err != nil {
			return res, err
		}
		st, err := db.Backup(ctx, dest, nil)
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

// fsync writes the file at path, opened with flag, to the disk; for a
// directory (os.O_RDONLY) it makes a rename or a new file in it durable.
func fsync(path string, flag int) error {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
