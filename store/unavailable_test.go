package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
)

// TestUnavailable: errors of a store that cannot be reached are
// EUNAVAILABLE with a Retry-After; other errors are not.
func TestUnavailable(t *testing.T) {
	// A PostgreSQL URL on a port nobody listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, refused := store.Open(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/x?sslmode=disable", port), t.TempDir())
	if refused == nil {
		t.Fatal("open on a closed port succeeded")
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"wrapped deadline", fmt.Errorf("begin: %w", context.DeadlineExceeded), true},
		{"nil", nil, false},
		{"a bug", errors.New("sql: Scan error on column index 0"), false},
		{"validation", yard.Invalid("bad"), false},
		{"not found", yard.Errorf(yard.ENOTFOUND, "no"), false},
	} {
		got := store.Unavailable(tc.err)
		if (got != nil) != tc.want {
			t.Errorf("%s (%v): got %v, want unavailable %v", tc.name, tc.err, got, tc.want)
		}
		if got != nil && (got.Code != yard.EUNAVAILABLE || got.RetryAfter <= 0) {
			t.Errorf("%s: got %+v, want EUNAVAILABLE with RetryAfter", tc.name, got)
		}
	}
}
