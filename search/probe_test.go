package search

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestChangeProbes: every read is answered by a probe that started after
// the read was called, probes run one at a time, and one starts at least
// probeGap after the one before.
func TestChangeProbes(t *testing.T) {
	var vr changeProbes
	var mu sync.Mutex
	var starts []time.Time
	var running atomic.Int32
	fn := func(context.Context) (bool, error) {
		if running.Add(1) != 1 {
			t.Error("two probes at once")
		}
		defer running.Add(-1)
		mu.Lock()
		starts = append(starts, vr.started) // the probe's start, as the loop took it
		n := len(starts)
		mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		return n%2 == 0, nil // the answer names the probe: even or odd
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				called := time.Now()
				changed, err := vr.read(context.Background(), fn)
				if err != nil {
					t.Error(err)
					return
				}
				// Some probe that started after the call answered with
				// this parity.
				mu.Lock()
				ok := false
				for i, s := range starts {
					if !s.Before(called) && (i+1)%2 == 0 == changed {
						ok = true
					}
				}
				mu.Unlock()
				if !ok {
					t.Error("answered by a probe that started before the call")
					return
				}
			}
		})
	}
	wg.Wait()
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < probeGap {
			t.Fatalf("probes %d and %d started %v apart, want at least %v", i, i+1, gap, probeGap)
		}
	}
	if len(starts) >= 16*50 {
		t.Fatalf("%d probes for %d reads: none shared", len(starts), 16*50)
	}
	t.Logf("%d probes for %d reads", len(starts), 16*50)
}
