package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
)

// barks: synchronous record barks on one dog and spread over 100 dogs,
// asynchronous barks accepted (202) at the configured concurrency and at
// 200 clients, and the rate at which the workers then run them.
//
// barks-accept runs only the 202 scenarios at 200 clients.
func barks(b *bench, all bool) error {
	u, err := b.newUser("barker")
	if err != nil {
		return err
	}
	var dogs []string
	for i := range 100 {
		d := &yard.Dog{Name: fmt.Sprintf("Dog %d", i), Email: "dog@example.org", Owner: u.ID}
		if err := b.db.CreateDog(b.ctx, d); err != nil {
			return err
		}
		dogs = append(dogs, d.ID)
	}
	dir, err := os.MkdirTemp("", "yardbench-barks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc := jobs.New(jobs.Config{DB: b.db, Workers: 4, Poll: 50 * time.Millisecond,
		Effects: &jobs.Effects{Mailer: &notify.MailOutbox{Dir: filepath.Join(dir, "outbox", "mail")},
			Texter: &notify.TextOutbox{Dir: filepath.Join(dir, "outbox", "sms")}, Fetcher: &fetch.Runner{}, Users: b.db, DataDir: dir}})
	basic := auth.NewBasic(b.db, auth.NewLoginLimiter(0, nil), b.hashing)
	srv := httptest.NewUnstartedServer(nil)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	api := httpapi.New(httpapi.Deps{DB: b.db, Auth: &auth.Chain{Header: []auth.Scheme{basic}}, Barks: svc, BaseURL: srv.URL,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), StoreWait: httpapi.DefaultStoreWait})
	srv.Config.Handler = api.Handler()
	url := srv.URL

	post := func(dog func(worker, i int) string, async bool) func(int, int) *http.Request {
		return func(w, i int) *http.Request {
			req, _ := http.NewRequest("POST", url+"/v1/dogs/"+dog(w, i)+"/barks", strings.NewReader(`{"effect":"record"}`))
			req.Header.Set("Content-Type", "application/json")
			req.SetBasicAuth("barker", benchPassword)
			if async {
				req.Header.Set("Prefer", "respond-async")
			}
			return req
		}
	}
	one := func(int, int) string { return dogs[0] }
	spread := func(w, i int) string { return dogs[(w*7919+i)%len(dogs)] }

	fmt.Fprintf(b.out, "## barks: POST /v1/dogs/{id}/barks (record), store %s\n", b.db.Engine())
	client := loadClient(b.concurrency)
	// One request first, so the Basic cache holds the credentials before
	// many clients ask at once (a cold cache makes each of them verify
	// argon2id).
	if resp, err := client.Do(post(one, false)(0, 0)); err == nil {
		resp.Body.Close()
	}
	if all {
		b.report(runLoad(b.ctx, "sync record, one dog", client, b.concurrency, b.duration, 201, post(one, false)))
		b.report(runLoad(b.ctx, "sync record, 100 dogs", client, b.concurrency, b.duration, 201, post(spread, false)))
		b.report(runLoad(b.ctx, "async accepted (202), 100 dogs", client, b.concurrency, b.duration, 202, post(spread, true)))
	}
	// 200 concurrent clients, closed loop: every client sends its next
	// request as soon as the last is answered, so the latency is the queue
	// (Little's law: 200 clients / throughput).
	big := loadClient(200)
	// Warm up: open the 200 keep-alive connections (TLS handshakes) first.
	runPaced(b.ctx, "warm-up", big, 200, 400, time.Second, 202, post(spread, true))
	b.report(runLoad(b.ctx, "async accepted (202), 200 clients closed", big, 200, b.duration, 202, post(spread, true)))
	// 200 concurrent clients, open loop at a fixed offered load: the
	// latency a client sees when the server is not saturated.
	for _, rate := range []float64{1000, 2000} {
		r := b.report(runPaced(b.ctx, fmt.Sprintf("async 202, 200 clients at %.0f req/s", rate), big, 200, rate, b.duration, 202, post(spread, true)))
		verdict := "meets"
		if r.P99 >= 20*time.Millisecond {
			verdict = "MISSES"
		}
		fmt.Fprintf(b.out, "  p99 of a 202, 200 clients offering %.0f req/s: %.2f ms (%s the 20 ms target)\n", rate, float64(r.P99.Microseconds())/1000, verdict)
	}

	if !all {
		return nil
	}
	// Let the workers run what was accepted.
	var pending int
	if err := b.db.Read().QueryRowContext(b.ctx, `SELECT COUNT(*) FROM tasks WHERE status = 'pending'`).Scan(&pending); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() { svc.Run(ctx); close(done) }()
	deadline := start.Add(2 * time.Minute)
	left := pending
	for left > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if err := b.db.Read().QueryRowContext(b.ctx, `SELECT COUNT(*) FROM tasks WHERE status IN ('pending', 'running')`).Scan(&left); err != nil {
			stop()
			return err
		}
	}
	took := time.Since(start)
	stop()
	<-done
	fmt.Fprintf(b.out, "  workers (4) ran %d async record tasks in %s: %.0f tasks/s\n\n", pending-left, took.Round(time.Millisecond), float64(pending-left)/took.Seconds())
	return nil
}
