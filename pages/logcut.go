package pages

import "unicode/utf8"

// A request's log line holds at most this much of the strings its client
// chose (the method, the path), so that the line stays short whatever the
// request: a client sending 64 KiB paths cannot fill the log 64 KiB a
// request (docs/configuration.md, "Logs and metrics").
const (
	MaxLogPath   = 1024
	MaxLogMethod = 32
)

// LogCut returns s, or when it is longer than max bytes its first ones
// (cut before a character, so the line stays UTF-8) and "…".
func LogCut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
