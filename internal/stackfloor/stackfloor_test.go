package stackfloor

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// shallow parks n goroutines with little stack in use, as a server's idle
// workers are, until the test ends.
func shallow(t *testing.T, n int) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	for range n {
		go func() { <-done }()
	}
}

// settle runs two collections, so that the starting size reflects the
// goroutines as they are now.
func settle() uint64 {
	runtime.GC()
	runtime.GC()
	return Size()
}

// TestKeepLiftsStartingSize: among many shallow goroutines new ones start
// at 2 KiB; with Keep running they start at 4 KiB, and no more.
func TestKeepLiftsStartingSize(t *testing.T) {
	shallow(t, 300)
	if got := settle(); got >= Floor {
		t.Fatalf("starting size %d before Keep: the shallow goroutines did not lower it under %d", got, Floor)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { Keep(ctx, 5*time.Millisecond); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		got := settle()
		if got == Floor {
			break
		}
		if got > Floor {
			t.Fatalf("starting size %d: Keep lifted it past %d", got, Floor)
		}
		if time.Now().After(deadline) {
			t.Fatalf("starting size still %d after 10 s of Keep (%d holding goroutines)", got, holders.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := holders.Load(); n == 0 || n > MaxHolders {
		t.Errorf("%d holding goroutines, want 1 to %d", n, MaxHolders)
	}
}

// TestKeepReleases: the holding goroutines return when Keep's context ends.
func TestKeepReleases(t *testing.T) {
	shallow(t, 300)
	settle()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { Keep(ctx, time.Millisecond); close(stopped) }()
	deadline := time.Now().Add(10 * time.Second)
	for holders.Load() < batch && time.Now().Before(deadline) {
		settle()
		time.Sleep(time.Millisecond)
	}
	if holders.Load() < batch {
		t.Fatal("Keep parked no goroutine")
	}
	cancel()
	<-stopped
	for holders.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := holders.Load(); n > 0 {
		t.Errorf("%d holding goroutines after Keep returned", n)
	}
}

func TestAdaptive(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                               true,
		"adaptivestackstart=0":           false,
		"adaptivestackstart=1":           true,
		"gctrace=1,adaptivestackstart=0": false,
		"adaptivestackstart=0,adaptivestackstart=1": true,
		"xadaptivestackstart=0":                     true,
	} {
		if got := adaptive(godebug); got != want {
			t.Errorf("adaptive(%q) = %v, want %v", godebug, got, want)
		}
	}
}
