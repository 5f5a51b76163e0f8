package search

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// eachPart walks q as the index reads it, filter by filter: for each
// filter asking for values (or null, on a garage path), in gets the
// bitmaps of those values (the cars in no garage for null); out gets the
// bitmap of each value excluded (the cars in no garage for not null), and
// ranged each filter with bounds. Values no live car holds have no bitmap
// and are left out. own is false when a bitmap was made for this query
// (valueBitmap). parts and dense (dense.go) read queries through it.
func (d *data) eachPart(q yard.Query, in func(any []*roaring.Bitmap, own bool), out func(b *roaring.Bitmap, own bool), ranged func(f yard.Filter)) {
	held := func(b *roaring.Bitmap) bool { return b != nil && !b.IsEmpty() }
	for _, f := range q.Filters {
		if len(f.In) > 0 || f.Null {
			var any []*roaring.Bitmap
			allOwn := true
			for _, v := range f.In {
				if b, own := d.valueBitmap(f.Field, v); held(b) {
					any = append(any, b)
					allOwn = allOwn && own
				}
			}
			if f.Null && isGarageField(f.Field) && held(d.garages.noGarage) {
				any = append(any, d.garages.noGarage)
			}
			in(any, allOwn)
		}
		for _, v := range f.NotIn {
			if b, own := d.valueBitmap(f.Field, v); held(b) {
				out(b, own)
			}
		}
		if f.NotNull && isGarageField(f.Field) && held(d.garages.noGarage) {
			out(d.garages.noGarage, true)
		}
		if len(f.Ranges) > 0 {
			ranged(f)
		}
	}
}

// parts returns the bitmaps a query's matches are the intersection of
// (incl) and those it removes from it (excl); none is to be changed.
func (d *data) parts(q yard.Query) (incl, excl []*roaring.Bitmap) {
	d.eachPart(q,
		func(any []*roaring.Bitmap, _ bool) { incl = append(incl, union(any)) },
		func(b *roaring.Bitmap, _ bool) { excl = append(excl, b) },
		func(f yard.Filter) {
			in, out := d.rangeBitmaps(f)
			if in != nil {
				incl = append(incl, in)
			}
			if out != nil {
				excl = append(excl, out)
			}
		})
	return incl, excl
}

// combine returns the positions of the cars matching a query from its
// parts: the intersection of incl (every live car for none), the union
// over each filter of the bitmaps of the values asked for, less the union
// of excl, those excluded. The stored bitmaps are never changed; the
// result may be one of them (a query of one value), so the caller must
// not change it either.
func (d *data) combine(incl, excl []*roaring.Bitmap) *roaring.Bitmap {
	var m *roaring.Bitmap
	switch len(incl) {
	case 0, 1:
		// One bitmap less the union of the exclusions, in one operation
		// that makes a new bitmap (the live cars' full containers are
		// runs, as roaring makes a full container one, and taking cars
		// out of a run in place is slow); with no exclusion, the bitmap
		// itself, not a copy.
		base := d.cars.alive
		if len(incl) == 1 {
			base = incl[0]
		}
		if len(excl) == 0 {
			return base
		}
		return roaring.AndNot(base, union(excl))
	default:
		// Smallest first: each AND then works on less.
		slices.SortFunc(incl, func(a, b *roaring.Bitmap) int { return cmp.Compare(a.GetCardinality(), b.GetCardinality()) })
		m = roaring.FastAnd(incl...)
	}
	for _, b := range excl {
		if m.IsEmpty() {
			break
		}
		m.AndNot(b)
	}
	return m
}

func isGarageField(f string) bool { return strings.HasPrefix(f, "garage.") }

// union returns the union of bs; the result may be one of bs, so it must
// not be changed.
func union(bs []*roaring.Bitmap) *roaring.Bitmap {
	switch len(bs) {
	case 0:
		return roaring.New()
	case 1:
		return bs[0]
	}
	return roaring.FastOr(bs...)
}

