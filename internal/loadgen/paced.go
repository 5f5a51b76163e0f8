package loadgen

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// RunPaced is an open-loop run: clients each send a request every
// clients/rate seconds (starting staggered), whether or not the server keeps
// up, for d. Latency is measured from when a request was due, so time spent
// waiting behind a slow server counts (no coordinated omission).
func RunPaced(ctx context.Context, name string, client *http.Client, clients int, rate float64, d time.Duration, wantStatus int, newReq func(worker, i int) *http.Request) Result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	interval := time.Duration(float64(clients) / rate * float64(time.Second))
	var mu sync.Mutex
	var all []time.Duration
	errs := 0
	start := time.Now()
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			e := 0
			due := start.Add(interval * time.Duration(w) / time.Duration(clients))
			for i := 0; ; i++ {
				if wait := time.Until(due); wait > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
				if ctx.Err() != nil {
					break
				}
				resp, err := client.Do(newReq(w, i))
				if err != nil {
					if ctx.Err() == nil {
						e++
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if ctx.Err() != nil {
					break
				}
				lat = append(lat, time.Since(due))
				if resp.StatusCode != wantStatus {
					e++
				}
				due = due.Add(interval)
			}
			mu.Lock()
			all = append(all, lat...)
			errs += e
			mu.Unlock()
		})
	}
	wg.Wait()
	return summarize(name, all, errs, time.Since(start))
}
