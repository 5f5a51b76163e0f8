//go:build unix

package store

import (
	"fmt"
	"os"
	"syscall"
)

// mapSharedIndex maps the first page of SQLite's WAL index (the -shm file
// beside the database at path) read-only, for quietProbe. The caller keeps
// a connection open while the mapping is used: SQLite truncates or deletes
// the file only when no connection has it open.
func mapSharedIndex(path string) ([]byte, func(), error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() < walIndexHeader {
		return nil, nil, fmt.Errorf("%s-shm: %d bytes, not a WAL index", path, st.Size())
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, os.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return m, func() { _ = syscall.Munmap(m) }, nil
}
