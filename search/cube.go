package search

import (
	"slices"

	"github.com/yard-api/yard"
)

// The facet cube (docs/cars.md, "Facets", "The facet cube"). Cross counts (cross.go) start a
// facet walk from one filter's cars; a query like `q.year.ge=2005&doors=!3`
// still walks a sixth of the cars that way, and its facets were the
// slowest of random pages. The cube holds, for the five fields with few
// values (color, type, make, doors, year), the number of live cars with
// each combination of their column ids: a query whose filters are all on
// these fields, asking facets of these fields only, has its facet counts
// as sums over the combinations its filters allow, however many cars match
// (in the data set of docs/benchmarks.md at most 12·6·30·4·31 = 267,840
// counts, where such a walk covers up to half a million cars, three
// columns each). Every write keeps it up to date (a car moves one count).

// cubeFields are the crossFields indexes of the cube's dimensions.
var cubeFields = [...]int{0, 1, 2, 4, 5} // color, type, make, doors, year

// maxCubeCells bounds the cube's memory (16 MiB of counts); a data set
// with more combinations of values has no cube.
const maxCubeCells = 1 << 22

// facetCube holds the counts: n[(((c·s1 + t)·s2 + m)·s3 + d)·s4 + y] for
// the column ids c, t, m, d, y and the dimensions' sizes s (powers of two,
// grown as new ids come).
type facetCube struct {
	off  bool
	size [len(cubeFields)]int
	n    []uint32
}

// add counts the car of column ids ids (crossIDs) in the cube, or takes
// it out; under the write lock.
func (c *facetCube) add(ids *[len(crossFields)]uint32, remove bool) {
	if c.off {
		return
	}
	var at [len(cubeFields)]int
	grow := false
	for k, x := range cubeFields {
		at[k] = int(ids[x])
		grow = grow || at[k] >= c.size[k]
	}
	if grow && !c.grow(at) {
		return
	}
	i := c.cell(at)
	if remove {
		c.n[i]--
	} else {
		c.n[i]++
	}
}

func (c *facetCube) cell(at [len(cubeFields)]int) int {
	i := 0
	for k, a := range at {
		i = i*c.size[k] + a
	}
	return i
}

// grow makes room for the ids at, moving every count to its place in the
// new layout; past maxCubeCells it turns the cube off and returns false.
func (c *facetCube) grow(at [len(cubeFields)]int) bool {
	size := c.size
	cells := 1
	for k := range size {
		for size[k] <= at[k] {
			size[k] = max(2*size[k], 1)
		}
		cells *= size[k]
	}
	if cells > maxCubeCells {
		c.off, c.n = true, nil
		return false
	}
	old := *c
	c.size, c.n = size, make([]uint32, cells)
	if len(old.n) == 0 {
		return true
	}
	var p [len(cubeFields)]int // the ids of the old cell, counted up
	for _, v := range old.n {
		if v != 0 {
			c.n[c.cell(p)] = v
		}
		for k := len(p) - 1; k >= 0; k-- {
			if p[k]++; p[k] < old.size[k] {
				break
			}
			p[k] = 0
		}
	}
	return true
}

// cubeFacets returns a base whose counts are the facets of q (every
// field in fields, summed from the cube) for a query of total matches, or
// false when the cube cannot answer them (a filter or a facet on another
// field, a null test, no cube) or would add up more counts than a walk
// would visit cars: the shorter walk of list, or a cross base's.
func (d *data) cubeFacets(q yard.Query, fields []string, total uint64) (*crossBase, bool) {
	if len(fields) == 0 || d.cube.off || len(d.cube.n) == 0 || (d.force.facets != "" && d.force.facets != "cube") {
		return nil, false
	}
	var want [len(cubeFields)]bool
	for _, f := range fields {
		k := cubeDim(f)
		if k < 0 {
			return nil, false
		}
		want[k] = true
	}
	for _, f := range q.Filters {
		if cubeDim(f.Field) < 0 {
			return nil, false // a filter on a field the cube does not have
		}
	}
	var allowed [len(cubeFields)][]uint32
	cells := uint64(1)
	for k, x := range cubeFields {
		ok := func(uint32) bool { return true }
		for _, f := range q.Filters {
			if cubeDim(f.Field) != k {
				continue
			}
			if f.Null || f.NotNull || (len(f.Ranges) > 0 && x < len(textFields)) {
				return nil, false
			}
			prev, this := ok, d.allowedValue(x, f)
			ok = func(i uint32) bool { return prev(i) && this(i) }
		}
		n := min(d.columnIDs(x), d.cube.size[k])
		allowed[k] = make([]uint32, 0, n)
		for i := range uint32(n) {
			if ok(i) {
				allowed[k] = append(allowed[k], i)
			}
		}
		cells *= uint64(len(allowed[k]))
	}
	if d.force.facets != "cube" {
		walk := min(total, d.alive.GetCardinality()-total)
		if cells > walk {
			return nil, false
		}
		if b, ok := d.crossChoice(q, fields, total); ok && cells > b.size-total {
			return nil, false
		}
	}
	b := &crossBase{sums: new([len(crossFields)][]uint64)}
	sums := d.cube.sums(&allowed)
	for k, x := range cubeFields {
		if want[k] {
			b.sums[x] = sums[k]
		}
	}
	return b, true
}

// cubeDim returns the cube's dimension of field, or -1.
func cubeDim(field string) int { return slices.Index(cubeFields[:], crossField(field)) }

// columnIDs returns how many column ids field x (a crossFields index) has
// (cross counts and the cube enumerate them).
func (d *data) columnIDs(x int) int {
	switch {
	case x < len(textFields):
		return len(d.keyIDs[x])
	case x == 4:
		return len(d.numVal[0])
	}
	return len(d.numVal[1])
}

// sums adds up the counts of every combination of allowed ids: for each
// dimension, the cars per id among those combinations.
func (c *facetCube) sums(allowed *[len(cubeFields)][]uint32) (out [len(cubeFields)][]uint64) {
	for k := range out {
		out[k] = make([]uint64, c.size[k])
	}
	s := c.size
	last := out[4]
	for _, a0 := range allowed[0] {
		var n0 uint64
		for _, a1 := range allowed[1] {
			var n1 uint64
			i01 := (int(a0)*s[1] + int(a1)) * s[2]
			for _, a2 := range allowed[2] {
				var n2 uint64
				i012 := (i01 + int(a2)) * s[3]
				for _, a3 := range allowed[3] {
					row := c.n[(i012+int(a3))*s[4]:][:s[4]]
					var n3 uint64
					for _, a4 := range allowed[4] {
						v := uint64(row[a4])
						n3 += v
						last[a4] += v
					}
					out[3][a3] += n3
					n2 += n3
				}
				out[2][a2] += n2
				n1 += n2
			}
			out[1][a1] += n1
			n0 += n1
		}
		out[0][a0] += n0
	}
	return out
}
