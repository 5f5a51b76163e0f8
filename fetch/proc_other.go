//go:build !unix

package fetch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"time"
)

func killGroup(*exec.Cmd) {}

// lockDir serialises fetches of one directory where flock(2) does not
// exist: the lock is the file at path, created exclusively and removed on
// unlock, polled until ctx ends. A process that dies holding it leaves the
// file behind, to be removed by the operator.
func lockDir(ctx context.Context, path string) (func(), error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
