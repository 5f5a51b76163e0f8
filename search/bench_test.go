package search

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
)

// The benchmarks below hold a synthetic index shaped like the
// scripts/gencars data set (1M cars in 10k garages) and ask it random
// queries shaped like the carsearch group's of bench/, never one twice.
//
//	go test ./search -run '^$' -bench . -benchtime 3000x -cpuprofile /tmp/search.prof

var (
	benchColors = []string{"red", "blue", "black", "white", "silver", "grey", "green", "yellow", "orange", "brown", "beige", "purple"}
	benchTypes  = []string{"sedan", "coupe", "hatchback", "wagon", "suv", "pickup"}
	benchStates = []string{"AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
		"LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK",
		"OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"}
)

// benchIndex is the index the query benchmarks share, built once.
var benchIndex = sync.OnceValue(func() *data { return syntheticIndex(1_000_000, 10_000) })

// syntheticIndex builds an index of cars in garages shaped like the
// scripts/gencars data set, from a fixed seed.
func syntheticIndex(cars, garages int) *data {
	r := rand.New(rand.NewPCG(1, 2))
	d := newData(defaultOptions())
	for g := 1; g <= garages; g++ {
		d.putGarage(&yard.Garage{ID: fmt.Sprintf("garage-%05d", g), Name: fmt.Sprintf("Street Garage %d", g), State: benchStates[r.IntN(len(benchStates))]})
	}
	now := time.Now()
	for i := 1; i <= cars; i++ {
		c := &yard.Car{ID: fmt.Sprintf("car-%07d", i), Color: benchColors[r.IntN(12)], Type: benchTypes[r.IntN(6)], Doors: 2 + r.IntN(4),
			Make: "Make" + strconv.Itoa(r.IntN(30)), Year: 1995 + r.IntN(31), CreatedAt: now, UpdatedAt: now}
		c.Model = c.Make + "-" + strconv.Itoa(r.IntN(10))
		if r.IntN(20) > 0 {
			c.Garage = fmt.Sprintf("garage-%05d", 1+r.IntN(garages))
		}
		d.putCar(c, true)
	}
	d.sortOrder()
	d.runOptimize()
	return d
}

var indexCars = flag.Int("index-cars", 1_000_000, "cars in BenchmarkIndexHeap's index (a hundred to a garage)")

// BenchmarkIndexHeap builds a synthetic index of -index-cars cars and
// reports its live heap (after a collection) and the time the build took.
// The 10M figure of docs/benchmarks.md:
//
//	go test ./search -run '^$' -bench IndexHeap -benchtime 1x -index-cars 10000000
func BenchmarkIndexHeap(b *testing.B) {
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		d := syntheticIndex(*indexCars, max(1, *indexCars/100))
		took := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric(heap/(1<<20), "heap-MiB")
		b.ReportMetric(heap/float64(*indexCars), "heap-B/car")
		b.ReportMetric(took.Seconds(), "build-s")
		runtime.KeepAlive(d)
	}
}

// benchQuery draws the mix of randomCarQuery (bench/carquery_test.go)
// over this index's synthetic values.
func benchQuery(r *rand.Rand) string {
	var pairs []string
	for len(pairs) == 0 {
		if r.IntN(2) == 0 {
			c := benchColors[r.IntN(12)]
			if r.IntN(3) == 0 {
				c += "," + benchColors[r.IntN(12)]
			}
			pairs = append(pairs, "color="+c)
		}
		if r.IntN(2) == 0 {
			neg := ""
			if r.IntN(3) == 0 {
				neg = "!"
			}
			pairs = append(pairs, "make="+neg+"Make"+strconv.Itoa(r.IntN(30)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "type="+benchTypes[r.IntN(6)])
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "q.year.ge="+strconv.Itoa(1995+r.IntN(31)))
		}
		if r.IntN(4) == 0 {
			pairs = append(pairs, "doors=!"+strconv.Itoa(2+r.IntN(4)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "q.garage.state.eq="+benchStates[r.IntN(len(benchStates))])
		}
	}
	if r.IntN(5) == 0 {
		pairs = append(pairs, "offset="+strconv.Itoa(1+r.IntN(1000)))
	}
	return strings.Join(append(pairs, "max=20"), "&")
}

// benchList runs the queries on the benchmark index, forced to opts'
// strategies (none: it chooses).
func benchList(b *testing.B, suffix string, opts ...Option) {
	d := benchIndex()
	d.opts = defaultOptions()
	for _, o := range opts {
		o(&d.opts)
	}
	r := rand.New(rand.NewPCG(3, 4))
	qs := make([]string, 4096)
	for i := range qs {
		qs[i] = benchQuery(r) + suffix
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q, page, facets, err := yard.ParseCarListQuery(qs[i%len(qs)])
		if err != nil {
			b.Fatal(err)
		}
		d.list(q, page, facets)
	}
}

func BenchmarkRandomPage(b *testing.B)       { benchList(b, "") }
func BenchmarkRandomPageFacets(b *testing.B) { benchList(b, "&facets=make,color,year") }

// The same without the dense twins (dense.go), for their ratio.
func BenchmarkRandomPageRoaring(b *testing.B) { benchList(b, "", WithMatch("roaring")) }

func BenchmarkRandomPageFacetsRoaring(b *testing.B) {
	benchList(b, "&facets=make,color,year", WithMatch("roaring"))
}

// BenchmarkWalk walks the matches of one twin of each density over 1M
// positions, as facets do (densescan.go, walker).
func BenchmarkWalk(b *testing.B) {
	for _, percent := range []int{1, 5, 30} {
		r := rand.New(rand.NewPCG(1, 2))
		alive, t := &bitset{}, &bitset{}
		for p := range uint32(1 << 20) {
			alive.set(p)
			if r.IntN(100) < percent {
				t.set(p)
			}
		}
		dq := denseQuery{terms: [][]*bitset{{t}}}
		walk := dq.walker(alive, false, nil)
		b.Run(strconv.Itoa(percent)+"%", func(b *testing.B) {
			for b.Loop() {
				total := 0
				walk(func(ps []uint32) { total += len(ps) })
			}
		})
	}
}
