package search

import (
	"math/bits"
	"slices"

	"github.com/yard-api/yard"
)

// The facet cube (docs/cars.md, "Facets", "The facet cube"). Cross counts (cross.go) start a
// facet walk from one filter's cars; a query like `q.year.ge=2005&doors=!3`
// still walks a sixth of the cars that way, and its facets were the
// slowest of random pages. The cube holds, for the five fields with few
// values (color, type, make, doors, year), the number of live cars with
// each combination of their column ids, and its margins: for each
// dimension one more slot, "any value", so that the cube also holds the
// counts of every combination of some of the fields, the others summed
// out. A query whose filters are all on these fields, asking facets of
// these fields only, has its facet counts (and its total) as sums over the
// combinations its filters allow, however many cars match: a field it
// neither filters nor asks facets of is one slot, "any value", and a
// filter that allows most values is "any value" less the few it does not
// allow. Every write keeps it up to date (a car moves one count in each
// of the 32 margins it belongs to).
// cubeFields are the crossFields indexes of the cube's dimensions.
var cubeFields = [...]int{0, 1, 2, 4, 5} // color, type, make, doors, year

const cubeDims = len(cubeFields)

// maxCubeCells bounds the cube's memory (16 MiB of counts); a data set
// with more combinations of values has no cube.
const maxCubeCells = 1 << 22

// facetCube holds the counts: n[(((c·s1 + t)·s2 + m)·s3 + d)·s4 + y] for
// the slots c, t, m, d, y and the dimensions' strides s. A dimension has
// size value slots (a power of two, grown as new column ids come) and
// then the slot "any value" (size), so its stride is size+1.
type facetCube struct {
	off  bool
	size [cubeDims]int
	n    []uint32
}

// stride returns dimension k's number of slots.
func (c *facetCube) stride(k int) int { return c.size[k] + 1 }

// add counts the car of column ids ids (crossIDs) in the cube, or takes
// it out; under the write lock. The car is in 32 cells: each of its
// slots, or "any value", in each dimension.
func (c *facetCube) add(ids *[len(crossFields)]uint32, remove bool) {
	if c.off {
		return
	}
	var at [cubeDims]int
	grow := false
	for k, x := range cubeFields {
		at[k] = int(ids[x])
		grow = grow || at[k] >= c.size[k]
	}
	if grow && !c.grow(at) {
		return
	}
	d := uint32(1)
	if remove {
		d = ^uint32(0) // -1: the counts wrap back
	}
	// The 32 cells' indexes, a dimension at a time: each index so far
	// with the car's slot, and with "any value".
	var cells [1 << cubeDims]int
	n, mult := 1, 1
	for k := cubeDims - 1; k >= 0; k-- {
		for j := range n {
			cells[n+j] = cells[j] + c.size[k]*mult
			cells[j] += at[k] * mult
		}
		n, mult = 2*n, mult*c.stride(k)
	}
	for _, i := range cells {
		c.n[i] += d
	}
}

func (c *facetCube) cell(at [cubeDims]int) int {
	i := 0
	for k, a := range at {
		i = i*c.stride(k) + a
	}
	return i
}

