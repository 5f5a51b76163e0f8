package console

import "testing"

// TestFacetToggleReadsAliases: a facet value asked for under an alias
// (vendor for make, any case) is seen as selected and toggled off, as the
// API reads the query (yard.CanonicalField); a value not asked for is
// added under the facet's own name.
func TestFacetToggleReadsAliases(t *testing.T) {
	pairs := splitQuery("Vendor=Ford,BMW&color=red")
	if !selected(pairs, "make", "ford") || selected(pairs, "make", "Audi") {
		t.Fatalf("selected over %v: vendor=Ford should count as make=ford, Audi should not", pairs)
	}
	if got := joinQuery(toggle(pairs, "make", "Ford"), "&"); got != "Vendor=BMW&color=red" {
		t.Errorf("toggling make=Ford off: got %q", got)
	}
	if got := joinQuery(toggle(pairs, "make", "Audi"), "&"); got != "Vendor=Ford,BMW&color=red&make=Audi" {
		t.Errorf("toggling make=Audi on: got %q", got)
	}
	if !selected(splitQuery("GARAGE=g1"), "garage.id", "g1") {
		t.Error("garage (any case) should count as garage.id")
	}
}
