package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
)

func init() { wirings = append(wirings, wireBarks) }

// wireBarks plugs the bark effects (mail, text messages, fetch) and the
// background workers and scheduler into the app.
func wireBarks(_ context.Context, a *app) error {
	cfg := a.cfg
	eff := &jobs.Effects{Users: a.db, DataDir: cfg.data, From: cfg.smtpFrom}
	if u, err := url.Parse(cfg.baseURL); err == nil && u.Hostname() != "" {
		eff.Domain = u.Hostname()
	}
	if cfg.smtpURL != "" {
		m, err := notify.ParseSMTPURL(cfg.smtpURL)
		if err != nil {
			return usageError(err.Error())
		}
		eff.Mailer = m
	} else {
		eff.Mailer = &notify.MailOutbox{Dir: filepath.Join(cfg.data, "outbox", "mail")}
	}
	if cfg.smsURL != "" {
		t, err := notify.ParseSMSURL(cfg.smsURL)
		if err != nil {
			return usageError(err.Error())
		}
		eff.Texter = t
	} else {
		eff.Texter = &notify.TextOutbox{Dir: filepath.Join(cfg.data, "outbox", "sms")}
	}
	argv, err := fetch.ParseCommand(cfg.fetchCmd)
	if err != nil {
		return usageError(err.Error())
	}
	eff.Fetcher = &fetch.Runner{Command: argv, Timeout: 5 * time.Minute}
	host, _ := os.Hostname()
	svc := &jobs.Service{DB: a.db, Effects: eff, Logger: a.logger.With("component", "barks"),
		Owner: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), yard.NewID()[24:]), Workers: cfg.workers, Lease: cfg.jobLease}
	if cfg.workers < 1 || cfg.jobLease < time.Second {
		return usageError("--workers must be at least 1 and --job-lease at least 1s")
	}
	tasks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yard_bark_tasks_total", Help: "Runs of asynchronous bark tasks by effect and outcome (succeeded, failed, retry, canceled, released).",
	}, []string{"effect", "outcome"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "yard_bark_task_duration_seconds", Help: "Duration of asynchronous bark task runs by effect.",
		Buckets: []float64{.001, .005, .025, .1, .5, 1, 5, 30, 120},
	}, []string{"effect"})
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "yard_bark_tasks_pending", Help: "Bark tasks waiting to run (all processes).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, _ := a.db.PendingTasks(ctx)
		return float64(n)
	})
	a.api.Registry.MustRegister(tasks, durations, pending)
	svc.Observe = func(effect, outcome string, d time.Duration) {
		tasks.WithLabelValues(effect, outcome).Inc()
		durations.WithLabelValues(effect).Observe(d.Seconds())
	}
	a.api.Barks = svc
	a.background = append(a.background, svc.Run)
	// SQLite: checkpoint the WAL off the writer's path (see RunCheckpoints).
	a.background = append(a.background, func(ctx context.Context) { a.db.RunCheckpoints(ctx, 200*time.Millisecond) })
	return nil
}
