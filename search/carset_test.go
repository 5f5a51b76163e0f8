package search

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCarSet holds carSets against plain sets under random adds, removes,
// unions and differences, with bounds small enough that sets go from
// arrays to bitmaps and back, some of them with twins.
func TestCarSet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := newData(options{setBig: 16, setSmall: 8})
	sets := make([]carSet, 6)
	want := make([]map[uint32]bool, len(sets))
	for i := range want {
		want[i] = map[uint32]bool{}
	}
	var sawBig, sawShrunk, sawMixed bool
	for step := range 20000 {
		i, j := r.IntN(len(sets)), r.IntN(len(sets))
		s, from := &sets[i], &sets[j]
		wasBig := s.big != nil
		switch k := r.IntN(20); {
		case k < 10:
			p := uint32(r.IntN(200))
			d.setAdd(s, p)
			want[i][p] = true
		case k < 18:
			p := uint32(r.IntN(200))
			d.setRemove(s, p)
			delete(want[i], p)
		case k == 18 && i != j:
			sawMixed = sawMixed || (s.big == nil) != (from.big == nil)
			d.setOr(s, from)
			for p := range want[j] {
				want[i][p] = true
			}
		case i != j:
			sawMixed = sawMixed || (s.big == nil) != (from.big == nil)
			d.setAndNot(s, from)
			for p := range want[j] {
				delete(want[i], p)
			}
		}
		sawBig = sawBig || s.big != nil
		sawShrunk = sawShrunk || wasBig && s.big == nil
		if s.big != nil && r.IntN(50) == 0 {
			d.opts.match = "dense" // a twin, kept by every write after
			d.twinOf(s.big)
			d.opts.match = ""
		}
		var wantPs []uint32
		for p := range want[i] {
			wantPs = append(wantPs, p)
		}
		slices.Sort(wantPs)
		b, own := s.bitmap()
		if got := b.ToArray(); !slices.Equal(got, wantPs) || s.len() != uint64(len(wantPs)) || own != (s.big != nil) {
			t.Fatalf("step %d: set %d holds %v (len %d, own %v), want %v", step, i, got, s.len(), own, wantPs)
		}
		if s.big == nil && !slices.IsSorted(s.ps) {
			t.Fatalf("step %d: array not sorted: %v", step, s.ps)
		}
		if s.big != nil {
			if tw := d.tw.of[s.big]; tw != nil {
				for p := range uint32(200) {
					if tw.word(int(p>>6))&(1<<(p&63)) != 0 != want[i][p] {
						t.Fatalf("step %d: twin of set %d wrong at %d", step, i, p)
					}
				}
			}
		}
	}
	if !sawBig || !sawShrunk || !sawMixed {
		t.Fatalf("not every path taken: bitmap %v, back to an array %v, mixed %v", sawBig, sawShrunk, sawMixed)
	}
	// A set back under carSetSmall drops its twin with its bitmap.
	for b := range d.tw.of {
		held := false
		for i := range sets {
			held = held || sets[i].big == b
		}
		if !held {
			t.Fatal("a twin outlives its set's bitmap")
		}
	}
}
