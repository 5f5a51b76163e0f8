package console_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// BenchmarkConsolePages renders each console page on the server, as the
// signed-in person, through the whole server (middleware, the page, its
// in-process API calls), with a seeded random choice of page offsets and
// dogs among benchDogs dogs. It reports the 99th percentile of one page's
// time (p99-ms).
func BenchmarkConsolePages(b *testing.B) {
	const benchDogs = 2000
	db := storetest.Open(b, store.SQLite)
	var kit *auth.Kit
	e := apitest.Start(b, db, apitest.WithAuthKit(b, db, &kit, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(0, nil) }))
	root := e.CreateUser("root", pw, "admin", "user")
	for i := range 200 {
		e.CreateUser("p"+strconv.Itoa(i), pw)
	}
	ids := make([]string, 0, benchDogs)
	for i := range benchDogs {
		ids = append(ids, (&env{e}).apiDog(b, "root", "dog "+strconv.Itoa(i)))
	}
	key, err := kit.Sessions.Create(context.Background(), root.ID)
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
