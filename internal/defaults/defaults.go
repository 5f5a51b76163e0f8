// Package defaults fills in the unset fields of a component's
// configuration.
package defaults

import "cmp"

// Positive returns v, or def when v is not positive (unset: zero, or a
// negative value that means nothing).
func Positive[T cmp.Ordered](v, def T) T {
	var zero T
	if v <= zero {
		return def
	}
	return v
}
