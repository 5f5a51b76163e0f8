package search

import (
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// Dense twins (docs/cars.md, "The search index"). A common value (a
// colour, a make, a state: at least one car in denseShare) is held in
// roaring as arrays of a few thousand positions per container, and
// intersecting two such arrays is a merge that branches on every element:
// in a profile of random pages it was the largest part of a query. Such a
// value also gets a twin, a plain bitset of one bit per position, and a
// query whose every part has a twin is answered by one pass over the
// words of its twins (AND across fields, OR within one, AND NOT for
// exclusions) that counts the total and picks the page as it goes.
//
// Twins are made on first use and then kept up to date by every write
// (under the index's write lock). They cost len(positions)/8 bytes each,
// 125 KB per million cars, and there are at most maxTwins of them, so
// their memory is bounded whatever the data: values that would need more
// are answered by the roaring path, as are queries with a rare value
// (a garage, a model), where roaring's intersections are cheap already.

// denseShare is the smallest share of the live cars a value must hold to
// get a twin: below it, the value's array is small enough that roaring
// intersects it about as fast as a pass over a bitset.
const denseShare = 64

// maxTwins bounds the number of twins (and so their memory: 32 MB per
// million cars at most).
const maxTwins = 256

// maxDenseValues bounds the values of a numeric field whose ranges get
// dense twins (a range is then one twin less another).
const maxDenseValues = 64

// bitset is a plain bitset over positions.
type bitset struct{ w []uint64 }

func (b *bitset) set(p uint32) {
	i := int(p >> 6)
	if i >= len(b.w) {
		b.w = append(b.w, make([]uint64, i+1-len(b.w))...)
	}
	b.w[i] |= 1 << (p & 63)
}

func (b *bitset) clear(p uint32) {
	if i := int(p >> 6); i < len(b.w) {
		b.w[i] &^= 1 << (p & 63)
	}
}

// word returns word i (0 past the end).
func (b *bitset) word(i int) uint64 {
	if i < len(b.w) {
		return b.w[i]
	}
	return 0
}

// twins holds the dense twins of roaring bitmaps, and per numeric field
// the dense range encoding. Readers (under the index's read lock) make
// twins under mu; writers (under the write lock, so alone) change them
// without it.
type twins struct {
	mu  sync.Mutex
	of  map[*roaring.Bitmap]*bitset
	cum [2]*denseCum
}

// denseCum is a numeric field's range encoding as twins: upTo[i] holds the
// cars whose value is at most vals[i].
type denseCum struct {
	vals []int64
	upTo []*bitset
}

// --- upkeep, under the write lock ---------------------------------------------

// addTo adds p to b and to its twin.
func (d *data) addTo(b *roaring.Bitmap, p uint32) {
	b.Add(p)
	if t := d.tw.of[b]; t != nil {
		t.set(p)
	}
}

// removeAt removes p from b and from its twin.
func (d *data) removeAt(b *roaring.Bitmap, p uint32) {
	b.Remove(p)
	if t := d.tw.of[b]; t != nil {
		t.clear(p)
	}
}

// forget drops the twin of a bitmap that is no longer used.
func (d *data) forget(b *roaring.Bitmap) {
	if d.tw.of != nil {
		delete(d.tw.of, b)
	}
}

// orInto adds cars to b and to its twin; andNotFrom removes them.
func (d *data) orInto(b, cars *roaring.Bitmap) {
	b.Or(cars)
	if t := d.tw.of[b]; t != nil {
		cars.Iterate(func(p uint32) bool { t.set(p); return true })
	}
}

func (d *data) andNotFrom(b, cars *roaring.Bitmap) {
	b.AndNot(cars)
	if t := d.tw.of[b]; t != nil {
		cars.Iterate(func(p uint32) bool { t.clear(p); return true })
	}
}

// cumChange keeps numeric field f's dense range encoding up to date with
// position p taking (set) or leaving value v. A value the encoding does
// not have drops it; the next range query makes it again.
func (d *data) cumChange(f int, v int64, p uint32, set bool) {
	c := d.tw.cum[f]
	if c == nil {
		return
	}
	i, ok := slices.BinarySearch(c.vals, v)
	if !ok {
		d.tw.cum[f] = nil
		return
	}
	for _, t := range c.upTo[i:] {
		if set {
			t.set(p)
		} else {
			t.clear(p)
		}
	}
}

// --- queries, under the read lock ---------------------------------------------

// twinOf returns the twin of b, making it when b is common enough (or
// d.opts.match is "dense") and there is room; nil when b has none.
func (d *data) twinOf(b *roaring.Bitmap) *bitset {
	d.tw.mu.Lock()
	defer d.tw.mu.Unlock()
	if t := d.tw.of[b]; t != nil {
		return t
	}
	if len(d.tw.of) >= maxTwins {
		return nil
	}
	if d.opts.match != "dense" && b.GetCardinality()*denseShare < d.cars.alive.GetCardinality() {
		return nil
	}
	if d.tw.of == nil {
		d.tw.of = map[*roaring.Bitmap]*bitset{}
	}
	t := &bitset{w: make([]uint64, max(uint64(d.positions()+63)/64, b.DenseSize()))}
	b.WriteDenseTo(t.w)
	d.tw.of[b] = t
	return t
}

// cumOf returns numeric field f's dense range encoding, making it from
// the values' bitmaps when there is none; nil for a field of too many
// values.
func (d *data) cumOf(f int) *denseCum {
	d.tw.mu.Lock()
	defer d.tw.mu.Unlock()
	if c := d.tw.cum[f]; c != nil {
		return c
	}
	m := d.values.doors
	if f == 1 {
		m = d.values.years
	}
	if len(m) > maxDenseValues {
		return nil
	}
	c := &denseCum{}
	for v := range m {
		c.vals = append(c.vals, v)
	}
	slices.Sort(c.vals)
	n := (d.positions() + 63) / 64
	for i, v := range c.vals {
		t := &bitset{w: make([]uint64, max(uint64(n), m[v].DenseSize()))}
		m[v].WriteDenseTo(t.w)
		if i > 0 {
			prev := c.upTo[i-1].w
			for j := range prev {
				t.w[j] |= prev[j]
			}
		}
		c.upTo = append(c.upTo, t)
	}
	d.tw.cum[f] = c
	return c
}

// denseQuery is a query in twins: the matches are the live cars in every
// term (a term is the union of its twins) and in none of excl.
type denseQuery struct {
	terms [][]*bitset
	excl  []*bitset
	none  bool // a term matches nothing: so does the query

	// What roaring would do with a query of exclusions only
	// (exclusionsOnRoaring): the cars the values excluded hold, and
	// whether a range is excluded.
	exclCars  uint64
	exclRange bool
}

// dense returns q in twins (read through eachPart, as parts reads it),
// or false when some part of it has none.
func (d *data) dense(q yard.Query) (dq denseQuery, ok bool) {
	ok = true
	twin := func(b *roaring.Bitmap) *bitset {
		t := d.twinOf(b)
		if t == nil {
			ok = false
		}
		return t
	}
	d.eachPart(q,
		func(any []*roaring.Bitmap, own bool) {
			if len(any) == 0 {
				dq.none = true
			}
			ok = ok && own
			term := make([]*bitset, 0, len(any))
			for _, b := range any {
				if ok {
					term = append(term, twin(b))
				}
			}
			dq.terms = append(dq.terms, term)
		},
		func(b *roaring.Bitmap, own bool) {
			ok = ok && own
			if ok {
				dq.excl = append(dq.excl, twin(b))
				dq.exclCars += b.GetCardinality()
			}
		},
		func(f yard.Filter) {
			if !ok {
				return
			}
			in, out, empty, has := d.denseRange(f)
			switch {
			case !has:
				ok = false
			case empty:
				dq.none = true
			default:
				if in != nil {
					dq.terms = append(dq.terms, []*bitset{in})
				}
				if out != nil {
					dq.excl = append(dq.excl, out)
					dq.exclRange = true
				}
			}
		})
	return dq, ok
}

// denseRange is rangeBitmaps in twins: the cars up to the upper bound
// (nil for all) less those below the lower one (nil for none); empty when
// no value fits; has false when the field has no dense encoding.
func (d *data) denseRange(f yard.Filter) (in, out *bitset, empty, has bool) {
	field, lo, hi, empty := rangeOf(f)
	if empty {
		return nil, nil, true, true
	}
	c := d.cumOf(field)
	if c == nil {
		return nil, nil, false, false
	}
	iLo, iHi, empty := valueSpan(c.vals, lo, hi)
	if empty {
		return nil, nil, true, true
	}
	if iLo >= 0 {
		out = c.upTo[iLo]
	}
	if iHi < len(c.vals)-1 {
		in = c.upTo[iHi]
	}
	return in, out, false, true
}

// denseWorthIt reports whether a pass over twins beats roaring for dq:
// roaring answers a match of one bitmap by itself, without a pass, and
// some queries of exclusions only from sizes (exclusionsOnRoaring).
func (dq *denseQuery) denseWorthIt(alive uint64) bool {
	if len(dq.terms) == 0 {
		return !dq.exclusionsOnRoaring(alive)
	}
	n := len(dq.excl)
	for _, t := range dq.terms {
		n += len(t)
	}
	return n >= 2
}

// exclusionsOnRoaring reports whether roaring answers a query of
// exclusions only (or of every car) without making a bitmap of the
// matches: every car, or one value excluded that leaves most cars, whose
// total is a difference of sizes and whose page a short walk (list).
// Several exclusions roaring would first unite into a new bitmap, and
// an exclusion of most cars it would take from every live car into
// another: at 10M cars each is a megabyte or two made and written per
// query, where a pass over the twins makes nothing.
func (dq *denseQuery) exclusionsOnRoaring(alive uint64) bool {
	switch len(dq.excl) {
	case 0:
		return true
	case 1:
		return !dq.exclRange && 2*dq.exclCars < alive
	}
	return false
}

// listDense answers a list from the twins, or returns false for the
// roaring path (see the comment at the top of this file).
func (d *data) listDense(q yard.Query, page yard.Page, facets []string) (*yard.CarList, bool) {
	if !d.cars.inOrder || d.opts.match == "bitmaps" || d.opts.match == "roaring" || d.opts.page != "" {
		return nil, false
	}
	dq, ok := d.dense(q)
	if !ok {
		return nil, false
	}
	if dq.none {
		return d.answer(nil, 0, facets, bitmapWalker(nil), false, nil), true
	}
	if d.opts.match != "dense" && !dq.denseWorthIt(d.cars.alive.GetCardinality()) {
		return nil, false
	}
	alive := d.twinOf(d.cars.alive)
	if alive == nil {
		return nil, false
	}
	// The total of a query on the cube's fields is a sum over a few of its
	// counts when that reads fewer of them than a count reads words of
	// the twins (a count's word is cheaper than a count of the cube read
	// at random, hence the quarter); the scan then stops at a full page.
	total, known := d.cubeTotal(q, uint64(len(alive.w)/4))
	var ps []uint32
	switch {
	case !known:
		total, ps = dq.scan(alive, page, true)
	case page.Max > 0 && uint64(page.Offset) < total:
		_, ps = dq.scan(alive, page, false)
	}
	if page.Max <= 0 || uint64(page.Offset) >= total {
		ps = nil
	}
	if len(facets) == 0 {
		return d.answer(ps, total, nil, nil, false, nil), true
	}
	// Facets walk the matches, or when most cars match the live cars that
	// do not, as on the roaring path; or the cars of a cross-count base
	// that do not match, with a second pass over the twins.
	if b, ok := d.cubeFacets(q, facets, total); ok {
		return d.answer(ps, total, facets, bitmapWalker(nil), false, b), true
	}
	all := d.cars.alive.GetCardinality()
	complement := total > all/2
	if d.opts.facets != "" {
		complement = d.opts.facets == "complement"
	}
	if b, ok := d.crossChoice(q, facets, total); ok {
		var from []*bitset
		for _, m := range d.baseBitmaps(b) {
			t := d.twinOf(m)
			if t == nil {
				from = nil
				break
			}
			from = append(from, t)
		}
		switch {
		case b.size == total:
			return d.answer(ps, total, facets, bitmapWalker(nil), false, b), true
		case from != nil:
			return d.answer(ps, total, facets, dq.walker(alive, false, from), false, b), true
		}
	}
	return d.answer(ps, total, facets, dq.walker(alive, complement, nil), complement, nil), true
}
