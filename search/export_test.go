package search

// Force makes the index use one strategy for facets ("walk", "complement",
// "cross" whenever a filter has cross counts)
// and pages ("walk", "gather"); "" lets it choose. Tests only.
func Force(facets, page string) { force.facets, force.page = facets, page }

// ForceMatch "bitmaps" makes the index make every match as a bitmap
// (not answer a query of exclusions only from their union, nor from the
// dense twins); "dense" makes it answer from twins whenever every part of
// the query can have one, whatever its share of the cars; "" lets it
// choose; "roaring" only keeps it from the twins. Tests only.
func ForceMatch(how string) { force.match = how }
