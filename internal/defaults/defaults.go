// Package defaults fills in the unset fields of a component's
// configuration.
package defaults

import "cmp"

// Positive sets *v to def when it is not positive (unset: zero, or a
// negative value that means nothing).
func Positive[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}
