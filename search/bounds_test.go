package search

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
)

// TestBoundsKeepAnswers holds the index past its bounds: a colour of 600
// values (past maxCrossValues, so it has no cross counts, and more common
// values than maxTwins once forced), years over 126 values (past
// maxDenseValues, so year ranges have no dense encoding) and 300 models.
// Every strategy must give the answer of the plainest one (bitmaps made
// and walked), which the tests against SQL hold to the store.
func TestBoundsKeepAnswers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := newData(defaultOptions())
	for g := range 40 {
		d.putGarage(&yard.Garage{ID: fmt.Sprintf("g%02d", g), Name: fmt.Sprintf("Lot %d", g%7), State: []string{"CA", "NY", "TX"}[g%3]})
	}
	color := func() string {
		if r.IntN(2) == 0 {
			return "red"
		}
		return fmt.Sprintf("c%03d", r.IntN(600))
	}
	now := time.Now()
	for i := range 6000 {
		c := &yard.Car{ID: fmt.Sprintf("car-%05d", i), Color: color(), Type: []string{"sedan", "coupe", "suv", "van", "pickup", "wagon"}[r.IntN(6)],
			Doors: 2 + r.IntN(4), Make: fmt.Sprintf("m%d", r.IntN(10)), Model: fmt.Sprintf("x%03d", r.IntN(300)), Year: 1900 + r.IntN(126),
			CreatedAt: now, UpdatedAt: now}
		if r.IntN(10) > 0 {
			c.Garage = fmt.Sprintf("g%02d", r.IntN(40))
		}
		d.putCar(c, true)
	}
	d.sortOrder()
	if !d.cross.off[0] || d.cross.off[1] {
		t.Fatalf("cross counts: colour off %v (want true), type off %v (want false)", d.cross.off[0], d.cross.off[1])
	}
	query := func() string {
		var pairs []string
		if r.IntN(2) == 0 {
			pairs = append(pairs, "color="+color())
		}
		if r.IntN(2) == 0 {
			pairs = append(pairs, "type="+[]string{"sedan", "coupe", "suv"}[r.IntN(3)])
		}
		if r.IntN(2) == 0 {
			pairs = append(pairs, fmt.Sprintf("q.year.ge=%d", 1900+r.IntN(130)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, fmt.Sprintf("model=!x%03d", r.IntN(300)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, fmt.Sprintf("doors=!%d", 2+r.IntN(4)))
		}
		if r.IntN(4) == 0 {
			pairs = append(pairs, "make=m"+fmt.Sprint(r.IntN(10)))
		}
		pairs = append(pairs, fmt.Sprintf("offset=%d&max=5", r.IntN(40)))
		pairs = append(pairs, "facets="+[]string{"color,type", "type,year,doors", "model,make", "type,make,year"}[r.IntN(4)])
		return strings.Join(pairs, "&")
	}
	for range 300 {
		raw := query()
		q, page, facets, err := yard.ParseCarListQuery(raw)
		if err != nil {
			t.Fatal(err)
		}
		d.opts.facets, d.opts.page, d.opts.match = "walk", "", "bitmaps"
		want := d.list(q, page, facets)
		for _, how := range [][2]string{{"", ""}, {"cross", ""}, {"complement", ""}, {"", "dense"}, {"cross", "dense"}, {"complement", "dense"}, {"", "roaring"}, {"cube", ""}, {"cube", "dense"}} {
			d.opts.facets, d.opts.match = how[0], how[1]
			if got := d.list(q, page, facets); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s with facets %q, match %q:\n got %+v\nwant %+v", raw, how[0], how[1], got, want)
			}
		}
	}
	if n := len(d.tw.of); n > maxTwins {
		t.Errorf("%d twins, more than maxTwins (%d)", n, maxTwins)
	}
}
