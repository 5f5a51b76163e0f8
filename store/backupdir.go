package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/yard-api/yard"
)

// BackupDir is a store's backups directory as the API's backup endpoints
// see it (httpapi.Backups; docs/api.md, "Backups"). A backup taken through
// it is taken by ScheduledBackup, the code of serve --backup-every: the
// same names, modes, lock and pruning (Keep, serve's --backup-keep).
type BackupDir struct {
	// DB is the store backed up.
	DB *DB
	// Dir is the backups directory, DATA/backups.
	Dir string
	// Keep is how many backups are kept; older ones are removed after a
	// backup is taken (0 keeps all).
	Keep int
	// taking is held while this process takes a backup through it: one
	// at a time, also where the directory's flock(2) does not exist.
	taking sync.Mutex
}

// pgDumpMessage is the refusal of a backup of a PostgreSQL store.
const pgDumpMessage = "This store is PostgreSQL: its backups are pg_dump's, taken while the servers keep serving (docs/operations.md, \"Backups and restore\", PostgreSQL)."

// errTaking is the refusal of a backup while another is being taken.
func errTaking() error {
	return yard.Errorf(yard.ECONFLICT, "A backup is being taken now; it is listed once it is done.")
}

// TakeBackup takes a backup now, unless the newest backup in the directory
// is younger than minAge (ERATELIMIT, RetryAfter the seconds until it is
// not) or another backup is being taken into it, by this process or
// another (ECONFLICT). On PostgreSQL it is ECONFLICT naming pg_dump.
func (b *BackupDir) TakeBackup(ctx context.Context, minAge time.Duration) (yard.Backup, error) {
	if b.DB.engine != SQLite {
		return yard.Backup{}, yard.Errorf(yard.ECONFLICT, "%s", pgDumpMessage)
	}
	if !b.taking.TryLock() {
		return yard.Backup{}, errTaking()
	}
	defer b.taking.Unlock()
	res, err := b.DB.ScheduledBackup(ctx, b.Dir, minAge, b.Keep)
	if err != nil {
		return yard.Backup{}, err
	}
	switch {
	case res.Busy:
		return yard.Backup{}, errTaking()
	case res.Taken == nil:
		age := b.DB.Now().Sub(res.Newest)
		wait := int(math.Ceil((minAge - age).Seconds()))
		return yard.Backup{}, &yard.Error{Code: yard.ERATELIMIT, RetryAfter: min(max(wait, 1), int(math.Ceil(minAge.Seconds()))),
			Message: fmt.Sprintf("The newest backup is %s old: a backup is taken at most every %s.", max(age, 0).Truncate(time.Second), minAge)}
	}
	name := filepath.Base(res.Taken.Path)
	t, _ := backupTime(name)
	return yard.Backup{Name: name, Size: res.Taken.Bytes, CreatedAt: t}, nil
}

// ListBackups lists the backups in the directory, newest first; none on
// PostgreSQL.
func (b *BackupDir) ListBackups(context.Context) ([]yard.Backup, error) {
	if b.DB.engine != SQLite {
		return nil, nil
	}
	paths, err := Backups(b.Dir)
	if err != nil {
		return nil, err
	}
	out := make([]yard.Backup, 0, len(paths))
	for _, p := range paths {
		bk, err := backupAt(b.Dir, filepath.Base(p))
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			continue // pruned since the directory was read
		}
		if err != nil {
			return nil, err
		}
		out = append(out, bk)
	}
	return out, nil
}

// FindBackup returns the backup of that name: ENOTFOUND for a name that
// is not a backup's (yard-20261125T170000Z.db, so never a path outside the
// directory) or that the directory does not hold.
func (b *BackupDir) FindBackup(_ context.Context, name string) (yard.Backup, error) {
	if b.DB.engine != SQLite {
		return yard.Backup{}, yard.Errorf(yard.ENOTFOUND, "No backup has this name: this store is PostgreSQL, whose backups are pg_dump's.")
	}
	return backupAt(b.Dir, name)
}

// backupAt describes the backup name in dir.
func backupAt(dir, name string) (yard.Backup, error) {
	t, ok := backupTime(name)
	if !ok || BackupName(t) != name {
		return yard.Backup{}, yard.Errorf(yard.ENOTFOUND, "No backup has this name.")
	}
	fi, err := os.Lstat(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return yard.Backup{}, yard.Errorf(yard.ENOTFOUND, "No backup has this name.")
	}
	if err != nil {
		return yard.Backup{}, fmt.Errorf("backups: %w", err)
	}
	return yard.Backup{Name: name, Size: fi.Size(), CreatedAt: t}, nil
}
