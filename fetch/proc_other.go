//go:build !unix

package fetch

import (
	"context"
	"os/exec"
	"sync"
)

func killGroup(*exec.Cmd) {}

var dirLocks sync.Map

// lockDir serialises fetches of one directory within the process.
func lockDir(_ context.Context, path string) (func(), error) {
	v, _ := dirLocks.LoadOrStore(path, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock, nil
}
