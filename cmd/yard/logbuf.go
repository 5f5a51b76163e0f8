package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// lineBuffer gathers serve's log lines and writes them in batches, in the
// order they came: a request's line then costs a copy, not a write to
// standard error each (docs/operations.md, "Logs"; docs/benchmarks.md
// measures it). What it holds is written
//   - lineBufferWait after the first line of a batch came,
//   - as soon as it holds lineBufferSize bytes,
//   - after any line at Warn or above (flushingHandler),
//   - when serve ends, however it ends (Close, deferred), and when a
//     panic leaves a request (recovered and logged at Error) or one of
//     serve's background tasks (closeOnPanic).
//
// Every write is under one mutex, so lines are never reordered or
// interleaved. After Close, lines go straight to the writer.
type lineBuffer struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	timer  *time.Timer // flushes a batch lineBufferWait after its first line
	closed bool
}

const (
	lineBufferSize = 64 << 10
	lineBufferWait = 50 * time.Millisecond
)

func newLineBuffer(w io.Writer) *lineBuffer {
	b := &lineBuffer{w: w, buf: make([]byte, 0, lineBufferSize)}
	b.timer = time.AfterFunc(time.Hour, b.Flush)
	b.timer.Stop()
	return b
}

// Write takes p, one log line.
func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.w.Write(p)
	}
	if len(b.buf)+len(p) > lineBufferSize {
		b.flushLocked()
		if len(p) > lineBufferSize {
			return b.w.Write(p)
		}
	}
	if len(b.buf) == 0 {
		b.timer.Reset(lineBufferWait)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Flush writes what the buffer holds.
func (b *lineBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *lineBuffer) flushLocked() {
	if len(b.buf) > 0 {
		// A log that cannot be written has nowhere to say so.
		_, _ = b.w.Write(b.buf)
		b.buf = b.buf[:0]
	}
}

// Close writes what the buffer holds; later lines are written at once.
func (b *lineBuffer) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.timer.Stop()
	b.flushLocked()
}

// closeOnPanic, deferred, writes what the buffer holds before a panic
// goes on to end the process.
func (b *lineBuffer) closeOnPanic() {
	if v := recover(); v != nil {
		b.Close()
		panic(v)
	}
}

// flushingHandler is a log handler that flushes its lineBuffer after
// every record at Warn or above, so a warning or an error is out at once.
type flushingHandler struct {
	slog.Handler
	b *lineBuffer
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.b.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.b}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.b}
}
