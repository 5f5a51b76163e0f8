package search

// Option is an option of New. The index chooses between equivalent
// strategies by their estimated cost (plan.go, dense.go, cross.go); an
// option forces one, so the tests hold each against the SQL path and the
// benchmarks compare them. A server passes none.
type Option func(*strategy)

// WithStrategy makes the index use one strategy for facets ("walk",
// "complement", "cross" whenever a filter has cross counts, "cube"
// whenever the facet cube can answer) and pages
// ("walk", "gather", also when positions are in id order); "" lets it
// choose.
func WithStrategy(facets, page string) Option {
	return func(s *strategy) { s.facets, s.page = facets, page }
}

// WithMatch "bitmaps" makes the index make every match as a bitmap (not
// answer a query of exclusions only from their union, nor from the dense
// twins); "dense" makes it answer from twins whenever every part of the
// query can have one, whatever its share of the cars; "" lets it choose;
// "roaring" only keeps it from the twins.
func WithMatch(match string) Option {
	return func(s *strategy) { s.match = match }
}

// strategy holds the strategies the options force ("" for each lets the
// index choose). The Index keeps it and gives it to each data it builds,
// whose queries read it (data.force).
type strategy struct{ facets, page, match string }
