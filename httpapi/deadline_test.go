package httpapi

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

func TestLazyDeadline(t *testing.T) {
	t.Run("ends at its deadline once waited on", func(t *testing.T) {
		ctx, release := withLazyDeadline(context.Background(), 30*time.Millisecond)
		defer release()
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > 30*time.Millisecond {
			t.Fatalf("Deadline = %v, %v", d, ok)
		}
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline = %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after the deadline")
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", ctx.Err())
		}
	})
	t.Run("a passed deadline is seen without a timer", func(t *testing.T) {
		ctx, release := withLazyDeadline(context.Background(), time.Millisecond)
		defer release()
		time.Sleep(5 * time.Millisecond)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", ctx.Err())
		}
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Err is set but Done is open")
		}
	})
	t.Run("the parent's end", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), routeKey, "v"))
		ctx, release := withLazyDeadline(parent, time.Hour)
		defer release()
		if ctx.Value(routeKey) != "v" {
			t.Fatal("the parent's value is lost")
		}
		cancel()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("Err after the parent's cancel = %v", ctx.Err())
		}
		<-ctx.Done()
	})
	t.Run("the parent's earlier deadline", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ctx, release := withLazyDeadline(parent, time.Hour)
		defer release()
		pd, _ := parent.Deadline()
		if d, _ := ctx.Deadline(); !d.Equal(pd) {
			t.Fatalf("Deadline = %v, want the parent's %v", d, pd)
		}
	})
	t.Run("released", func(t *testing.T) {
		for _, wait := range []bool{false, true} {
			ctx, release := withLazyDeadline(context.Background(), time.Hour)
			if wait {
				_ = ctx.Done()
			}
			release()
			if !wait && ctx.(*lazyDeadline).armed != canceled {
				t.Fatal("a release before any wait armed a timer")
			}
			select {
			case <-ctx.Done():
			default:
				t.Fatalf("Done open after release (waited on before: %v)", wait)
			}
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Fatalf("Err after release = %v", ctx.Err())
			}
		}
	})
}

// TestLazyDeadlineChildren checks the contexts derived from a lazy
// deadline, as database/sql and pgx derive one per statement: they end
// with it (its deadline, its release, its parent's end) and start no
// goroutine of their own to wait on it.
func TestLazyDeadlineChildren(t *testing.T) {
	t.Run("no goroutine per child", func(t *testing.T) {
		ctx, release := withLazyDeadline(context.Background(), time.Minute)
		defer release()
		before := runtime.NumGoroutine()
		var cancels []context.CancelFunc
		for range 100 {
			child, cancel := context.WithCancel(ctx)
			cancels = append(cancels, cancel)
			stop := context.AfterFunc(child, func() {})
			defer stop()
		}
		if n := runtime.NumGoroutine() - before; n > 10 {
			t.Fatalf("100 children started %d goroutines", n)
		}
		for _, cancel := range cancels {
			cancel()
		}
	})
	ends := map[string]func() (context.Context, func()){
		"the deadline": func() (context.Context, func()) {
			return withLazyDeadline(context.Background(), 20*time.Millisecond)
		},
		"the release": func() (context.Context, func()) {
			ctx, release := withLazyDeadline(context.Background(), time.Minute)
			time.AfterFunc(20*time.Millisecond, release)
			return ctx, release
		},
		"the parent's end": func() (context.Context, func()) {
			parent, cancel := context.WithCancel(context.Background())
			ctx, release := withLazyDeadline(parent, time.Minute)
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, func() { release(); cancel() }
		},
	}
	for name, start := range ends {
		t.Run("a child ends with "+name, func(t *testing.T) {
			ctx, release := start()
			defer release()
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			for _, done := range []<-chan struct{}{child.Done(), ran} {
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("not ended")
				}
			}
			if child.Err() == nil {
				t.Fatal("child ended without an error")
			}
		})
	}
	t.Run("released before any wait", func(t *testing.T) {
		ctx, release := withLazyDeadline(context.Background(), time.Minute)
		release()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a child of a released context is not done")
		}
	})
}
