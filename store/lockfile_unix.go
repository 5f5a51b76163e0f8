//go:build unix

package store

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f without waiting; it lasts until f
// is closed or the process ends.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// lockFileShared takes a shared lock on f without waiting: any number of
// shared locks stand together, and none beside an exclusive one.
func lockFileShared(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
}
