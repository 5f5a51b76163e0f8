package search

import (
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// facets counts the matches per value of each field, in one walk over
// the matching cars reading their value ids from the columns. When more
// than half the cars match, it walks the cars that do not match instead
// and subtracts their counts from each value's whole count (a bitmap's
// cardinality): the walk never covers more than half the cars.
//
// With a base (cross.go), set holds the base's cars that do not match, and
// a value's count is the base's cross count less those walked.
func (d *data) facets(fields []string, set walker, complement bool, base *crossBase) []yard.Facet {
	type counter struct {
		field  string
		col    *column // nil for the garage fields (slots)
		counts []uint64
	}
	cs := make([]*counter, len(fields))
	for i, f := range fields {
		c := &counter{field: f}
		switch f {
		case yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel:
			t := textIndex(f)
			c.col, c.counts = &d.cols.key[t].col, make([]uint64, len(d.cols.key[t].vals))
		case yard.FieldDoors:
			c.col, c.counts = &d.cols.num[0].col, make([]uint64, len(d.cols.num[0].vals))
		case yard.FieldYear:
			c.col, c.counts = &d.cols.num[1].col, make([]uint64, len(d.cols.num[1].vals))
		default:
			c.counts = make([]uint64, len(d.garages.slots))
		}
		cs[i] = c
	}
	var slots []uint64 // counts per garage slot, shared by the garage fields
	for _, c := range cs {
		if c.col == nil {
			slots = c.counts
		}
	}
	set(func(ps []uint32) {
		for _, c := range cs {
			if c.col == nil {
				continue
			}
			c.col.count(ps, c.counts)
		}
		if slots != nil {
			d.cols.garage.count(ps, slots)
		}
	})
	out := make([]yard.Facet, len(cs))
	for i, c := range cs {
		fc := yard.Facet{Field: c.field}
		if c.col != nil {
			fc.Values = make([]yard.FacetValue, 0, len(c.counts)) // a value per column id at most
		}
		add := func(v string, null bool, n uint64) {
			if n > 0 {
				fc.Values = append(fc.Values, yard.FacetValue{Value: v, Null: null, Count: int(n)})
			}
		}
		// count returns the matches of a value: walked, or its whole
		// count less the non-matches walked.
		count := func(walked uint64, g int, j uint32, all func() uint64) uint64 {
			if base != nil {
				return base.count(&d.cross, g, j) - walked
			}
			if complement {
				return all() - walked
			}
			return walked
		}
		switch c.field {
		case yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel:
			t := textIndex(c.field)
			for k, b := range d.values.text[t] {
				j := d.cols.key[t].ids[k]
				add(d.strs.all[k], false, count(c.counts[j], t, j, b.GetCardinality))
			}
		case yard.FieldDoors, yard.FieldYear:
			f, bms := 0, d.values.doors
			if c.field == yard.FieldYear {
				f, bms = 1, d.values.years
			}
			for v, b := range bms {
				j := d.cols.num[f].ids[v]
				add(strconv.FormatInt(v, 10), false, count(c.counts[j], 4+f, j, b.GetCardinality))
			}
		default:
			add("", true, count(slots[0], -1, 0, d.garages.noGarage.GetCardinality))
			keys := map[string]uint64{}
			for id, s := range d.garages.slotOf {
				n := count(slots[s], -1, 0, d.garages.slots[s].cars.len)
				switch c.field {
				case yard.FieldGarageName:
					keys[d.garages.slots[s].nameKey] += n
				case yard.FieldGarageState:
					keys[d.garages.slots[s].stateKey] += n
				default:
					keys[id] += n
				}
			}
			for v, n := range keys {
				add(v, false, n)
			}
		}
		if len(fc.Values) == 0 {
			fc.Values = nil // as the store answers
		}
		yard.SortFacet(&fc)
		out[i] = fc
	}
	return out
}

// walker calls fn with the positions of a set, in ascending batches.
type walker func(fn func(ps []uint32))

// bitmapWalker walks the positions of b.
func bitmapWalker(b *roaring.Bitmap) walker {
	return func(fn func([]uint32)) {
		if b == nil {
			return
		}
		buf := make([]uint32, 512)
		it := b.ManyIterator()
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			fn(buf[:n])
		}
	}
}
