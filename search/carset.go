package search

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// carSet holds the positions of the cars of one garage, or of one garage
// name: a sorted array while the set is small, a roaring bitmap once it
// is large. A garage holds few cars spread over every position, so in
// roaring each of its cars is a container of its own once the index has
// more than a few million positions (some 60 bytes and two objects for
// the collector per car, 860 MiB for the garages and names of 10M cars);
// an array costs 4 bytes a car. A set past options.setBig positions
// becomes a bitmap, which queries then use (and may twin, dense.go) as
// they use a colour's; a bitmap back under options.setSmall becomes an
// array again.
type carSet struct {
	ps  []uint32        // sorted positions, while big is nil
	big *roaring.Bitmap // the positions, for a large set
}

// defaultSetBig and defaultSetSmall bound a set's array (options.setBig,
// setSmall): past defaultSetBig positions it becomes a bitmap (an array
// of 4,096 is 16 KB; spread over 10M positions, a roaring bitmap of as
// many costs about the same), and under defaultSetSmall an array again.
const (
	defaultSetBig   = 4096
	defaultSetSmall = 2048
)

func (s *carSet) len() uint64 {
	if s.big != nil {
		return s.big.GetCardinality()
	}
	return uint64(len(s.ps))
}

// bitmap returns the set as a bitmap for a query, and whether it is the
// index's own (a large set's) rather than made for this query. The
// caller changes neither; only the index's own may get a twin.
func (s *carSet) bitmap() (b *roaring.Bitmap, own bool) {
	if s.big != nil {
		return s.big, true
	}
	return roaring.BitmapOf(s.ps...), false
}

// each calls fn with the set's positions, in ascending batches.
func (s *carSet) each(fn func(ps []uint32)) {
	if s.big == nil {
		if len(s.ps) > 0 {
			fn(s.ps)
		}
		return
	}
	bitmapWalker(s.big)(fn)
}

// compact gives a small set's array its length as capacity (after the
// build, whose appends leave up to half of each array unused).
func (s *carSet) compact() {
	if s.big == nil && cap(s.ps) > len(s.ps) {
		s.ps = slices.Clone(s.ps)
		if len(s.ps) == 0 {
			s.ps = nil
		}
	}
}

// setAdd adds position p to s (and to the twin of its bitmap).
func (d *data) setAdd(s *carSet, p uint32) {
	if s.big != nil {
		d.addTo(s.big, p)
		return
	}
	if n := len(s.ps); n == 0 || s.ps[n-1] < p {
		s.ps = append(s.ps, p) // the build adds positions in order
	} else if i, found := slices.BinarySearch(s.ps, p); !found {
		s.ps = slices.Insert(s.ps, i, p)
	}
	d.setGrown(s)
}

// setRemove removes position p from s.
func (d *data) setRemove(s *carSet, p uint32) {
	if s.big != nil {
		d.removeAt(s.big, p)
		d.setShrunk(s)
		return
	}
	if i, found := slices.BinarySearch(s.ps, p); found {
		s.ps = slices.Delete(s.ps, i, i+1)
	}
}

// setOr adds the positions of from to s; setAndNot removes them.
func (d *data) setOr(s, from *carSet) {
	if s.big == nil && from.big == nil {
		s.ps = mergeSorted(s.ps, from.ps)
		d.setGrown(s)
		return
	}
	if s.big == nil {
		s.big, s.ps = roaring.BitmapOf(s.ps...), nil
	}
	if from.big != nil {
		d.orInto(s.big, from.big)
		return
	}
	for _, p := range from.ps {
		d.addTo(s.big, p)
	}
}

func (d *data) setAndNot(s, from *carSet) {
	switch {
	case s.big != nil:
		from.each(func(ps []uint32) {
			for _, p := range ps {
				d.removeAt(s.big, p)
			}
		})
		d.setShrunk(s)
	case from.big != nil:
		s.ps = slices.DeleteFunc(s.ps, from.big.Contains)
	default:
		s.ps = subtractSorted(s.ps, from.ps)
	}
}

// setGrown makes a set past setBig positions a bitmap.
func (d *data) setGrown(s *carSet) {
	if s.big == nil && len(s.ps) > d.opts.setBig {
		s.big, s.ps = roaring.BitmapOf(s.ps...), nil
	}
}

// setShrunk makes a bitmap under setSmall positions an array again,
// dropping its twin.
func (d *data) setShrunk(s *carSet) {
	if s.big != nil && s.big.GetCardinality() < uint64(d.opts.setSmall) {
		d.forget(s.big)
		s.ps, s.big = s.big.ToArray(), nil
	}
}

// mergeSorted returns the union of sorted a and b (into a new array).
func mergeSorted(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// subtractSorted returns a less b, both sorted, in a's array.
func subtractSorted(a, b []uint32) []uint32 {
	out, j := a[:0], 0
	for _, p := range a {
		for j < len(b) && b[j] < p {
			j++
		}
		if j < len(b) && b[j] == p {
			continue
		}
		out = append(out, p)
	}
	return out
}
