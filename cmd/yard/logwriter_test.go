package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowWriter takes its time over each write, like a log on a busy disk.
type slowWriter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

// TestLogWriterKeepsEveryLine: lines written at once by many goroutines
// all arrive whole, each goroutine's in its order, in fewer writes than
// lines; Close writes what waits; the buffer stays bounded.
func TestLogWriterKeepsEveryLine(t *testing.T) {
	out := &slowWriter{}
	l := newLogWriter(out)
	var wg sync.WaitGroup
	const writers, lines = 16, 500
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(l, "{\"w\":%d,\"i\":%d,\"pad\":%q}\n", w, i, strings.Repeat("x", 100))
				l.mu.Lock()
				n := len(l.buf)
				l.mu.Unlock()
				if n > maxLogBuffer+200 {
					t.Errorf("buffer grew to %d bytes", n)
				}
			}
		})
	}
	wg.Wait()
	l.Close()
	next := make([]int, writers)
	for _, line := range strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n") {
		var w, i int
		var pad string
		if _, err := fmt.Sscanf(line, "{\"w\":%d,\"i\":%d,\"pad\":%q}", &w, &i, &pad); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: line %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	for w, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d lines arrived, want %d", w, n, lines)
		}
	}
	if out.writes >= writers*lines {
		t.Errorf("%d writes for %d lines: nothing was written together", out.writes, writers*lines)
	}
	fmt.Fprintln(l, "after close")
	if !strings.HasSuffix(out.b.String(), "after close\n") {
		t.Error("a line after Close was lost")
	}
}
