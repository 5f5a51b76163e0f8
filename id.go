package yard

import (
	"slices"
	"strings"

	"github.com/google/uuid"
)

// NewID returns a new opaque identifier (a UUIDv7, so ids sort by creation).
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// ReservedIDs are path words that are never identifiers (docs/api.md, HTTP).
var ReservedIDs = []string{"search", "all", "by-parameters", "by-vendor"}

// ValidClientID reports whether a client-chosen id is acceptable: 1-64
// characters of letters, digits, '-', '_' and '.', not starting with '-' or
// '.', and not a reserved word.
func ValidClientID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '-' || id[0] == '.' ||
		slices.ContainsFunc(ReservedIDs, func(w string) bool { return strings.EqualFold(id, w) }) {
		return false
	}
	return !strings.ContainsFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	})
}
