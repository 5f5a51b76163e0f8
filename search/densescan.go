package search

import (
	"math/bits"
	"sync"

	"github.com/yard-api/yard"
)

// The pass over the twins (dense.go): a denseQuery's words, a block at a
// time, for a page and its total (scan), for a count alone once the page
// is full (count, over the vector counts of popcount_amd64.go), or for
// the positions a facet walk visits (walker).

// denseBlock is how many words a pass works on at a time: small enough
// to stay in the first-level cache between the twins it reads.
const denseBlock = 64

// block puts into blk the words of dq's matches from word base on (alive
// holds the live cars; or is scratch of blk's length). A value's twin
// holds live cars only, so the matches of a query with a term lie within
// its first term: the live cars' twin is read only for a query of
// exclusions only (at 10M cars each twin read is 1.25 MB a query).
func (dq *denseQuery) block(alive *bitset, base int, blk, or []uint64) {
	if len(dq.terms) == 0 {
		copy(blk, alive.w[base:])
	}
	for i, term := range dq.terms {
		switch {
		case len(term) == 1 && i == 0:
			copyWords(blk, term[0], base)
		case len(term) == 1:
			andWords(blk, term[0], base)
		default:
			dst := or
			if i == 0 {
				dst = blk
			}
			clear(dst)
			for _, t := range term {
				orWords(dst, t, base)
			}
			if i > 0 {
				for j := range blk {
					blk[j] &= or[j]
				}
			}
		}
	}
	for _, t := range dq.excl {
		andNotWords(blk, t, base)
	}
}

// scan runs dq over the live cars (alive's twin): it returns the total
// and the positions of the page (positions are in id order). Unless
// count is set it stops once the page is full, and the total it returns
// is only of the cars up to there.
func (dq *denseQuery) scan(alive *bitset, page yard.Page, count bool) (total uint64, ps []uint32) {
	n := len(alive.w)
	if page.Max > 0 {
		ps = make([]uint32, 0, page.Max)
	}
	skip := uint64(page.Offset)
	var buf, or [denseBlock]uint64
	var orc *[countChunk]uint64
	for base := 0; base < n; base += denseBlock {
		if len(ps) >= page.Max {
			if !count {
				break
			}
			// The page is full: what is left is counting, in one pass
			// over the operands where it can, countChunk words a call,
			// and without the test of each word below (a mispredicted
			// branch on one word in two where matches are sparse).
			if orc == nil {
				orc = countPool.Get().(*[countChunk]uint64)
			}
			span := min(countChunk, n-base)
			if c, ok := dq.count(alive, base, span, orc[:span]); ok {
				total += c
				base += span - denseBlock
				continue
			}
			blk := buf[:min(denseBlock, n-base)]
			dq.block(alive, base, blk, or[:len(blk)])
			for _, w := range blk {
				total += uint64(bits.OnesCount64(w))
			}
			continue
		}
		blk := buf[:min(denseBlock, n-base)]
		dq.block(alive, base, blk, or[:len(blk)])
		for i, w := range blk {
			if w == 0 {
				continue
			}
			c := uint64(bits.OnesCount64(w))
			if len(ps) < page.Max {
				if skip >= c {
					skip -= c
				} else {
					for w != 0 && len(ps) < page.Max {
						b := w & -w
						w ^= b
						if skip > 0 {
							skip--
							continue
						}
						ps = append(ps, uint32((base+i)*64+bits.TrailingZeros64(b)))
					}
				}
			}
			total += c
		}
	}
	if orc != nil {
		countPool.Put(orc)
	}
	return total, ps
}

// countChunk is how many words a count once the page is full reads a
// call: the vector counts (popcount_amd64.go) are quick enough that a
// call's set-up matters at fewer.
const countChunk = 1024

// countPool holds the scratch of counts (a term of several values is
// ORed into it): 8 KB, too much for a request's stack.
var countPool = sync.Pool{New: func() any { return new([countChunk]uint64) }}

// walkPool holds the position buffers of walkers.
var walkPool = sync.Pool{New: func() any { return new([1024]uint32) }}

