package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/webhooks"
)

// webhooksGroup: deliveries per second to a loopback receiver. 20 people,
// one subscription each (every type), a backlog of 10,000 dog renames of
// random dogs (seeded), then the process's webhook service (16 workers)
// delivers them; the receiver answers 204 at once. It reports the rate
// from the service's start to the last delivery, and the same for events
// written at 500/s while the service runs.
func webhooksGroup(b *bench) error {
	const people, backlog = 20, 10000
	var got atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	host := strings.TrimPrefix(receiver.URL, "http://")

	var dogs []*yard.Dog
	for i := range people {
		u, err := b.newUser(fmt.Sprintf("wh%d", i))
		if err != nil {
			return err
		}
		d := &yard.Dog{Name: "Dog", Email: "dog@example.org", Owner: u.ID}
		if err := b.db.CreateDog(b.ctx, d); err != nil {
			return err
		}
		dogs = append(dogs, d)
		if err := b.db.CreateWebhook(b.ctx, &yard.Webhook{Owner: u.ID, URL: receiver.URL + "/hook", Enabled: true,
			Secret: "whsec_" + strings.Repeat("A", 43) + "="}); err != nil {
			return err
		}
	}
	rename := func(rng *rand.Rand) error {
		name := "Dog " + strconv.Itoa(rng.IntN(1e6))
		_, err := b.db.UpdateDog(b.ctx, dogs[rng.IntN(len(dogs))].ID, yard.DogUpdate{Name: &name})
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range backlog {
		if err := rename(rng); err != nil {
			return err
		}
	}

	ctx, stop := context.WithCancel(b.ctx)
	defer stop()
	hub := events.New(b.db, events.Config{})
	go func() { _ = hub.Run(ctx) }()
	api := httpapi.New(httpapi.Deps{DB: b.db, BaseURL: "https://localhost:8443"})
	svc := webhooks.New(webhooks.Config{DB: b.db, Render: api.RenderEvent, Hub: hub, Workers: webhookWorkers, Policy: &fetch.Policy{AllowHosts: []string{host}},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	fmt.Fprintf(b.out, "## webhooks: %d subscriptions (one per person), receiver on loopback, store %s\n", people, b.db.Engine())
	start := time.Now()
	go svc.Run(ctx)
	wait := func(n int64, limit time.Duration) time.Duration {
		for deadline := time.Now().Add(limit); got.Load() < n && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	took := wait(backlog, 3*time.Minute)
	fmt.Fprintf(b.out, "  a backlog of %d events: %d delivered in %s: %.0f deliveries/s\n", backlog, got.Load(), took.Round(time.Millisecond), float64(got.Load())/took.Seconds())

	// Events written while the service runs, at 500/s.
	got.Store(0)
	const live, rate = 2500, 500.0
	start = time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	for range live {
		<-tick.C
		if err := rename(rng); err != nil {
			tick.Stop()
			return err
		}
	}
	tick.Stop()
	written := time.Since(start)
	took = wait(live, time.Minute)
	fmt.Fprintf(b.out, "  %d events written at %.0f/s (in %s): all delivered %s after the first was written\n\n",
		live, rate, written.Round(time.Millisecond), took.Round(time.Millisecond))
	return nil
}

// webhookWorkers is the webhook service's worker count in the benchmark
// (YARDBENCH_WEBHOOK_WORKERS, else the service's default).
var webhookWorkers, _ = strconv.Atoi(os.Getenv("YARDBENCH_WEBHOOK_WORKERS"))
