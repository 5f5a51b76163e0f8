package bench

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/search"
)

// The carsearch group measures car lists answered by the search index
// (package search) over a store loaded beforehand with the scripts/gencars
// data set, as the cars group (scripts/carbench):
//
//	go test ./bench -run TestYardbench -timeout 0 -v -args -groups carsearch -db sqlite:/tmp/cars.db -concurrency 32 -duration 30s
//
// It builds the index (reporting the time and the memory it takes), then
// alternates, in rounds, the bare TLS ceiling with two random workloads:
// every request a different filtered page with its exact total, and the
// same with facets=make,color,year.

// carSearchSeed seeds the random queries of the carsearch group.
var carSearchSeed = flag.Uint64("carsearch-seed", 1, "carsearch group: seed of the random queries")

// rss returns the resident set size of the process in bytes (Linux).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n * 1024
		}
	}
	return 0
}

func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func carSearchGroup(b *bench) error {
	total, err := b.db.CountCarsUncached(b.ctx, yard.Query{})
	if err != nil {
		return err
	}
	if total == 0 {
		return fmt.Errorf("carsearch: the store holds no cars; load it with yard import (see bench/cars_test.go)")
	}
	fmt.Fprintf(b.out, "## carsearch: %d cars in the store\n\n", total)

	heap0, rss0 := heapInUse(), rss()
	ix := search.New(b.db, nil, search.WithStoreWait(httpapi.DefaultStoreWait))
	t0 := time.Now()
	if err := ix.Build(b.ctx); err != nil {
		return err
	}
	took := time.Since(t0)
	heap1, rss1 := heapInUse(), rss()
	st := ix.Stats()
	fmt.Fprintf(b.out, "index build: %d cars, %d garages in %.2f s (target <= 10 s for 1M)\n", st.Cars, st.Garages, took.Seconds())
	fmt.Fprintf(b.out, "memory: Go heap in use %.0f MiB (+%.0f MiB for the index; bitmaps %.0f MiB); process RSS %.0f MiB (+%.0f MiB); %.0f MiB per million cars\n\n",
		mib(heap1), mib(heap1-min(heap0, heap1)), mib(st.BitmapBytes), mib(rss1), mib(rss1-min(rss0, rss1)),
		mib(heap1-min(heap0, heap1))*1e6/float64(max(st.Cars, 1)))

	// A page of 20 cars, for the ceiling's body.
	l, err := ix.ListCars(b.ctx, yard.Query{}, yard.Page{Max: 20}, nil)
	if err != nil {
		return err
	}
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i, c := range l.Cars {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%q,"color":%q,"type":%q,"doors":%d,"make":%q,"model":%q,"year":%d,"garage":%q}`,
			c.ID, c.Color, c.Type, c.Doors, c.Make, c.Model, c.Year, c.Garage)
	}
	fmt.Fprintf(&sb, `],"offset":0,"max":20,"total":%d}`+"\n", total)
	fixed := []byte(sb.String())
	bare, stopBare := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(fixed)
	}))
	defer stopBare()

	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	api := httpapi.New(httpapi.Deps{DB: b.db, Auth: &auth.Chain{}, Cars: ix, BaseURL: srv.URL, Logger: logger, StoreWait: httpapi.DefaultStoreWait})
	srv.Config.Handler = api.Handler()
	url := srv.URL

	client := loadClient(b.concurrency)
	rngs := make([]*rand.Rand, b.concurrency)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(*carSearchSeed, uint64(i)))
	}
	random := func(suffix string) func(w, i int) *http.Request {
		return func(w, i int) *http.Request {
			req, _ := http.NewRequest("GET", url+"/cars?"+randomCarQuery(rngs[w])+suffix, nil)
			return req
		}
	}
	// Rounds alternate the ceiling and the workloads, so a change in what
	// else the shared machine runs touches them alike.
	const rounds = 3
	var ceil, pages, faceted []result
	for range rounds {
		ceil = append(ceil, runLoad(b.ctx, "ceiling: bare net/http, fixed page", client, b.concurrency, b.duration/rounds, 200, func(int, int) *http.Request {
			req, _ := http.NewRequest("GET", bare+"/fixed", nil)
			return req
		}))
		pages = append(pages, runLoad(b.ctx, "GET /cars?<random filter> (index)", client, b.concurrency, b.duration/rounds, 200, random("")))
		faceted = append(faceted, runLoad(b.ctx, "  the same with facets=make,color,year", client, b.concurrency, b.duration/rounds, 200, random("&facets=make,color,year")))
	}
	c, p, f := b.report(merge(ceil)), b.report(merge(pages)), b.report(merge(faceted))
	fmt.Fprintln(b.out)
	verdict := func(ok bool) string {
		if ok {
			return "meets"
		}
		return "MISSES"
	}
	if c.RPS > 0 {
		fmt.Fprintf(b.out, "  random pages: %.1f%% of the ceiling (target >= 25%%: %s), p99 %.2f ms (target < 25 ms: %s)\n",
			100*p.RPS/c.RPS, verdict(p.RPS >= c.RPS/4), float64(p.P99.Microseconds())/1000, verdict(p.P99 < 25*time.Millisecond))
		fmt.Fprintf(b.out, "  with facets: %.1f%% of the ceiling, p99 %.2f ms (target < 25 ms: %s)\n",
			100*f.RPS/c.RPS, float64(f.P99.Microseconds())/1000, verdict(f.P99 < 25*time.Millisecond))
	}
	fmt.Fprintf(b.out, "  process RSS after the load: %.0f MiB\n\n", mib(rss()))
	return nil
}
