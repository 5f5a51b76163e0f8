//go:build !unix

package store

import "errors"

// mapSharedIndex is not available here: quietProbe runs its statement.
func mapSharedIndex(string) ([]byte, func(), error) {
	return nil, nil, errors.New("no shared-memory WAL index on this system")
}
