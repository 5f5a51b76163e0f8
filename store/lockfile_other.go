//go:build !unix

package store

import "os"

// lockFile does nothing where flock(2) does not exist: one process per
// SQLite store is then the operator's rule to keep.
func lockFile(*os.File) error { return nil }

// lockFileShared does nothing where flock(2) does not exist.
func lockFileShared(*os.File) error { return nil }
