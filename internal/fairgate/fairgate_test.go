package fairgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor polls until the gate holds want waiting requests.
func waitFor(t *testing.T, g *Gate, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Stats().Waiting != want {
		if time.Now().After(deadline) {
			t.Fatalf("waiting: got %d, want %d", g.Stats().Waiting, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTurns: with every slot taken by one client, a slot that frees goes
// to the next client in turn, not to the flood's next request.
func TestTurns(t *testing.T) {
	g := New(Config{Slots: 2, PerClient: 10})
	ctx := context.Background()
	for range 2 {
		if err := g.Acquire(ctx, "flood"); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	enter := func(key string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Acquire(ctx, key); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, key)
			mu.Unlock()
		}()
	}
	// The flood queues five, then a and b one each, then the flood one more.
	for i := range 5 {
		enter("flood")
		waitFor(t, g, i+1)
	}
	enter("a")
	waitFor(t, g, 6)
	enter("b")
	waitFor(t, g, 7)
	enter("flood")
	waitFor(t, g, 8)
	// Each release is by a holder of a slot, oldest first, and grants
	// one waiter, which records itself and holds its slot.
	holders := []string{"flood", "flood"}
	for i := range 8 {
		g.Release(holders[i])
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			n := len(order)
			mu.Unlock()
			if n == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("release %d granted nobody", i)
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		holders = append(holders, order[i])
		mu.Unlock()
	}
	wg.Wait()
	// a and b were never served: they go before the flood, which holds
	// both slots; then the flood's own requests in turn.
	want := []string{"a", "b", "flood", "flood", "flood", "flood", "flood", "flood"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order: got %v, want %v", order, want)
	}
	if s := g.Stats(); s.Busy != 2 || s.Waiting != 0 || s.Clients != 1 {
		t.Errorf("stats after: %+v, want 2 busy (the flood) and nobody waiting", s)
	}
	g.Release("flood")
	g.Release("flood")
	if s := g.Stats(); s.Busy != 0 || s.Clients != 0 {
		t.Errorf("after the last release: %+v", s)
	}
}

// TestServedLongestAgoFirst: of two clients that both hold slots and
// wait, the slot goes to the one served longest ago, so two floods
// alternate.
func TestServedLongestAgoFirst(t *testing.T) {
	g := New(Config{Slots: 2, PerClient: 10})
	ctx := context.Background()
	for _, k := range []string{"x", "y"} {
		if err := g.Acquire(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan string, 8)
	for i := range 6 {
		k := []string{"y", "x"}[i%2] // y queues first, but x was served first
		go func() {
			if g.Acquire(ctx, k) == nil {
				got <- k
			}
		}()
		waitFor(t, g, i+1)
	}
	var order []string
	held := []string{"x", "y"}
	for i := range 6 {
		g.Release(held[i])
		k := <-got
		order = append(order, k)
		held = append(held, k)
	}
	if want := "x y x y x y"; strings.Join(order, " ") != want {
		t.Errorf("order: %v, want %s", order, want)
	}
}

// TestBounds: past a client's waiting bound ErrClientBusy, past the
// gate's ErrBusy, past MaxWait ErrBusy; refusals leave nothing behind.
func TestBounds(t *testing.T) {
	g := New(Config{Slots: 1, PerClient: 2, Waiting: 3, MaxWait: 50 * time.Millisecond})
	ctx := context.Background()
	if err := g.Acquire(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	for range 2 {
		go func() { errs <- g.Acquire(ctx, "a") }()
	}
	waitFor(t, g, 2)
	if err := g.Acquire(ctx, "a"); !errors.Is(err, ErrClientBusy) {
		t.Errorf("a's third waiting request: got %v, want ErrClientBusy", err)
	}
	go func() { errs <- g.Acquire(ctx, "b") }()
	waitFor(t, g, 3)
	if err := g.Acquire(ctx, "c"); !errors.Is(err, ErrBusy) {
		t.Errorf("past the gate's waiting bound: got %v, want ErrBusy", err)
	}
	// Nobody releases: the three waiting requests time out.
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrBusy) {
			t.Errorf("a wait past MaxWait: got %v, want ErrBusy", err)
		}
	}
	s := g.Stats()
	if s.Busy != 1 || s.Waiting != 0 || s.Clients != 1 || s.RefusedClient != 1 || s.RefusedBusy != 4 {
		t.Errorf("stats: %+v", s)
	}
	g.Release("a")
	if err := g.Acquire(ctx, "c"); err != nil {
		t.Errorf("a free slot refused: %v", err)
	}
}

// TestCancel: a request whose context ends leaves the line; one that ends
// as it is granted hands its slot on rather than keeping it.
func TestCancel(t *testing.T) {
	g := New(Config{Slots: 1})
	bg := context.Background()
	if err := g.Acquire(bg, "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- g.Acquire(ctx, "b") }()
	waitFor(t, g, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if s := g.Stats(); s.Waiting != 0 || s.Clients != 1 {
		t.Fatalf("a canceled request stayed: %+v", s)
	}
	// Many requests that give up while slots move: no slot is lost or
	// made up.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg, time.Duration(i%5)*100*time.Microsecond)
			defer cancel()
			if k := fmt.Sprint(i % 7); g.Acquire(ctx, k) == nil {
				g.Release(k)
			}
		}()
	}
	for range 50 {
		g.Release("a")
		if err := g.Acquire(bg, "a"); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if s := g.Stats(); s.Busy != 1 || s.Waiting != 0 || s.Clients != 1 {
		t.Errorf("after the churn: %+v, want the one slot a holds", s)
	}
}

// BenchmarkAcquire is the cost of a free slot, the common case.
func BenchmarkAcquire(b *testing.B) {
	g := New(Config{})
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := g.Acquire(ctx, "127.0.0.1"); err != nil {
				b.Fatal(err)
			}
			g.Release("127.0.0.1")
		}
	})
}
