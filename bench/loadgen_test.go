package bench

// The load generator of the benchmarks, closed-loop (runLoad) and open-loop
// (runPaced, paced_test.go): a number of clients each send one request
// after another for a fixed time, and it reports requests per second and
// latency percentiles.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// result is the outcome of one run.
type result struct {
	Name     string
	Requests int
	Errors   int // transport errors and unexpected statuses
	Duration time.Duration
	RPS      float64
	P50, P99 time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%-40s %8.0f req/s  p50 %7.2f ms  p99 %7.2f ms  (%d requests, %d errors)",
		r.Name, r.RPS, millis(r.P50), millis(r.P99), r.Requests, r.Errors)
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// loadClient returns an HTTP client for loopback load: TLS without verification
// (self-signed test certificates), HTTP/1.1 keep-alive connections, one per
// concurrent client, which is how most API clients talk.
func loadClient(concurrency int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
			MaxIdleConns:        concurrency * 2,
			MaxIdleConnsPerHost: concurrency * 2,
			MaxConnsPerHost:     concurrency * 2,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
		Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// runLoad sends requests made by newReq from concurrency clients for d and
// counts a response as an error unless its status is wantStatus.
func runLoad(ctx context.Context, name string, client *http.Client, concurrency int, d time.Duration, wantStatus int, newReq func(worker, i int) *http.Request) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return runWorkers(name, concurrency, func(w int, _ time.Time, t *tally) {
		t.lat = make([]time.Duration, 0, 4096)
		for i := 0; ctx.Err() == nil; i++ {
			req := newReq(w, i)
			if _, over := t.send(ctx, client, req, wantStatus, time.Now()); over {
				break
			}
		}
	})
}

// runWorkers runs n workers at once, each filling its tally (start is when
// the run started), and sums their tallies up.
func runWorkers(name string, n int, work func(w int, start time.Time, t *tally)) result {
	var mu sync.Mutex
	var all []time.Duration
	errs := 0
	start := time.Now()
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			var t tally
			work(w, start, &t)
			mu.Lock()
			all = append(all, t.lat...)
			errs += t.errs
			mu.Unlock()
		})
	}
	wg.Wait()
	return summarize(name, all, errs, time.Since(start))
}

// tally is what one worker of a run measured.
type tally struct {
	lat  []time.Duration
	errs int
}

// send does req and reads the response's body. over reports that the run
// (ctx) ended while the request was answered: then nothing is counted.
// Otherwise a request without a response while the run goes on, or with
// another status than want, is an error, and an answered request's latency
// since from is kept; answered reports whether there was a response.
func (t *tally) send(ctx context.Context, client *http.Client, req *http.Request, want int, from time.Time) (answered, over bool) {
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.errs++
		}
		return false, false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if ctx.Err() != nil {
		return true, true
	}
	t.lat = append(t.lat, time.Since(from))
	if resp.StatusCode != want {
		t.errs++
	}
	return true, false
}

// summarize turns the latencies of a run into a result.
func summarize(name string, all []time.Duration, errs int, elapsed time.Duration) result {
	slices.Sort(all)
	r := result{Name: name, Requests: len(all), Errors: errs, Duration: elapsed}
	if len(all) > 0 {
		r.RPS = float64(len(all)) / elapsed.Seconds()
		r.P50 = all[len(all)*50/100]
		r.P99 = all[min(len(all)*99/100, len(all)-1)]
	}
	return r
}
