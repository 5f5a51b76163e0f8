package search

// Force makes the index use one strategy for facets ("walk", "complement")
// and pages ("walk", "gather"); "" lets it choose. Tests only.
func Force(facets, page string) { force.facets, force.page = facets, page }
