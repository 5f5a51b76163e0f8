package main

import (
	"io"
	"sync"
)

// maxLogBuffer bounds what a logWriter holds before its writes wait.
const maxLogBuffer = 1 << 20

// logWriter writes serve's log lines (one Write each) to w from a
// goroutine of its own, so a request does not wait for a write system call
// of its log line: under load the lines that came while one write ran go
// out together in the next (docs/configuration.md, "Logs and metrics").
// When idle a line is written at once. At most maxLogBuffer bytes wait;
// past that, Write waits for room, so a log that cannot keep up slows the
// requests rather than losing lines or growing without bound. Close
// writes what waits and stops.
type logWriter struct {
	w io.Writer

	mu      sync.Mutex
	room    sync.Cond
	buf     []byte
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	l.room.L = &l.mu
	go l.run()
	return l
}

// Write queues p (a copy) for writing.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	for len(l.buf) >= maxLogBuffer && !l.closed {
		l.room.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		return l.w.Write(p) // after Close: directly, as before newLogWriter
	}
	l.buf = append(l.buf, p...)
	select { // under the lock: Close closes wake only after closed is set
	case l.wake <- struct{}{}:
	default:
	}
	l.mu.Unlock()
	return len(p), nil
}

func (l *logWriter) run() {
	defer close(l.stopped)
	var spare []byte
	for {
		_, open := <-l.wake
		l.mu.Lock()
		b := l.buf
		l.buf = spare[:0]
		l.room.Broadcast()
		l.mu.Unlock()
		if len(b) > 0 {
			_, _ = l.w.Write(b)
		}
		if cap(b) > maxLogBuffer {
			b = nil // a burst's buffer is let go
		}
		spare = b
		if !open {
			return
		}
	}
}

// Close writes every queued line and stops the goroutine; later writes go
// to w directly.
func (l *logWriter) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.room.Broadcast()
	l.mu.Unlock()
	close(l.wake)
	<-l.stopped
}
