package search

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
)

// TestDenseCountsMatchBitmaps holds the pass over the twins, whose counting
// takes several routes (block by block, or one pass over up to three terms
// and three exclusions, with a term of several values), against bitmaps
// made and walked, over many blocks of positions, live cars with holes
// and twins shorter than the live cars' (made before cars were added).
func TestDenseCountsMatchBitmaps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	d := syntheticIndex(100_000, 1000) // past a countChunk of words after the first block
	now := time.Now()
	query := func() string {
		var pairs []string
		oneOrMore := func(field string, vals func() string) {
			v := vals()
			for r.IntN(3) == 0 {
				v += "," + vals()
			}
			pairs = append(pairs, field+"="+v)
		}
		color := func() string { return benchColors[r.IntN(len(benchColors))] }
		mk := func() string { return "Make" + strconv.Itoa(r.IntN(30)) }
		typ := func() string { return benchTypes[r.IntN(len(benchTypes))] }
		state := func() string { return benchStates[r.IntN(len(benchStates))] }
		for _, f := range []struct {
			field string
			vals  func() string
		}{{"color", color}, {"make", mk}, {"type", typ}, {"q.garage.state.eq", state}} {
			switch r.IntN(4) {
			case 0:
				if f.field == "q.garage.state.eq" {
					pairs = append(pairs, "garage.state="+f.vals())
				} else {
					oneOrMore(f.field, f.vals)
				}
			case 1:
				pairs = append(pairs, strings.TrimPrefix(strings.TrimSuffix(f.field, ".eq"), "q.")+"=!"+f.vals())
			}
		}
		if r.IntN(2) == 0 {
			pairs = append(pairs, fmt.Sprintf("q.year.ge=%d", 1995+r.IntN(31)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, fmt.Sprintf("q.year.le=%d", 1995+r.IntN(31)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, fmt.Sprintf("doors=!%d", 2+r.IntN(4)))
		}
		return strings.Join(append(pairs, fmt.Sprintf("offset=%d&max=%d", r.IntN(300), r.IntN(21))), "&")
	}
	next := 100_000
	for round := range 4 {
		for range 300 {
			raw := query()
			q, page, facets, err := yard.ParseCarListQuery(raw)
			if err != nil {
				t.Fatal(err)
			}
			d.opts.match = "bitmaps"
			want := d.list(q, page, facets)
			d.opts.match = "dense"
			if got := d.list(q, page, facets); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, %s:\n got total %d, %d cars\nwant total %d, %d cars", round, raw, got.Total, len(got.Cars), want.Total, len(want.Cars))
			}
		}
		// Holes in the live cars, and cars past the end of the twins
		// made so far (a rare colour, so most twins are not extended).
		for range 500 {
			d.deleteCar(fmt.Sprintf("car-%07d", 1+r.IntN(next)))
		}
		for range 3000 {
			next++
			d.putCar(&yard.Car{ID: fmt.Sprintf("car-%07d", next), Color: "mauve", Type: "van", Make: "Make0", Model: "Make0-1",
				Doors: 3, Year: 2001, CreatedAt: now, UpdatedAt: now}, false)
		}
	}
}

// TestWalkerPositions holds a walk's positions to the bits of its set,
// over blocks of every density, and sets of every length.
func TestWalkerPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 20 {
		n := 1 + r.IntN(40*64*denseBlock)
		alive, term := &bitset{}, &bitset{}
		var want []uint32
		density := 0.0
		for p := range uint32(n) {
			if p%(64*denseBlock) == 0 {
				density = []float64{0, 0.005, 0.05, 0.2, 0.6, 1}[r.IntN(6)]
			}
			alive.set(p)
			if r.Float64() < density {
				term.set(p)
				want = append(want, p)
			}
		}
		dq := denseQuery{terms: [][]*bitset{{term}}}
		var got []uint32
		dq.walker(alive, false, nil)(func(ps []uint32) { got = append(got, ps...) })
		if !slices.Equal(got, want) {
			t.Fatalf("round %d, %d positions: walked %d positions, want %d (or others)", round, n, len(got), len(want))
		}
	}
}
