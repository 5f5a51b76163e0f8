package console_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/search"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// BenchmarkConsolePages renders each console page on the server, as the
// signed-in administrator, through the whole server (middleware, the
// page, its in-process API calls), with a seeded random choice of page
// offsets, dogs, cars, garages and car filters, over benchDogs dogs and
// YARD_BENCH_CARS cars (default 100,000) answered by the search index as
// yard serve answers them. It reports the 99th percentile of one page's
// time (p99-ms).
func BenchmarkConsolePages(b *testing.B) {
	const benchDogs = 2000
	cars := 100_000
	if n, err := strconv.Atoi(os.Getenv("YARD_BENCH_CARS")); err == nil && n > 0 {
		cars = n
	}
	db := storetest.Open(b, store.SQLite)
	garages := importCars(b, db, cars)
	index := search.New(db, nil)
	if err := index.Build(context.Background()); err != nil {
		b.Fatal(err)
	}
	var kit *auth.Kit
	e := apitest.Start(b, db, apitest.WithAuthKit(b, db, &kit, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(0, nil) }),
		func(d *httpapi.Deps) { d.Cars = index })
	root := e.CreateUser("root", pw, "admin", "user")
	for i := range 200 {
		e.CreateUser("p"+strconv.Itoa(i), pw)
	}
	ids := make([]string, 0, benchDogs)
	for i := range benchDogs {
		ids = append(ids, (&env{e}).apiDog(b, "root", "dog "+strconv.Itoa(i)))
	}
	var orders []string
	for range 500 {
		res := e.Do(apitest.Request{Method: "POST", Path: "/orders", User: "root", Password: pw, Body: map[string]any{}})
		if res.StatusCode != 201 {
			b.Fatalf("place an order: %d %s", res.StatusCode, res.Body)
		}
		orders = append(orders, res.Map(b)["id"].(string))
	}
	key, _, err := kit.Sessions.CreateAt(context.Background(), root.ID)
	if err != nil {
		b.Fatal(err)
	}
	h := e.API.Handler()
	pages := []struct {
		name string
		path func(r *rand.Rand) string
	}{
		{"home", func(*rand.Rand) string { return "/console/" }},
		{"dogs", func(r *rand.Rand) string {
			return fmt.Sprintf("/console/dogs?offset=%d&max=%d", r.IntN(benchDogs), []int{10, 20, 50, 100}[r.IntN(4)])
		}},
		{"dog", func(r *rand.Rand) string { return "/console/dogs/" + ids[r.IntN(len(ids))] + "/" }},
		{"people", func(r *rand.Rand) string { return fmt.Sprintf("/console/admin/people?offset=%d&max=20", r.IntN(200)) }},
		{"cars", func(r *rand.Rand) string {
			q := url.Values{}
			for range r.IntN(3) {
				switch r.IntN(4) {
				case 0:
					q.Add("make", benchMakes[r.IntN(len(benchMakes))])
				case 1:
					q.Add("color", benchColors[r.IntN(len(benchColors))])
				case 2:
					q.Add("doors", strconv.Itoa(2+r.IntN(4)))
				default:
					q.Add("garage.state", benchStates[r.IntN(len(benchStates))])
				}
			}
			q.Set("offset", strconv.Itoa(r.IntN(200)))
			return "/console/cars?" + q.Encode()
		}},
		{"orders", func(r *rand.Rand) string { return fmt.Sprintf("/console/orders?offset=%d&max=20", r.IntN(len(orders))) }},
		{"order", func(r *rand.Rand) string { return "/console/orders/" + orders[r.IntN(len(orders))] }},
		{"events", func(r *rand.Rand) string {
			return "/console/events?types=" + []string{"dog.*", "order.*", "dog.*,order.*", "bark.*"}[r.IntN(4)]
		}},
		{"car", func(r *rand.Rand) string { return "/console/cars/c" + strconv.Itoa(r.IntN(cars)) }},
		{"garage", func(r *rand.Rand) string { return "/console/garages/g" + strconv.Itoa(r.IntN(garages)) }},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			times := make([]time.Duration, 0, b.N)
			for b.Loop() {
				req := httptest.NewRequest("GET", e.URL+p.path(r), nil)
				req.TLS = &tls.ConnectionState{}
				req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: key})
				w := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(w, req)
				times = append(times, time.Since(start))
				if w.Code != 200 {
					b.Fatalf("GET %s: %d %s", req.URL, w.Code, w.Body)
				}
				_, _ = io.Copy(io.Discard, w.Body)
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// The values the benchmark's cars are made of.
var (
	benchMakes  = []string{"ford", "honda", "toyota", "fiat", "bmw", "audi", "kia", "volvo", "seat", "skoda", "mazda", "tesla"}
	benchColors = []string{"red", "blue", "white", "black", "green", "silver", "grey", "yellow"}
	benchStates = []string{"CA", "NY", "TX", "WA", "OR", "NV", "AZ", "FL", "MA", "IL"}
)

// importCars loads n cars (ids c0…) into one garage in a hundred (ids g0…)
// with yard import's path, and returns the number of garages.
func importCars(b *testing.B, db *store.DB, n int) int {
	b.Helper()
	garages := max(n/100, 1)
	pr, pw := io.Pipe()
	go func() {
		enc := json.NewEncoder(pw)
		r := rand.New(rand.NewPCG(3, 4))
		for i := range garages {
			_ = enc.Encode(map[string]any{"kind": "garage", "id": "g" + strconv.Itoa(i), "name": "Garage " + strconv.Itoa(i),
				"state": benchStates[i%len(benchStates)]})
		}
		for i := range n {
			_ = enc.Encode(map[string]any{"kind": "car", "id": "c" + strconv.Itoa(i), "make": benchMakes[r.IntN(len(benchMakes))],
				"model": "m" + strconv.Itoa(r.IntN(50)), "color": benchColors[r.IntN(len(benchColors))], "type": "sedan",
				"doors": 2 + r.IntN(4), "year": 1990 + r.IntN(36), "garage": "g" + strconv.Itoa(r.IntN(garages))})
		}
		_ = pw.Close()
	}()
	if _, err := db.ImportCars(context.Background(), pr, 10_000); err != nil {
		b.Fatal(err)
	}
	return garages
}
