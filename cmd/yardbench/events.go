package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/internal/loadgen"
	"github.com/yard-api/yard/store"
)

// events: 1,000 open Server-Sent Events streams (100 people, 10 streams
// each) while dog changes are written at 500 events/s, each to a random
// dog of a random person (seeded). It reports the time from an event's
// transaction to its arrival at a stream (p50, p99), on the process that
// wrote it and, on PostgreSQL, on a second server with its own store
// connections and hub (as another process would be: woken by NOTIFY); the
// memory the streams cost; and the rate of bark accepts (202) with the
// streams open against the rate without.
func eventsGroup(b *bench) error {
	const people, perPerson, streams, rate = 100, 10, 1000, 500.0
	var names []string
	var dogs [][]string
	for i := range people {
		u, err := b.newUser(fmt.Sprintf("ev%d", i))
		if err != nil {
			return err
		}
		names = append(names, u.Name)
		var ds []string
		for j := range 2 {
			d := &yard.Dog{Name: fmt.Sprintf("Dog %d-%d", i, j), Email: "dog@example.org", Owner: u.ID}
			if err := b.db.CreateDog(b.ctx, d); err != nil {
				return err
			}
			ds = append(ds, d.ID)
		}
		dogs = append(dogs, ds)
	}

	ctx, stop := context.WithCancel(b.ctx)
	defer stop()
	start := func(db *store.DB) (string, *events.Hub) {
		hub := events.New(db, events.Config{PerPerson: perPerson})
		go func() { _ = hub.Run(ctx) }()
		basic := auth.NewBasic(db, auth.NewLoginLimiter(0))
		srv := httptest.NewUnstartedServer(nil)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		go func() { <-ctx.Done(); srv.Close() }()
		api := httpapi.New(httpapi.Deps{DB: db, Auth: &auth.Chain{Header: []auth.Scheme{basic}}, Basic: basic, BaseURL: srv.URL,
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), StoreWait: httpapi.DefaultStoreWait, Events: hub})
		srv.Config.Handler = api.Handler()
		return srv.URL, hub
	}
	urlA, _ := start(b.db)
	urls := []string{urlA}
	if b.db.Engine() == store.Postgres {
		// A second server over its own connections: what another process
		// sees of the same store.
		db2, err := store.Open(b.ctx, b.dsn, os.TempDir())
		if err != nil {
			return err
		}
		defer db2.Close()
		urlB, _ := start(db2)
		urls = append(urls, urlB)
	}

	fmt.Fprintf(b.out, "## events: %d streams (%d people × %d), %.0f events/s written, store %s\n", streams, people, perPerson, rate, b.db.Engine())
	client := loadgen.Client(b.concurrency)
	auth := func(req *http.Request, person int) { req.SetBasicAuth(names[person], benchPassword) }
	// Warm the Basic cache of every person on every server.
	for _, u := range urls {
		for p := range people {
			req, _ := http.NewRequest("GET", u+"/v1/dogs/"+dogs[p][0]+"/", nil)
			auth(req, p)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	accept := func(w, i int) *http.Request {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(i)))
		p := rng.IntN(people)
		req, _ := http.NewRequest("POST", urlA+"/v1/dogs/"+dogs[p][rng.IntN(2)]+"/barks", strings.NewReader(`{"effect":"record"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Prefer", "respond-async")
		auth(req, p)
		return req
	}
	without := b.report(loadgen.Run(b.ctx, "async 202, no streams", client, b.concurrency, b.duration, 202, accept))

	runtime.GC()
	heap0, rss0 := memory()
	// The streams: HTTP/1.1, one connection each, as browsers' EventSource
	// and most clients hold them.
	streamClient := loadgen.Client(streams)
	streamClient.Timeout = 0
	type lat struct {
		mu  sync.Mutex
		all []time.Duration
	}
	lats := make([]*lat, len(urls))
	for i := range lats {
		lats[i] = &lat{}
	}
	var opened, failed atomic.Int64
	var wg sync.WaitGroup
	for s := range streams {
		server := s % len(urls)
		person := (s / len(urls)) % people
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", urls[server]+"/v1/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			auth(req, person)
			resp, err := streamClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				failed.Add(1)
				return
			}
			defer resp.Body.Close()
			opened.Add(1)
			r := bufio.NewReaderSize(resp.Body, 4096)
			var mine []time.Duration
			defer func() {
				l := lats[server]
				l.mu.Lock()
				l.all = append(l.all, mine...)
				l.mu.Unlock()
			}()
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if !strings.HasPrefix(string(line), "data: ") {
					continue
				}
				now := time.Now()
				s := string(line)
				i := strings.Index(s, `"time":"`)
				if i < 0 {
					continue
				}
				at, err := time.Parse(time.RFC3339Nano, s[i+8:i+8+24])
				if err == nil {
					mine = append(mine, now.Sub(at))
				}
			}
		})
	}
	for deadline := time.Now().Add(30 * time.Second); opened.Load()+failed.Load() < streams && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(b.out, "  streams open: %d (%d refused)\n", opened.Load(), failed.Load())

	// 500 events/s: renames of random dogs (one dog.updated each).
	rename := func(w, i int) *http.Request {
		rng := rand.New(rand.NewPCG(uint64(w)+1<<32, uint64(i)))
		p := rng.IntN(people)
		req, _ := http.NewRequest("PATCH", urlA+"/v1/dogs/"+dogs[p][rng.IntN(2)]+"/",
			strings.NewReader(`{"name":"Dog `+strconv.Itoa(rng.IntN(1e6))+`"}`))
		req.Header.Set("Content-Type", "application/json")
		auth(req, p)
		return req
	}
	written := b.report(loadgen.RunPaced(b.ctx, fmt.Sprintf("dog renames at %.0f/s (streams open)", rate), client, b.concurrency, rate, b.duration, 204, rename))
	with := b.report(loadgen.Run(b.ctx, "async 202, streams open", client, b.concurrency, b.duration, 202, accept))
	heap1, rss1 := memory()
	time.Sleep(500 * time.Millisecond) // the last deliveries
	stop()
	wg.Wait()

	where := []string{"same process", "other server (NOTIFY)"}
	for i, l := range lats {
		slices.Sort(l.all)
		if len(l.all) == 0 {
			continue
		}
		q := func(f float64) float64 { return float64(l.all[int(f*float64(len(l.all)-1))].Microseconds()) / 1000 }
		fmt.Fprintf(b.out, "  transaction → stream, %s: %d deliveries, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", where[i], len(l.all), q(0.5), q(0.99), q(1))
	}
	fmt.Fprintf(b.out, "  renames answered: %d (%.0f/s)\n", written.Requests, written.RPS)
	fmt.Fprintf(b.out, "  memory with the streams open and the writes done: Go heap %+.1f MB, resident %+.1f MB (load generator included)\n",
		float64(heap1-heap0)/1e6, float64(rss1-rss0)/1e6)
	b.ratio("bark accepts with 1,000 streams open, against none", with, without)
	fmt.Fprintln(b.out)
	return nil
}

// memory returns the Go heap in use and the process's resident size, in
// bytes.
func memory() (heap, rss int64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	heap = int64(m.HeapInuse)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				rss = kb * 1024
			}
		}
	}
	return heap, rss
}
