package httpapi

import (
	"context"
	"errors"
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
