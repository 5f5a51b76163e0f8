package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// randomString mixes what JSON quoting treats apart: plain ASCII, quotes,
// backslashes, control characters, DEL, HTML characters, multi-byte runes,
// U+2028/U+2029 and invalid UTF-8.
func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", "9", " ", "/", `"`, `\`, "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
		"<", ">", "&", "é", "日本", "\u2028", "\u2029", "\xff", "\xe2\x80", "🐕", "request_id", "GET /cars"}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func randomAttr(rng *rand.Rand) slog.Attr {
	key := randomString(rng)
	if key == "" {
		key = "k"
	}
	switch rng.IntN(7) {
	case 0:
		return slog.Int(key, rng.IntN(1<<20)-1<<19)
	case 1:
		return slog.Uint64(key, rng.Uint64())
	case 2:
		return slog.Bool(key, rng.IntN(2) == 0)
	case 3:
		return slog.Duration(key, time.Duration(rng.Int64()))
	case 4:
		return slog.Time(key, time.Unix(rng.Int64N(1<<35), rng.Int64N(1e9)).In(time.FixedZone("z", rng.IntN(50000)-25000)))
	case 5:
		return slog.Int64(key, rng.Int64())
	}
	return slog.String(key, randomString(rng))
}

// TestSameAsSlog writes random records through a Handler and through
// slog.JSONHandler and wants the same bytes.
func TestSameAsSlog(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2}
	for i := range 20000 {
		var got, want bytes.Buffer
		opts := &slog.HandlerOptions{Level: slog.LevelDebug}
		h, ref := New(&got, opts), slog.NewJSONHandler(&want, opts)
		var when time.Time
		if rng.IntN(10) > 0 {
			when = time.Unix(rng.Int64N(1<<35), rng.Int64N(1e9))
		}
		rec := slog.NewRecord(when, levels[rng.IntN(len(levels))], randomString(rng), 0)
		for range rng.IntN(10) {
			rec.AddAttrs(randomAttr(rng))
		}
		if err := h.Handle(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if err := ref.Handle(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("record %d:\n got %q\nwant %q", i, got.String(), want.String())
		}
	}
}

// TestOtherRecords: what the fast path does not write (other kinds, empty
// keys, groups, handlers with attributes, options it does not follow) is
// written by slog's own handler, so it is the same too.
func TestOtherRecords(t *testing.T) {
	type item struct {
		name  string
		opts  *slog.HandlerOptions
		with  func(slog.Handler) slog.Handler
		attrs []slog.Attr
		when  time.Time
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 5, time.UTC)
	for _, c := range []item{
		{name: "float", attrs: []slog.Attr{slog.Float64("f", 1.5)}, when: now},
		{name: "any", attrs: []slog.Attr{slog.Any("e", errors.New("x")), slog.Any("m", map[string]int{"a": 1})}, when: now},
		{name: "group", attrs: []slog.Attr{slog.Group("g", slog.String("a", "b"))}, when: now},
		{name: "empty key", attrs: []slog.Attr{slog.String("", "v"), {}}, when: now},
		{name: "year past 9999", when: time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "time attr past 9999", attrs: []slog.Attr{slog.Time("t", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))}, when: now},
		{name: "with attrs", with: func(h slog.Handler) slog.Handler { return h.WithAttrs([]slog.Attr{slog.String("c", "w")}) }, attrs: []slog.Attr{slog.Int("n", 1)}, when: now},
		{name: "with group", with: func(h slog.Handler) slog.Handler { return h.WithGroup("g") }, attrs: []slog.Attr{slog.Int("n", 1)}, when: now},
		{name: "replace", opts: &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "n" {
				a.Value = slog.IntValue(2)
			}
			return a
		}}, attrs: []slog.Attr{slog.Int("n", 1)}, when: now},
		{name: "source", opts: &slog.HandlerOptions{AddSource: true}, when: now},
	} {
		var got, want bytes.Buffer
		var h, ref slog.Handler = New(&got, c.opts), slog.NewJSONHandler(&want, c.opts)
		if c.with != nil {
			h, ref = c.with(h), c.with(ref)
		}
		rec := slog.NewRecord(c.when, slog.LevelInfo, "m", 0)
		rec.AddAttrs(c.attrs...)
		_ = h.Handle(context.Background(), rec)
		_ = ref.Handle(context.Background(), rec)
		if got.String() != want.String() {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got.String(), want.String())
		}
	}
}

func TestEnabled(t *testing.T) {
	h := New(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn})
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelWarn) {
		t.Fatal("the level is not followed")
	}
	if d := New(&bytes.Buffer{}, nil); d.Enabled(context.Background(), slog.LevelDebug) || !d.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("the default level is not Info")
	}
}

// BenchmarkRequestLine: a request's log line, as httpapi writes it.
func BenchmarkRequestLine(b *testing.B) {
	for _, name := range []string{"jsonlog", "slog"} {
		b.Run(name, func(b *testing.B) {
			var h slog.Handler = New(discard{}, nil)
			if name == "slog" {
				h = slog.NewJSONHandler(discard{}, nil)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			paths := []string{"/cars", "/v1/dogs/dog-12/barks", "/cars/car-123456", "/v1/garages/g-1/cars"}
			b.ReportAllocs()
			for b.Loop() {
				rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				rec.AddAttrs(slog.String("request_id", "3a767562fbdcf09d2d822607"), slog.String("method", "GET"),
					slog.String("path", paths[rng.IntN(len(paths))]), slog.String("route", "GET /cars"),
					slog.Int("status", 200), slog.Duration("duration", time.Duration(rng.IntN(1e6))), slog.String("remote", "127.0.0.1"))
				_ = h.Handle(context.Background(), rec)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestCut checks that a cut string keeps at most max bytes, is marked, and
// stays UTF-8 when the limit falls inside a character.
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"/cars", 1024, "/cars"},
		{"abcdef", 6, "abcdef"},
		{"abcdef", 4, "abcd…"},
		{"ab€def", 3, "ab…"}, // € is 3 bytes: the cut moves before it
		{"ab€def", 5, "ab€…"},
		{"€", 2, "…"},
	} {
		if got := Cut(tc.s, tc.max); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
		if got := Cut(tc.s, tc.max); !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q: not UTF-8", tc.s, tc.max, got)
		}
	}
}
