package search

import "time"

// Option sets one of an index's options: WithStoreWait; the tests'
// (export_test.go) force its strategies and move the bounds of a
// carSet's array.
type Option func(*options)

// WithStoreWait bounds how long a read of the index waits for the store
// when it has to reach it (to catch up, or to answer before the index is
// built) and the caller's context has no deadline of its own: the
// server's store wait (docs/operations.md), which the server does not arm
// for the reads the index answers from memory.
func WithStoreWait(d time.Duration) Option {
	return func(o *options) { o.storeWait = d }
}

// options are an index's settings. Apart from the store wait, a server
// leaves them at their defaults. The index chooses between equivalent strategies by their
// estimated cost (plan.go, dense.go, cross.go, cube.go); the tests force
// each in turn to hold it against the SQL path, and the benchmarks to
// compare them, and they move the bounds of a carSet's array so that
// small data sets cross them. Only the tests change them (export_test.go,
// under the index's write lock); New gives the defaults.
type options struct {
	// facets forces the facets' strategy: "walk", "complement", "cross"
	// whenever a filter has cross counts, "cube" whenever the facet cube
	// can answer. page forces the page's: "walk", "gather" (also when
	// positions are in id order). match "bitmaps" makes every match a
	// bitmap (not a query of exclusions only answered from their union,
	// nor the dense twins), "dense" answers from twins whenever every
	// part of the query can have one, whatever its share of the cars,
	// "roaring" only keeps the index from the twins. "" lets the index
	// choose.
	facets, page, match string
	// setBig and setSmall bound a carSet's array (carset.go).
	setBig, setSmall int
	// storeWait: WithStoreWait; 0 is no bound.
	storeWait time.Duration
}

// defaultOptions are a server's options: the index chooses every
// strategy.
func defaultOptions() options {
	return options{setBig: defaultSetBig, setSmall: defaultSetSmall}
}
