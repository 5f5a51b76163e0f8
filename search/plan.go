package search

import (
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// list answers one car list; call with the read lock held.
func (d *data) list(q yard.Query, page yard.Page, facets []string) *yard.CarList {
	if l, ok := d.listDense(q, page, facets); ok {
		return l
	}
	alive := d.cars.alive.GetCardinality()
	incl, excl := d.parts(q)
	var ps []uint32
	var total uint64
	var set *roaring.Bitmap // the cars a facet walk visits
	complement := false
	var base *crossBase // when set, the walk's cars are base's cars that do not match
	if len(incl) == 0 && len(excl) > 0 && d.cars.inOrder && d.opts.page == "" && d.opts.match != "bitmaps" {
		// Only exclusions: the matches are the live cars less their
		// union u, which is never made. The exclusions' bitmaps hold
		// live cars only, so the total is a difference of sizes; the
		// page is the first live cars not in u (when most cars match,
		// about as many tests as the offset and the page); facets walk
		// u when it is the smaller side.
		u := union(excl)
		total = alive - u.GetCardinality()
		if total > alive/2 {
			ps = d.pageExcluding(u, total, page)
			if b, ok := d.cubeFacets(q, facets, total); ok { // none without facets
				return d.answer(ps, total, facets, bitmapWalker(nil), false, b)
			}
			if len(facets) > 0 {
				set, complement = u, true
				if d.opts.facets == "walk" {
					set, complement = roaring.AndNot(d.cars.alive, u), false
				}
				// The base's cars that do not match are those in u.
				if b, s := d.crossWalk(q, facets, total, func(b *roaring.Bitmap) *roaring.Bitmap { return roaring.And(b, u) }); b != nil {
					set, base = s, b
				}
			}
			return d.answer(ps, total, facets, bitmapWalker(set), complement, base)
		}
	}
	m := d.combine(incl, excl)
	total = m.GetCardinality()
	ps = d.page(m, total, page)
	if b, ok := d.cubeFacets(q, facets, total); ok { // none without facets
		return d.answer(ps, total, facets, bitmapWalker(nil), false, b)
	}
	if len(facets) > 0 {
		complement = total > alive/2
		if d.opts.facets != "" {
			complement = d.opts.facets == "complement"
		}
		set = m
		if b, s := d.crossWalk(q, facets, total, func(b *roaring.Bitmap) *roaring.Bitmap { return roaring.AndNot(b, m) }); b != nil {
			set, base = s, b
		} else if complement {
			set = roaring.AndNot(d.cars.alive, m) // not in place: see combine
		}
	}
	return d.answer(ps, total, facets, bitmapWalker(set), complement, base)
}

// answer makes the list of the cars at positions ps, with its total and
// the facets counted over set: the matches, or when complement the live
// cars that do not match, or when base is set the base's cars that do not
// match (cross.go).
func (d *data) answer(ps []uint32, total uint64, facets []string, set walker, complement bool, base *crossBase) *yard.CarList {
	l := &yard.CarList{Total: int(total), Cars: make([]*yard.Car, len(ps))}
	cars := make([]yard.Car, len(ps)) // one allocation for the page
	for i, p := range ps {
		d.carInto(&cars[i], p)
		l.Cars[i] = &cars[i]
	}
	if touch(cars) == 0xff {
		d.cars.touched.Add(1)
	}
	if len(facets) > 0 {
		l.Facets = d.facets(facets, set, complement, base)
	}
	return l
}

// pageExcluding returns the page's positions when the matches are the
// live cars not in u and positions are in id order.
func (d *data) pageExcluding(u *roaring.Bitmap, total uint64, page yard.Page) []uint32 {
	if page.Max <= 0 || uint64(page.Offset) >= total {
		return nil
	}
	want := min(uint64(page.Max), total-uint64(page.Offset))
	out := make([]uint32, 0, want)
	skip := page.Offset
	it := d.cars.alive.Iterator()
	for it.HasNext() && uint64(len(out)) < want {
		p := it.Next()
		if u.Contains(p) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *data) car(p uint32) *yard.Car {
	c := new(yard.Car)
	d.carInto(c, p)
	return c
}

// carInto sets c to the car at position p.
func (d *data) carInto(c *yard.Car, p uint32) {
	r := d.rec(p)
	*c = yard.Car{ID: d.cars.ids.at(p), Color: d.strs.all[r.text[0]], Type: d.strs.all[r.text[1]], Make: d.strs.all[r.text[2]], Model: d.strs.all[r.text[3]],
		Doors: int(r.doors), Year: int(r.year), CreatedAt: time.UnixMilli(r.created).UTC(), UpdatedAt: time.UnixMilli(r.updated).UTC()}
	if r.garage != 0 {
		c.Garage = d.garages.slots[r.garage].id
	}
}

// touch reads the first byte of each car's id and garage id and returns
// their sum, which the caller keeps (carTable.touched) so that the
// compiler keeps the loads. A page's cars lie far apart in memory, and
// the bytes of their ids are a cache miss each when the response is
// written; read here, one after another with nothing depending on them,
// the misses overlap instead of waiting in turn.
func touch(cars []yard.Car) byte {
	var sum byte
	for i := range cars {
		if id := cars[i].ID; id != "" {
			sum += id[0]
		}
		if g := cars[i].Garage; g != "" {
			sum += g[0]
		}
	}
	return sum
}

// page returns the positions of the page's cars in id order. When
// positions are in id order, the page is read straight off m from its
// offset-th member. Otherwise it either walks the positions in id order
// testing membership (cheap when matches are dense: about
// (offset+max)·n/total tests) or gathers every match and sorts them by id
// (cheap when they are few), whichever costs less.
func (d *data) page(m *roaring.Bitmap, total uint64, page yard.Page) []uint32 {
	if page.Max <= 0 || uint64(page.Offset) >= total {
		return nil
	}
	want := min(uint64(page.Max), total-uint64(page.Offset))
	out := make([]uint32, 0, want)
	if d.cars.inOrder && d.opts.page == "" {
		first, err := m.Select(uint32(page.Offset))
		if err != nil {
			return nil
		}
		it := m.Iterator()
		it.AdvanceIfNeeded(first)
		for it.HasNext() && uint64(len(out)) < want {
			out = append(out, it.Next())
		}
		return out
	}
	n := uint64(len(d.cars.order))
	need := uint64(page.Offset) + want
	walk := need * n / total
	gather := total * uint64(bits.Len64(total)+1) * 4 // a sort compares strings
	if d.opts.page != "" {
		walk, gather = 0, 0
		if d.opts.page == "gather" {
			walk = 1
		}
	}
	if walk <= gather {
		skip := page.Offset
		for _, p := range d.cars.order {
			if !m.Contains(p) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if out = append(out, p); uint64(len(out)) == want {
				break
			}
		}
		return out
	}
	all := m.ToArray()
	slices.SortFunc(all, func(a, b uint32) int { return strings.Compare(d.cars.ids.at(a), d.cars.ids.at(b)) })
	return append(out, all[page.Offset:uint64(page.Offset)+want]...)
}