// walker returns a walker (for facets) of the matches; or when complement
// of the live cars that do not match; or when from is set of the cars in
// one of from that do not match (a cross-count base, cross.go).
func (dq *denseQuery) walker(alive *bitset, complement bool, from []*bitset) walker {
	return func(fn func([]uint32)) {
		n := len(alive.w)
		var buf, or, fromBlk [denseBlock]uint64
		// ps never passes len(ps)-64 before a word, and the mask spares
		// the bounds check. fn may keep no hold of it, so it comes from a
		// pool (it would escape: 4 KB a walk).
		pp := walkPool.Get().(*[1024]uint32)
		defer walkPool.Put(pp)
		ps := pp
		k := 0
		for base := 0; base < n; base += denseBlock {
			blk := buf[:min(denseBlock, n-base)]
			dq.block(alive, base, blk, or[:len(blk)])
			switch {
			case from != nil:
				f := fromBlk[:len(blk)]
				clear(f)
				for _, t := range from {
					orWords(f, t, base)
				}
				for i := range blk {
					blk[i] = f[i] &^ blk[i]
				}
			case complement:
				for i := range blk {
					blk[i] = alive.w[base+i] &^ blk[i]
				}
			}
			for i, w := range blk {
				if w == 0 {
					continue
				}
				at := uint32((base + i) * 64)
				for w != 0 {
					ps[k&(len(ps)-1)] = at + uint32(bits.TrailingZeros64(w))
					k++
					w &= w - 1
				}
				if k > len(ps)-64 {
					fn(ps[:k])
					k = 0
				}
			}
		}
		if k > 0 {
			fn(ps[:k])
		}
	}
}

// count returns the matches in the n words from word base on, as block
// and a count of its words would, but reading each operand once and
// storing nothing (or is scratch of n words): the first term's words ANDed
// with up to three other terms' less up to three exclusions', one term at
// most of several values. false when dq has more, or an exclusion's twin
// ends before the words asked for (block then answers).
func (dq *denseQuery) count(alive *bitset, base, n int, or []uint64) (uint64, bool) {
	if len(dq.terms) > 4 || len(dq.excl) > 3 {
		return 0, false
	}
	ors := 0
	for _, term := range dq.terms {
		if len(term) > 1 {
			ors++
		} else {
			// Past the end of a term's only twin its words are 0, and
			// so are the matches.
			n = min(n, len(term[0].w)-base)
		}
	}
	if ors > 1 {
		return 0, false
	}
	if n <= 0 {
		return 0, true
	}
	for _, t := range dq.excl {
		if base+n > len(t.w) {
			return 0, false
		}
	}
	var ops [7][]uint64 // the first, three ANDed, three excluded
	k := 0
	if len(dq.terms) == 0 {
		ops[0], k = alive.w[base:base+n], 1
	}
	for _, term := range dq.terms {
		if len(term) == 1 {
			ops[k] = term[0].w[base : base+n]
		} else {
			or = or[:n]
			clear(or)
			for _, t := range term {
				orWords(or, t, base)
			}
			ops[k] = or
		}
		k++
	}
	for ; k < 4; k++ {
		ops[k] = onesBlock[:n]
	}
	for i := range 3 {
		if i < len(dq.excl) {
			ops[4+i] = dq.excl[i].w[base : base+n]
		} else {
			ops[4+i] = zerosBlock[:n]
		}
	}
	if len(dq.terms) <= 2 && len(dq.excl) <= 1 {
		return countAndNot(ops[0], ops[1], ops[4]), true
	}
	return countAnd3Not3(&ops), true
}

var onesBlock = func() (b [countChunk]uint64) {
	for i := range b {
		b[i] = ^uint64(0)
	}
	return b
}()

var zerosBlock [countChunk]uint64

// copyWords, andWords, orWords and andNotWords combine blk with t's words
// from base (words past t's end are 0).
func copyWords(blk []uint64, t *bitset, base int) {
	if base+len(blk) <= len(t.w) {
		copy(blk, t.w[base:])
		return
	}
	for i := range blk {
		blk[i] = t.word(base + i)
	}
}

func andWords(blk []uint64, t *bitset, base int) {
	if base+len(blk) <= len(t.w) {
		andInto(blk, t.w[base:base+len(blk)])
		return
	}
	for i := range blk {
		blk[i] &= t.word(base + i)
	}
}

func orWords(blk []uint64, t *bitset, base int) {
	if base+len(blk) <= len(t.w) {
		orInto(blk, t.w[base:base+len(blk)])
		return
	}
	for i := range blk {
		blk[i] |= t.word(base + i)
	}
}

func andNotWords(blk []uint64, t *bitset, base int) {
	if base+len(blk) <= len(t.w) {
		andNotInto(blk, t.w[base:base+len(blk)])
		return
	}
	for i := range blk {
		blk[i] &^= t.word(base + i)
	}
}
