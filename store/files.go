package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The files of an SQLite store (docs/operations.md, "Files, modes and
// owners").
//
// The store, its -wal and -shm, its lock, its backups and the copies a
// restore stages or keeps aside hold password hashes and sealed secrets:
// each is mode 0600, in a directory of mode 0700, whatever the umask (a
// file is chmod'ed once created; SQLite gives -wal and -shm the store
// file's mode). The data directory is tightened to 0700 when a store in it
// is opened.
//
// A yard command run as root (yard backup, yard restore by an operator) in
// a directory owned by another user (the service's) gives what it creates
// there that directory's owner, so that the service can still open it; a
// restored store takes the owner of the store it replaces.

// DataDir creates the data directory dir (mode 0700) or tightens an
// existing one to 0700.
func DataDir(dir string) error {
	if _, err := privateDir(dir); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}

// privateDir creates dir with its missing parents, gives each one it
// creates its parent's owner (when running as root), and makes dir mode
// 0700. It returns the directories it created, the deepest first.
func privateDir(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := ownLikeParent(missing[i]); err != nil {
			return missing, err
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return missing, err
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return missing, fmt.Errorf("%s is mode %04o and cannot be made 0700: %w", dir, fi.Mode().Perm(), err)
		}
	}
	return missing, nil
}

// openPrivate opens the file path for reading and writing, creating it
// when it does not exist: mode 0600, with its directory's owner when
// running as root. created says whether it made the file.
func openPrivate(path string) (f *os.File, created bool, err error) {
	f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0)
		return f, false, err
	}
	if err != nil {
		return nil, false, err
	}
	if err := makePrivate(path); err != nil {
		f.Close()
		os.Remove(path)
		return nil, false, err
	}
	return f, true, nil
}

// makePrivate makes the file yard created at path mode 0600, owned as its
// directory is when running as root.
func makePrivate(path string) error {
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	return ownLikeParent(path)
}

// ownLikeParent gives path the owner of its directory when this process
// runs as root and they differ.
func ownLikeParent(path string) error {
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return err
	}
	return ownLike(path, dir)
}

// ownLike gives path the owner (user and group) of the file like when this
// process runs as root and they differ.
func ownLike(path string, like fs.FileInfo) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid, ok := fileOwner(like)
	if !ok {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if u, g, ok := fileOwner(fi); ok && u == uid && g == gid {
		return nil
	}
	return os.Lchown(path, uid, gid)
}

// openStoreFile makes sure the SQLite store file path can be opened for
// reading and writing before SQLite opens it, creating it (mode 0600,
// owned as its directory) when it does not exist, so that a refusal names
// the file and the cause instead of SQLite's "unable to open database
// file". A store file readable by others is made 0600.
func openStoreFile(path string) error {
	f, _, err := openPrivate(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = f.Chmod(fi.Mode().Perm() & 0o700) // best effort: the owner may be another user
	}
	return nil
}

// sqliteOpenCause finds why SQLite could not open the store at path when
// the file itself opens: a -wal or -shm this user cannot open, or a
// directory it cannot write (SQLite creates -wal and -shm there). It
// returns nil when it finds nothing.
func sqliteOpenCause(path string) error {
	for _, suffix := range []string{"-wal", "-shm"} {
		f, err := os.OpenFile(path+suffix, os.O_RDWR, 0)
		if err == nil {
			f.Close()
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	probe, err := os.CreateTemp(filepath.Dir(path), ".yard-probe-*")
	if err != nil {
		return fmt.Errorf("the directory %s: %w", filepath.Dir(path), errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}
