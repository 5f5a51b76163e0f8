package search

// Force makes the index use one strategy for facets ("walk", "complement")
// and pages ("walk", "gather"); "" lets it choose. Tests only.
func Force(facets, page string) { force.facets, force.page = facets, page }

// ForceMatch "bitmaps" makes the index make every match as a bitmap
// (not answer a query of exclusions only from their union); "" lets it
// choose. Tests only.
func ForceMatch(how string) { force.match = how }
