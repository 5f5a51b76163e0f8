package search

import (
	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// Cross counts (docs/cars.md, "Facets"). Facets walk cars: the matches,
// or when most cars match the live cars that do not. A query like
// `q.year.ge=2016` or `color=blue,red&doors=!5` matches a third of the
// cars or more, so either walk covers hundreds of thousands of them. But
// its matches are close to the cars of one of its own filters (every car
// of 2016 or later; every blue or red car), and the facet counts of such
// a filter's cars are sums of cross counts: for every two fields x and g
// with a column, the number of live cars holding each pair of values.
// Every write keeps them up to date (a car adds or removes one per pair
// of fields), so a facet walk can start from the filter whose cars are
// closest to the matches: it walks the cars of the filter that do not
// match and subtracts their counts from the filter's cross counts.

// crossFields are the fields with cross counts, in column order: the
// text fields (textFields order), then doors and year.
var crossFields = [...]string{yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel, yard.FieldDoors, yard.FieldYear}

// maxCrossValues bounds the values of a field with cross counts, and so
// their memory: at most 6·6·256·256·4 bytes (6 MiB). A field that has had
// more values (in the data set of docs/benchmarks.md, the 300 models) has
// none.
const maxCrossValues = 256

// crossTabs holds the cross counts: n[x][g][i][j] is the number of live
// cars whose field x has column id i and field g column id j.
type crossTabs struct {
	off [len(crossFields)]bool
	n   [len(crossFields)][len(crossFields)][][]uint32
	// tally holds, per garage state, the counts of its live cars per
	// column id of each field: a state's facet counts (a state as a base).
	tally map[string]*stateTally
}

// stateTally is a garage state's counts: of its live cars, and per
// crossFields field and column id.
type stateTally struct {
	cars uint64
	n    [len(crossFields)][]uint32
}

// crossField returns the index of field in crossFields, or -1.
func crossField(field string) int {
	for i, f := range crossFields {
		if f == field {
			return i
		}
	}
	return -1
}

// crossIDs returns the column ids of the car at position p, as index
// set them in the columns (unindex finds them there still).
func (d *data) crossIDs(p uint32) (ids [len(crossFields)]uint32) {
	for i := range d.cols.key {
		ids[i] = d.cols.key[i].col.get(p)
	}
	ids[4] = d.cols.num[0].col.get(p)
	ids[5] = d.cols.num[1].col.get(p)
	return ids
}

// crossAdd adds the car at position p to the cross counts (remove: takes
// it out); under the write lock.
func (d *data) crossAdd(p uint32, remove bool) {
	t := &d.cross
	ids := d.crossIDs(p)
	d.cube.add(&ids, remove)
	if slot := d.cols.garage.get(p); slot != 0 {
		d.tallyIDs(d.garages.slots[slot].stateKey, &ids, remove)
	}
	for x, id := range ids {
		if id >= maxCrossValues && !t.off[x] {
			t.off[x] = true
			for g := range crossFields {
				t.n[x][g], t.n[g][x] = nil, nil
			}
		}
	}
	for x, i := range ids {
		if t.off[x] {
			continue
		}
		for g, j := range ids {
			if t.off[g] {
				continue
			}
			rows := t.n[x][g]
			if int(i) >= len(rows) {
				rows = append(rows, make([][]uint32, int(i)+1-len(rows))...)
				t.n[x][g] = rows
			}
			row := rows[i]
			if int(j) >= len(row) {
				row = append(row, make([]uint32, int(j)+1-len(row))...)
				rows[i] = row
			}
			if remove {
				row[j]--
			} else {
				row[j]++
			}
		}
	}
}

// tally adds the car at position p to the counts of garage state key
// (remove: takes it out); under the write lock.
func (d *data) tally(key string, p uint32, remove bool) {
	ids := d.crossIDs(p)
	d.tallyIDs(key, &ids, remove)
}

func (d *data) tallyIDs(key string, ids *[len(crossFields)]uint32, remove bool) {
	if d.cross.tally == nil {
		d.cross.tally = map[string]*stateTally{}
	}
	t := d.cross.tally[key]
	if t == nil {
		t = new(stateTally)
		d.cross.tally[key] = t
	}
	for x, i := range ids {
		if int(i) >= len(t.n[x]) {
			t.n[x] = append(t.n[x], make([]uint32, int(i)+1-len(t.n[x]))...)
		}
		if remove {
			t.n[x][i]--
		} else {
			t.n[x][i]++
		}
	}
	if remove {
		if t.cars--; t.cars == 0 {
			delete(d.cross.tally, key) // as its bitmap is
		}
	} else {
		t.cars++
	}
}

// crossBase is a filter's cars as a start for facets: field x's values
// of column ids ids, held by size cars; or (states set) the cars of
// garages in those states (a state as a base: its counts are the state's
// tally, crossTabs.tally).
type crossBase struct {
	x      int
	ids    []uint32
	states []string
	size   uint64
	// sums, when set, are the counts themselves, per crossFields index
	// and column id (the facet cube's, cube.go): nothing is walked.
	sums *[len(crossFields)][]uint64
}

// count returns the number of the base's cars whose field g has column
// id j.
func (b *crossBase) count(t *crossTabs, g int, j uint32) uint64 {
	if b.sums != nil {
		if s := b.sums[g]; int(j) < len(s) {
			return s[j]
		}
		return 0
	}
	var n uint64
	if b.states != nil {
		for _, v := range b.states {
			if c := t.tally[v]; c != nil && int(j) < len(c.n[g]) {
				n += uint64(c.n[g][j])
			}
		}
		return n
	}
	rows := t.n[b.x][g]
	for _, i := range b.ids {
		if int(i) < len(rows) && int(j) < len(rows[i]) {
			n += uint64(rows[i][j])
		}
	}
	return n
}

// baseBitmaps returns the bitmaps whose union is the base's cars (stored
// bitmaps: not to be changed).
func (d *data) baseBitmaps(b *crossBase) []*roaring.Bitmap {
	var bs []*roaring.Bitmap
	if b.states != nil {
		for _, v := range b.states {
			if m := d.garages.states[v]; m != nil {
				bs = append(bs, m)
			}
		}
		return bs
	}
	for _, i := range b.ids {
		if m := d.idBitmap(b.x, i); m != nil {
			bs = append(bs, m)
		}
	}
	return bs
}

// baseBitmap returns the base's cars (a stored bitmap when the base is
// one: not to be changed).
func (d *data) baseBitmap(b *crossBase) *roaring.Bitmap {
	bs := d.baseBitmaps(b)
	if len(bs) == 1 {
		return bs[0]
	}
	return roaring.FastOr(bs...)
}

// idBitmap returns the cars whose field x (a crossFields index) has
// column id i, or nil.
func (d *data) idBitmap(x int, i uint32) *roaring.Bitmap {
	if x < len(textFields) {
		if int(i) < len(d.cols.key[x].vals) {
			return d.values.text[x][d.cols.key[x].vals[i]]
		}
		return nil
	}
	f, m := 0, d.values.doors
	if x == 5 {
		f, m = 1, d.values.years
	}
	if int(i) < len(d.cols.num[f].vals) {
		return m[d.cols.num[f].vals[i]]
	}
	return nil
}

// crossBaseOf returns the filter of q with cross counts for every field
// in fields whose cars are the fewest (so the closest to the matches,
// which they hold); false when there is none.
func (d *data) crossBaseOf(q yard.Query, fields []string) (best crossBase, ok bool) {
	t := &d.cross
	for _, f := range fields {
		if g := crossField(f); g < 0 || t.off[g] {
			return best, false
		}
	}
	for _, f := range q.Filters {
		x := crossField(f.Field)
		if x < 0 || t.off[x] || f.Null || f.NotNull || (len(f.Ranges) > 0 && x < len(textFields)) {
			continue
		}
		b := crossBase{x: x}
		n := d.columnIDs(x)
		allowed := make([]uint64, (n+63)/64)
		d.allowedMask(x, []yard.Filter{f}, allowed, n)
		for i := range uint32(n) {
			if allowed[i/64]&(1<<(i%64)) == 0 {
				continue
			}
			if m := d.idBitmap(x, i); m != nil {
				b.ids = append(b.ids, i)
				b.size += m.GetCardinality()
			}
		}
		if !ok || b.size < best.size {
			best, ok = b, true
		}
	}
	// A state as a base: the cars of garages in the states a filter
	// names (only those: an exclusion's base would be most cars).
	for _, f := range q.Filters {
		if f.Field != yard.FieldGarageState || len(f.In) == 0 || len(f.NotIn) > 0 || f.Null || f.NotNull || len(f.Ranges) > 0 {
			continue
		}
		b := crossBase{states: f.In}
		for _, v := range f.In {
			if m := d.garages.states[v]; m != nil {
				b.size += m.GetCardinality()
			}
		}
		if !ok || b.size < best.size {
			best, ok = b, true
		}
	}
	return best, ok
}

// crossChoice returns the base of q for facets when it is closer to the
// matches (total of them) than both walks of list (the matches; the live
// cars that do not match): making its walk costs a union and a difference
// on the roaring path, a second pass on the dense one, so it is taken only
// when it saves half of the shorter walk (d.opts.facets "cross": whenever
// there is one).
func (d *data) crossChoice(q yard.Query, fields []string, total uint64) (*crossBase, bool) {
	if d.opts.facets != "" && d.opts.facets != "cross" {
		return nil, false
	}
	b, ok := d.crossBaseOf(q, fields)
	if !ok {
		return nil, false
	}
	if other := min(total, d.cars.alive.GetCardinality()-total); d.opts.facets != "cross" && (b.size-total)*2 > other {
		return nil, false
	}
	return &b, true
}

// crossWalk returns crossChoice's base and the cars to walk: the base's
// cars that do not match, made by walk from the base's bitmap.
func (d *data) crossWalk(q yard.Query, fields []string, total uint64, walk func(b *roaring.Bitmap) *roaring.Bitmap) (*crossBase, *roaring.Bitmap) {
	b, ok := d.crossChoice(q, fields, total)
	switch {
	case !ok:
		return nil, nil
	case b.size == total:
		return b, roaring.New()
	}
	return b, walk(d.baseBitmap(b))
}