// grow makes room for the ids at, moving every count to its place in the
// new layout ("any value" moves to the new last slot); past maxCubeCells
// it turns the cube off and returns false.
func (c *facetCube) grow(at [cubeDims]int) bool {
	size := c.size
	cells := 1
	for k := range size {
		for size[k] <= at[k] {
			size[k] = max(2*size[k], 1)
		}
		cells *= size[k] + 1
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
	var p [cubeDims]int // the slots of the old cell, counted up
	for _, v := range old.n {
		if v != 0 {
			q := p
			for k := range q {
				if q[k] == old.size[k] {
					q[k] = c.size[k]
				}
			}
			c.n[c.cell(q)] = v
		}
		for k := len(p) - 1; k >= 0; k-- {
			if p[k]++; p[k] < old.stride(k) {
				break
			}
			p[k] = 0
		}
	}
	return true
}

// cubeTerm is one slot of a dimension in a sum over the cube: a column
// id, or "any value" (the dimension's size), added or taken away.
type cubeTerm struct {
	slot int
	sign int64
}

// cubePlan returns, for each dimension, the slots whose combinations add
// up to q's matches, and how many cells that sum reads; false when the
// cube cannot answer q (a filter on another field, a null test, a range
// on a text field, no cube). The dimensions in want are summed value by
// value (their counts are asked for); any other is "any value" when q
// does not filter it, and "any value" less the values q does not allow
// when that is fewer slots than those it allows.
func (d *data) cubePlan(q yard.Query, want *[cubeDims]bool) (plan [cubeDims][]cubeTerm, cells uint64, ok bool) {
	c := &d.cube
	if c.off || len(c.n) == 0 {
		return plan, 0, false
	}
	var filtered [cubeDims]bool
	for _, f := range q.Filters {
		k := cubeDim(f.Field)
		if k < 0 || f.Null || f.NotNull || (len(f.Ranges) > 0 && cubeFields[k] < len(textFields)) {
			return plan, 0, false
		}
		filtered[k] = true
	}
	// The allowed column ids of each filtered dimension, as bits; then
	// every dimension's terms in one allocation.
	var small [cubeDims][4]uint64
	var masks [cubeDims][]uint64
	var lens [cubeDims]int
	n := 0
	for k, x := range cubeFields {
		ids := min(d.columnIDs(x), c.size[k])
		switch {
		case filtered[k]:
			masks[k] = small[k][:]
			if w := (ids + 63) / 64; w > len(small[k]) {
				masks[k] = make([]uint64, w)
			}
			d.allowedMask(x, q.Filters, masks[k], ids)
			allowed := 0
			for _, w := range masks[k] {
				allowed += bits.OnesCount64(w)
			}
			lens[k] = allowed
			if !want[k] {
				lens[k] = min(allowed, 1+ids-allowed)
			}
		case want[k]:
			lens[k] = ids
		default:
			lens[k] = 1
		}
		n += lens[k]
	}
	terms := make([]cubeTerm, 0, n)
	cells = 1
	for k, x := range cubeFields {
		ids := min(d.columnIDs(x), c.size[k])
		from := len(terms)
		switch {
		case !filtered[k] && !want[k]:
			terms = append(terms, cubeTerm{slot: c.size[k], sign: 1})
		case !filtered[k]:
			for i := range ids {
				terms = append(terms, cubeTerm{slot: i, sign: 1})
			}
		default:
			m := masks[k]
			allowed := lens[k] // the allowed ids, unless denied ones are fewer
			if !want[k] {
				allowed = 0
				for _, w := range m {
					allowed += bits.OnesCount64(w)
				}
			}
			if allowed == lens[k] {
				for i := range ids {
					if m[i/64]&(1<<(i%64)) != 0 {
						terms = append(terms, cubeTerm{slot: i, sign: 1})
					}
				}
				break
			}
			terms = append(terms, cubeTerm{slot: c.size[k], sign: 1})
			for i := range ids {
				if m[i/64]&(1<<(i%64)) == 0 {
					terms = append(terms, cubeTerm{slot: i, sign: -1})
				}
			}
		}
		plan[k] = terms[from:len(terms):len(terms)]
		cells *= uint64(len(plan[k]))
	}
	return plan, cells, true
}

// allowedMask sets in mask the bits of the column ids below n of field x
// (a crossFields index) whose values pass every filter on x.
func (d *data) allowedMask(x int, filters []yard.Filter, mask []uint64, n int) {
	clear(mask)
	for i := range n {
		mask[i/64] |= 1 << (i % 64)
	}
	// id returns the column id of a filter's value, or false when no car
	// has had it.
	id := func(v string) (uint32, bool) {
		if x < len(textFields) {
			k, ok := d.strs.index[v]
			if !ok {
				return 0, false
			}
			i, ok := d.cols.key[x].ids[k]
			return i, ok
		}
		v64, ok := parseInt(v)
		if !ok {
			return 0, false
		}
		i, ok := d.cols.num[x-len(textFields)].ids[v64]
		return i, ok
	}
	for _, f := range filters {
		if crossField(f.Field) != x {
			continue
		}
		if len(f.In) > 0 {
			var in [4]uint64
			keep := in[:]
			if len(mask) > len(in) {
				keep = make([]uint64, len(mask))
			}
			for _, v := range f.In {
				if i, ok := id(v); ok && int(i) < n {
					keep[i/64] |= 1 << (i % 64)
				}
			}
			for w := range mask {
				mask[w] &= keep[w]
			}
		}
		for _, v := range f.NotIn {
			if i, ok := id(v); ok && int(i) < n {
				mask[i/64] &^= 1 << (i % 64)
			}
		}
		if len(f.Ranges) > 0 {
			vals := d.cols.num[x-len(textFields)].vals
			for i := range n {
				v := vals[i]
				for _, r := range f.Ranges {
					if r.Op == yard.OpLt && !(v < r.Value) || r.Op == yard.OpLe && !(v <= r.Value) ||
						r.Op == yard.OpGt && !(v > r.Value) || r.Op == yard.OpGe && !(v >= r.Value) {
						mask[i/64] &^= 1 << (i % 64)
					}
				}
			}
		}
	}
}

// cubeTotal returns q's number of matches summed from the cube, when the
// cube can answer q in at most most cells (any number when forced).
func (d *data) cubeTotal(q yard.Query, most uint64) (uint64, bool) {
	if f := d.opts.facets; f != "" && f != "cube" {
		return 0, false
	}
	var want [cubeDims]bool
	plan, cells, ok := d.cubePlan(q, &want)
	if !ok || (cells > most && d.opts.facets != "cube") {
		return 0, false
	}
	total, _ := d.cube.sums(&plan, &want)
	return uint64(total), true
}

// cubeFacets returns a base whose counts are the facets of q (every
// field in fields, summed from the cube) for a query of total matches, or
// false when the cube cannot answer them (cubePlan; a facet on another
// field) or would add up more counts than a walk would visit cars: the
// shorter walk of list, or a cross base's.
func (d *data) cubeFacets(q yard.Query, fields []string, total uint64) (*crossBase, bool) {
	if len(fields) == 0 || (d.opts.facets != "" && d.opts.facets != "cube") {
		return nil, false
	}
	var want [cubeDims]bool
	for _, f := range fields {
		k := cubeDim(f)
		if k < 0 {
			return nil, false
		}
		want[k] = true
	}
	plan, cells, ok := d.cubePlan(q, &want)
	if !ok {
		return nil, false
	}
	if d.opts.facets != "cube" {
		walk := min(total, d.cars.alive.GetCardinality()-total)
		if cells > walk {
			return nil, false
		}
		// A cross base's walk makes a pass over its twins' words at
		// least (or a roaring difference of as many cars): fewer counts
		// than that need no base weighed.
		if cells > uint64(d.positions()/64) {
			if b, ok := d.crossChoice(q, fields, total); ok && cells > b.size-total {
				return nil, false
			}
		}
	}
	b := &crossBase{sums: new([len(crossFields)][]uint64)}
	_, sums := d.cube.sums(&plan, &want)
	for k, x := range cubeFields {
		if want[k] {
			s := make([]uint64, d.cube.size[k])
			for i := range s {
				s[i] = uint64(sums[k][i])
			}
			b.sums[x] = s
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
		return len(d.cols.key[x].vals)
	case x == 4:
		return len(d.cols.num[0].vals)
	}
	return len(d.cols.num[1].vals)
}

// sums adds up the counts of every combination of plan's slots, each
// with the product of its slots' signs: the total, and for each dimension
// in want the cars per slot among those combinations.
func (c *facetCube) sums(plan *[cubeDims][]cubeTerm, want *[cubeDims]bool) (total int64, out [cubeDims][]int64) {
	for k := range out {
		if want[k] {
			out[k] = make([]int64, c.stride(k))
		}
	}
	var s [cubeDims]int
	for k := range s {
		s[k] = c.stride(k)
	}
	// n_k is the sum over the dimensions after k, with their signs; s_k
	// the sign of the slots up to k.
	last := out[4]
	for _, a0 := range plan[0] {
		var n0 int64
		s0 := a0.sign
		for _, a1 := range plan[1] {
			var n1 int64
			s1 := s0 * a1.sign
			i01 := (a0.slot*s[1] + a1.slot) * s[2]
			for _, a2 := range plan[2] {
				var n2 int64
				s2 := s1 * a2.sign
				i012 := (i01 + a2.slot) * s[3]
				for _, a3 := range plan[3] {
					s3 := s2 * a3.sign
					row := c.n[(i012+a3.slot)*s[4]:][:s[4]]
					var n3 int64
					if last != nil {
						for _, a4 := range plan[4] {
							v := int64(row[a4.slot]) * a4.sign
							n3 += v
							last[a4.slot] += v * s3
						}
					} else {
						for _, a4 := range plan[4] {
							n3 += int64(row[a4.slot]) * a4.sign
						}
					}
					if out[3] != nil {
						out[3][a3.slot] += n3 * s3
					}
					n2 += n3 * a3.sign
				}
				if out[2] != nil {
					out[2][a2.slot] += n2 * s2
				}
				n1 += n2 * a2.sign
			}
			if out[1] != nil {
				out[1][a1.slot] += n1 * s1
			}
			n0 += n1 * a1.sign
		}
		if out[0] != nil {
			out[0][a0.slot] += n0 * s0
		}
		total += n0 * a0.sign
	}
	return total, out
}
