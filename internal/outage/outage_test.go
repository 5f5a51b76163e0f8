package outage

import (
	"sync"
	"testing"
	"time"
)

// TestTracker: of many callers meeting one outage, one begins it and one
// ends it, with its start.
func TestTracker(t *testing.T) {
	var tr Tracker
	if tr.Down() {
		t.Fatal("a new tracker is down")
	}
	if _, ended := tr.End(); ended {
		t.Fatal("ended an outage that never began")
	}
	start := time.Unix(1_800_000_000, 0)
	var begun, ended int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			ok := tr.Begin(start)
			mu.Lock()
			if ok {
				begun++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if begun != 1 || !tr.Down() {
		t.Fatalf("%d callers began the outage (down %v), want 1", begun, tr.Down())
	}
	for range 50 {
		wg.Go(func() {
			since, ok := tr.End()
			mu.Lock()
			if ok {
				ended++
				if !since.Equal(start) {
					t.Errorf("ended an outage begun at %v, want %v", since, start)
				}
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if ended != 1 || tr.Down() {
		t.Fatalf("%d callers ended the outage (down %v), want 1", ended, tr.Down())
	}
}