// valueBitmap returns the cars whose field holds value v (in its matching
// form, as the parser gives it), or nil for none; own says the bitmap is
// the index's own, not one made for this query from a small carSet (only
// the index's own get twins, dense.go). The caller changes neither.
func (d *data) valueBitmap(field, v string) (b *roaring.Bitmap, own bool) {
	switch field {
	case yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel:
		if k, ok := d.strs.index[v]; ok {
			return d.values.text[textIndex(field)][k], true
		}
	case yard.FieldDoors, yard.FieldYear:
		n, ok := parseInt(v)
		switch {
		case !ok:
		case field == yard.FieldDoors:
			return d.values.doors[n], true
		default:
			return d.values.years[n], true
		}
	case yard.FieldGarageID:
		if s, ok := d.garages.slotOf[v]; ok {
			return d.garages.slots[s].cars.bitmap()
		}
	case yard.FieldGarageName:
		if s := d.garages.names[v]; s != nil {
			return s.bitmap()
		}
	case yard.FieldGarageState:
		return d.garages.states[v], true
	}
	return nil, true
}

func textIndex(field string) int {
	for i, f := range textFields {
		if f == field {
			return i
		}
	}
	return -1
}

func parseInt(s string) (int64, bool) {
	var n int64
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// cumulative is a numeric field's range encoding: upTo[i] holds the cars
// whose value is at most vals[i] (vals sorted).
type cumulative struct {
	vals []int64
	upTo []*roaring.Bitmap
}

// cumulativeOf returns the range encoding of numeric field f (0 doors,
// 1 year), building it after a change. Readers share the read lock, so
// cumulatives.mu makes one of them build it.
func (d *data) cumulativeOf(f int) *cumulative {
	d.cum.mu.Lock()
	defer d.cum.mu.Unlock()
	if c := d.cum.of[f]; c != nil {
		return c
	}
	m := d.values.doors
	if f == 1 {
		m = d.values.years
	}
	c := &cumulative{}
	for v := range m {
		c.vals = append(c.vals, v)
	}
	slices.Sort(c.vals)
	acc := roaring.New()
	for _, v := range c.vals {
		acc = roaring.Or(acc, m[v])
		c.upTo = append(c.upTo, acc)
	}
	d.cum.of[f] = c
	return c
}

// rangeBitmaps returns the cars whose number lies within every bound of
// f as a bitmap to include (nil for every car), less one to exclude (nil
// for none): with the bounds as [lo, hi], the cars up to hi less the cars
// below lo.
func (d *data) rangeBitmaps(f yard.Filter) (in, out *roaring.Bitmap) {
	field, lo, hi, empty := rangeOf(f)
	if empty {
		return roaring.New(), nil
	}
	c := d.cumulativeOf(field)
	iLo, iHi, empty := valueSpan(c.vals, lo, hi)
	if empty {
		return roaring.New(), nil
	}
	if iLo >= 0 {
		out = c.upTo[iLo]
	}
	if iHi == len(c.vals)-1 {
		// No upper bound: every car is up to the greatest value. Leaving
		// it out also keeps the match off that bitmap's full containers,
		// which roaring holds as runs; taking a run from a run is slow.
		return nil, out
	}
	return c.upTo[iHi], out
}

// rangeOf returns the numeric field of f (0 doors, 1 year) and f's bounds
// as [lo, hi]; empty when no number fits them (or f is on another field).
func rangeOf(f yard.Filter) (field int, lo, hi int64, empty bool) {
	switch f.Field {
	case yard.FieldDoors:
		field = 0
	case yard.FieldYear:
		field = 1
	default:
		return 0, 0, 0, true
	}
	lo, hi = math.MinInt64, math.MaxInt64
	for _, r := range f.Ranges {
		switch r.Op {
		case yard.OpLt:
			if r.Value == math.MinInt64 {
				return field, 0, 0, true
			}
			hi = min(hi, r.Value-1)
		case yard.OpLe:
			hi = min(hi, r.Value)
		case yard.OpGt:
			if r.Value == math.MaxInt64 {
				return field, 0, 0, true
			}
			lo = max(lo, r.Value+1)
		case yard.OpGe:
			lo = max(lo, r.Value)
		}
	}
	return field, lo, hi, lo > hi
}

// valueSpan returns, in the sorted values vals, iLo (the last value below
// lo, -1 for none) and iHi (the last value up to hi); empty when no value
// lies in [lo, hi].
func valueSpan(vals []int64, lo, hi int64) (iLo, iHi int, empty bool) {
	iHi, found := slices.BinarySearch(vals, hi)
	if !found {
		iHi--
	}
	iLo, _ = slices.BinarySearch(vals, lo)
	iLo--
	return iLo, iHi, iHi < 0 || iHi <= iLo || lo > hi
}
