package yard

import (
	"strings"
	"unicode/utf8"
)

// HasControl reports whether s is not valid UTF-8 or holds a control
// character: C0 (NUL, tab, CR, LF, ...), DEL or C1. Names, e-mail
// addresses and phone numbers must not (docs/api.md, "Strict input").
func HasControl(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f })
}
