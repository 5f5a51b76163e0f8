package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond (bounded) while goroutines of the test get going.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("gave up waiting: %s", what)
}

// A request on an idle queue runs at once, alone: nothing waits to fill a
// batch.
func TestIdleQueueDoesNotWait(t *testing.T) {
	var sizes []int
	q := &Queue[int, int]{Max: 100, Run: func(items []int, res []Result[int]) {
		sizes = append(sizes, len(items))
		for i, v := range items {
			res[i].Val = v * 2
		}
	}}
	for i := range 3 {
		got, err := q.Do(context.Background(), i)
		if err != nil || got != 2*i {
			t.Fatalf("Do(%d): got %d, %v; want %d", i, got, err, 2*i)
		}
	}
	if !slices.Equal(sizes, []int{1, 1, 1}) {
		t.Fatalf("batch sizes: got %v, want [1 1 1]", sizes)
	}
}

// Every caller gets the answer to its own item, with its own error; no
// batch exceeds Max; no more than Flights batches run at once; requests
// that queued while a batch ran share the next one.
func TestAnswersBoundsAndSharing(t *testing.T) {
	for _, flights := range []int{1, 3} {
		t.Run(fmt.Sprint("flights=", flights), func(t *testing.T) {
			var running, most, batches, largest atomic.Int32
			q := &Queue[int, string]{Flights: flights, Max: 16, Run: func(items []int, res []Result[string]) {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				batches.Add(1)
				if l := int32(len(items)); l > largest.Load() {
					largest.Store(l)
				}
				time.Sleep(time.Millisecond) // let others queue behind
				for i, v := range items {
					if v%7 == 0 {
						res[i].Err = fmt.Errorf("item %d refused", v)
					} else {
						res[i].Val = fmt.Sprint("answer ", v)
					}
				}
				running.Add(-1)
			}}
			const callers = 400
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					got, err := q.Do(context.Background(), i)
					switch {
					case i%7 == 0:
						if err == nil || err.Error() != fmt.Sprintf("item %d refused", i) {
							t.Errorf("item %d: err %v, want its own refusal", i, err)
						}
					case err != nil || got != fmt.Sprint("answer ", i):
						t.Errorf("item %d: got %q, %v", i, got, err)
					}
				})
			}
			wg.Wait()
			if m := most.Load(); m > int32(flights) {
				t.Errorf("%d batches ran at once, want at most %d", m, flights)
			}
			if l := largest.Load(); l > 16 {
				t.Errorf("a batch of %d, want at most 16", l)
			}
			if b := batches.Load(); b >= callers {
				t.Errorf("%d batches for %d callers: nothing was shared", b, callers)
			}
		})
	}
}

// A caller that gives up gets its context's error at once; the batch it
// was part of still runs, for the others and with its item.
func TestCallerGivingUpDoesNotCancelBatch(t *testing.T) {
	started := make(chan []string)
	release := make(chan struct{})
	q := &Queue[string, string]{Run: func(items []string, res []Result[string]) {
		started <- slices.Clone(items)
		<-release
		for i, v := range items {
			res[i].Val = "done " + v
		}
	}}
	errs := make(chan error, 3)
	go func() { _, err := q.Do(context.Background(), "first"); errs <- err }()
	if got := <-started; !slices.Equal(got, []string{"first"}) {
		t.Fatalf("first batch: got %v", got)
	}
	// Two callers queue behind the running batch.
	ctxA, cancelA := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := q.Do(ctxA, "a"); gaveUp <- err }()
	waitFor(t, "a queued", func() bool { return q.pending() == 1 })
	answerB := make(chan string, 1)
	go func() {
		v, err := q.Do(context.Background(), "b")
		if err != nil {
			errs <- err
		}
		answerB <- v
	}()
	waitFor(t, "b queued", func() bool { return q.pending() == 2 })
	release <- struct{}{}
	if got := <-started; !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("second batch: got %v, want [a b]", got)
	}
	cancelA()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller that gave up: err %v, want context.Canceled", err)
	}
	release <- struct{}{}
	if v := <-answerB; v != "done b" {
		t.Fatalf("other caller: got %q, want %q", v, "done b")
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// Each batch starts after every one of its requests arrived: a batch sees
// every change its callers made before asking.
func TestBatchStartsAfterItsRequests(t *testing.T) {
	for _, gather := range []bool{false, true} {
		t.Run(fmt.Sprint("gather=", gather), func(t *testing.T) {
			var version atomic.Int64
			q := &Queue[int64, int64]{Flights: 2, Max: 8, Gather: gather, Run: func(items []int64, res []Result[int64]) {
				now := version.Load()
				for i := range items {
					res[i].Val = now
				}
			}}
			var wg sync.WaitGroup
			for range 300 {
				wg.Go(func() {
					v := version.Add(1) // a write, then a read that must see it
					seen, err := q.Do(context.Background(), v)
					if err != nil || seen < v {
						t.Errorf("asked after version %d, the batch saw %d (%v)", v, seen, err)
					}
				})
			}
			wg.Wait()
		})
	}
}

// Idle is called once the queue has drained, and the queue runs again
// after it.
func TestIdle(t *testing.T) {
	var idle atomic.Int32
	q := &Queue[int, int]{Run: func(items []int, res []Result[int]) {}, Idle: func() { idle.Add(1) }}
	for i := range 3 {
		if _, err := q.Do(context.Background(), i); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "idle", func() bool { return idle.Load() == int32(i+1) })
	}
}
