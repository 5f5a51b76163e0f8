package search

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIDTable: every id added is found at its position through the
// table's growth, and ids never added are not.
func TestIDTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var l idList
	var tab idTable
	var ids []string
	for p := range 5000 {
		id := fmt.Sprintf("car-%x", rng.Uint64())
		if p%7 == 0 {
			id = fmt.Sprintf("c%d", p) // short ids beside long ones
		}
		l.add(id)
		tab.add(&l, uint32(p))
		ids = append(ids, id)
		if p%997 == 0 {
			for q, id := range ids {
				if got, ok := tab.find(&l, id); !ok || got != uint32(q) {
					t.Fatalf("after %d ids: %q at %d, %v; want %d", p+1, id, got, ok, q)
				}
			}
		}
	}
	for _, id := range []string{"", "car-", "c5000", "nope"} {
		if p, ok := tab.find(&l, id); ok {
			t.Fatalf("%q found at %d, never added", id, p)
		}
	}
	if 2*tab.n > len(tab.slots) {
		t.Fatalf("%d ids in %d slots: more than half full", tab.n, len(tab.slots))
	}
}
