package outage

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
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

// TestLoopError: an outage is logged when it begins and when it ends, not
// on each failing pass; another error is logged each time.
func TestLoopError(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	var tr Tracker
	down := errors.New("connection refused")
	for range 3 {
		tr.LoopError(l, "claims", down, true)
	}
	tr.LoopError(l, "claims", nil, false)
	tr.LoopError(l, "claims", nil, false)
	for range 2 {
		tr.LoopError(l, "claims", errors.New("a bug"), false)
	}
	out := buf.String()
	if n := strings.Count(out, "store unavailable"); n != 1 {
		t.Errorf("%d lines of the outage's start, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "reachable again"); n != 1 {
		t.Errorf("%d lines of its end, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "a bug"); n != 2 {
		t.Errorf("%d lines of the other error, want 2:\n%s", n, out)
	}
}
