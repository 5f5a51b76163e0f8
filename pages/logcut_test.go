package pages

import (
	"testing"
	"unicode/utf8"
)

// TestLogCut checks that a cut string keeps at most max bytes, is marked,
// and stays UTF-8 when the limit falls inside a character.
func TestLogCut(t *testing.T) {
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
		got := LogCut(tc.s, tc.max)
		if got != tc.want {
			t.Errorf("LogCut(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("LogCut(%q, %d) = %q: not UTF-8", tc.s, tc.max, got)
		}
	}
}
