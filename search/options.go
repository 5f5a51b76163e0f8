package search

// options are an index's settings that a server leaves at their
// defaults. The index chooses between equivalent strategies by their
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
}

// defaultOptions are a server's options: the index chooses every
// strategy.
func defaultOptions() options {
	return options{setBig: defaultSetBig, setSmall: defaultSetSmall}
}
