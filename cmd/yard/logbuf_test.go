package main

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLineBufferKeepsEveryLineInOrder: lines from many goroutines, past
// the buffer's size several times, all come out whole, each goroutine's
// in its order, in far fewer writes than lines.
func TestLineBufferKeepsEveryLineInOrder(t *testing.T) {
	out := &syncBuffer{}
	b := newLineBuffer(out)
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(b, "w%d %05d %s\n", w, i, strings.Repeat("x", 40))
			}
		})
	}
	wg.Wait()
	b.Close()
	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("got %d lines, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		var w, i int
		if _, err := fmt.Sscanf(l, "w%d %05d", &w, &i); err != nil || i != next[w] || len(l) != 49 {
			t.Fatalf("line %q out of order or torn (writer %d expected %d)", l, w, next[w])
		}
		next[w]++
	}
	if out.writes > writers*lines/20 {
		t.Errorf("%d writes for %d lines: the lines were not gathered", out.writes, writers*lines)
	}
}

// TestLineBufferWritesSoon: a batch is written within about
// lineBufferWait of its first line, with no Close; a warning at once; a
// line after Close straight away.
func TestLineBufferWritesSoon(t *testing.T) {
	out := &syncBuffer{}
	b := newLineBuffer(out)
	logger := slog.New(flushingHandler{slog.NewJSONHandler(b, nil), b}).With("pid", 1)
	logger.Info("request", "status", 200)
	if strings.Contains(out.String(), "request") {
		t.Fatal("an info line was written at once: no batch")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), `"msg":"request"`) {
		if time.Now().After(deadline) {
			t.Fatal("the batch was not written within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	logger.Info("before")
	logger.Warn("store unavailable")
	if s := out.String(); !strings.Contains(s, `"msg":"before"`) || !strings.Contains(s, `"msg":"store unavailable"`) ||
		strings.Index(s, `"msg":"before"`) > strings.Index(s, `"msg":"store unavailable"`) {
		t.Fatalf("a warning (through With) did not flush the lines before it, in order:\n%s", s)
	}
	b.Close()
	logger.Info("after close")
	if !strings.Contains(out.String(), `"msg":"after close"`) {
		t.Fatal("a line after Close was held")
	}
}

// TestLineBufferPanic: a panic in a background task writes what the
// buffer holds before it goes on.
func TestLineBufferPanic(t *testing.T) {
	out := &syncBuffer{}
	b := newLineBuffer(out)
	fmt.Fprintln(b, "last words")
	var got any
	func() {
		defer func() { got = recover() }()
		func() {
			defer b.closeOnPanic()
			panic("boom")
		}()
	}()
	if got != "boom" {
		t.Fatalf("the panic did not go on: recovered %v", got)
	}
	if !strings.Contains(out.String(), "last words") {
		t.Fatal("the buffer was not written before the panic went on")
	}
}
