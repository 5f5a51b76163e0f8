package retention

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestRunRounds: a round prunes until a batch comes back short or fails,
// and every outcome is reported while the context lasts.
func TestRunRounds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failed := errors.New("the store is down")
	type result struct {
		n   int
		err error
	}
	// Round 1: two full batches and a short one; round 2: a failure;
	// round 3: an empty batch, after which the context ends.
	results := []result{{10, nil}, {10, nil}, {3, nil}, {0, failed}, {0, nil}}
	var limits []int
	var reports []error
	calls := 0
	prune := func(_ context.Context, limit int) (int, error) {
		limits = append(limits, limit)
		calls++
		if calls > len(results) { // a tick that won the race with the end
			return 0, nil
		}
		r := results[calls-1]
		return r.n, r.err
	}
	report := func(err error) {
		reports = append(reports, err)
		if len(reports) == len(results) {
			cancel()
		}
	}
	Run(ctx, time.Millisecond, 10, prune, report)
	if calls < len(results) || len(reports) != len(results) {
		t.Fatalf("got %d calls and %d reports, want %d of each", calls, len(reports), len(results))
	}
	if want := []int{10, 10, 10, 10, 10}; !slices.Equal(limits[:5], want) {
		t.Fatalf("limits %v, want %v", limits, want)
	}
	if want := []error{nil, nil, nil, failed, nil}; !slices.Equal(reports, want) {
		t.Fatalf("reports %v, want %v", reports, want)
	}
}
