// Package jsonlog is log/slog's JSON handler with a faster path for plain
// records.
//
// A server writes a log line per request (docs/configuration.md, "Logs and metrics"), and
// slog.JSONHandler's general machinery (attribute resolution, groups,
// ReplaceAttr, a pooled state per record) took 3% of a car page's CPU
// (docs/benchmarks.md, "The request path, lighter"). A Handler writes a
// record whose attributes are all strings, integers, booleans, durations
// or times straight into a buffer, byte for byte as slog.JSONHandler
// would (the tests compare the two on random records); any other record,
// and every handler made by WithAttrs or WithGroup, goes to a
// slog.JSONHandler writing to the same writer.
package jsonlog

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Handler is a slog.Handler; see the package comment.
type Handler struct {
	json  *slog.JSONHandler
	w     *lockedWriter
	level slog.Leveler
	plain bool // opts has neither AddSource nor ReplaceAttr
}

// New returns a Handler writing to w with opts (nil: the defaults), as
// slog.NewJSONHandler(w, opts) does.
func New(w io.Writer, opts *slog.HandlerOptions) *Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	lw := &lockedWriter{w: w}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{
		json:  slog.NewJSONHandler(lw, opts),
		w:     lw,
		level: level,
		plain: !opts.AddSource && opts.ReplaceAttr == nil,
	}
}

// lockedWriter serialises the writes of both paths, as slog.JSONHandler's
// own lock does for it: a line is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler { return h.json.WithAttrs(as) }
func (h *Handler) WithGroup(name string) slog.Handler    { return h.json.WithGroup(name) }

var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r as one line of JSON.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.plain || !simple(r) {
		return h.json.Handle(ctx, r)
	}
	bp := bufs.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	sep := false
	if !r.Time.IsZero() {
		b = append(b, `"time":`...)
		b = appendTime(b, r.Time.Round(0))
		sep = true
	}
	if sep {
		b = append(b, ',')
	}
	b = append(b, `"level":`...)
	b = appendString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ',')
		b = appendString(b, a.Key)
		b = append(b, ':')
		b = appendValue(b, a.Value)
		return true
	})
	b = append(b, '}', '\n')
	_, err := h.w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		bufs.Put(bp)
	}
	return err
}

// simple reports whether the fast path writes r as slog.JSONHandler would:
// a time within RFC 3339's years, and attributes with keys, of the kinds
// appendValue writes.
func simple(r slog.Record) bool {
	if !r.Time.IsZero() && !timeInRange(r.Time) {
		return false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		case slog.KindTime:
			ok = timeInRange(a.Value.Time())
		default:
			ok = false
		}
		if a.Key == "" {
			ok = false // slog elides some empty attributes, not all
		}
		return ok
	})
	return ok
}

func timeInRange(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y < 10000
}

func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		return appendTime(b, v.Time())
	}
	panic("jsonlog: a kind simple does not admit")
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// appendString appends s quoted as slog's JSON handler quotes it: control
// characters, '"' and '\\' escaped, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped; '<', '>' and '&' as they are.
// It is not httpapi's appendJSONString, which follows encoding/json
// (\b and \f where slog writes \u0008 and \u000c).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// A request's log line holds at most this much of the strings its client
// chose (the method, the path), so that the line stays short whatever the
// request: a client sending 64 KiB paths cannot fill the log 64 KiB a
// request (docs/configuration.md, "Logs and metrics").
const (
	MaxPath   = 1024
	MaxMethod = 32
)

// Cut returns s, or when it is longer than max bytes its first ones (cut
// before a character, so the line stays UTF-8) and "…".
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
