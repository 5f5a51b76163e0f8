package bench

import (
	"context"
	"net/http"
	"time"
)

// runPaced is an open-loop run: clients each send a request every
// clients/rate seconds (starting staggered), whether or not the server keeps
// up, for d. Latency is measured from when a request was due, so time spent
// waiting behind a slow server counts (no coordinated omission).
func runPaced(ctx context.Context, name string, client *http.Client, clients int, rate float64, d time.Duration, wantStatus int, newReq func(worker, i int) *http.Request) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	interval := time.Duration(float64(clients) / rate * float64(time.Second))
	return runWorkers(name, clients, func(w int, start time.Time, t *tally) {
		t.lat = make([]time.Duration, 0, 1024)
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
			answered, over := t.send(ctx, client, newReq(w, i), wantStatus, due)
			if over {
				break
			}
			if answered {
				due = due.Add(interval)
			}
		}
	})
}
