package search

import (
	"math/rand/v2"
	"testing"
)

// TestCubeMargins adds and removes random cars, growing the cube as new
// column ids come, and checks every cell against a count of the cars: a
// cell with "any value" in some dimensions counts the cars that agree
// with it in the others.
func TestCubeMargins(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var c facetCube
	var cars [][len(crossFields)]uint32
	for step := range 3000 {
		if len(cars) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(cars))
			c.add(&cars[i], true)
			cars[i] = cars[len(cars)-1]
			cars = cars[:len(cars)-1]
		} else {
			// Column ids come in order, so the cube grows over the run.
			var ids [len(crossFields)]uint32
			for x := range ids {
				ids[x] = uint32(r.IntN(2 + step/300))
			}
			c.add(&ids, false)
			cars = append(cars, ids)
		}
	}
	if c.off {
		t.Fatal("the cube turned off")
	}
	want := make([]uint32, len(c.n))
	for _, ids := range cars {
		for mask := range 1 << cubeDims {
			var at [cubeDims]int
			for k, x := range cubeFields {
				at[k] = int(ids[x])
				if mask&(1<<k) != 0 {
					at[k] = c.size[k]
				}
			}
			want[c.cell(at)]++
		}
	}
	bad := 0
	for i := range want {
		if c.n[i] != want[i] {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d cells differ from the cars' counts", bad, len(want))
	}
	if any := c.n[len(c.n)-1]; int(any) != len(cars) {
		t.Fatalf("the cell of any value in every dimension holds %d, want %d cars", any, len(cars))
	}
}
