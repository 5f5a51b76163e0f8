package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/store"
)

// newFetcher runs the fetches of fetch-code barks (--fetch-command and
// the --fetch-* flags).
func newFetcher(cfg *serveConfig, logger *slog.Logger) (*fetch.Runner, error) {
	argv, err := fetch.ParseCommand(cfg.fetchCmd)
	if err != nil {
		return nil, usageError(err.Error())
	}
	fc := cfg.fetch
	if err := fc.check(); err != nil {
		return nil, err
	}
	r := &fetch.Runner{Command: argv, Timeout: fc.timeout, IdleTimeout: fc.idle,
		Policy: &fetch.Policy{AllowDirs: fc.allowDirs, AllowHosts: fc.allowHosts},
		Logger: logger.With("component", "fetch")}
	if fc.caFile != "" {
		r.Env = append(fetch.CleanEnv(), "GIT_SSL_CAINFO="+fc.caFile)
	}
	return r, nil
}

// newBarkEffects is what barks do: e-mail through the SMTP server of
// --smtp-url, or .eml files in DATA/outbox/mail; text messages through the
// SMS API of --sms-url, or files in DATA/outbox/sms; fetches (newFetcher);
// and the store to find a dog's owner in.
func newBarkEffects(cfg *serveConfig, db *store.DB, logger *slog.Logger) (eff *jobs.Effects, err error) {
	eff = &jobs.Effects{Users: db, DataDir: cfg.data, From: cfg.smtpFrom,
		Mailer: &notify.MailOutbox{Dir: filepath.Join(cfg.data, "outbox", "mail")},
		Texter: &notify.TextOutbox{Dir: filepath.Join(cfg.data, "outbox", "sms")}}
	if cfg.smtpURL != "" {
		if eff.Mailer, err = notify.ParseSMTPURL(cfg.smtpURL); err != nil {
			return nil, usageError(err.Error())
		}
	}
	if cfg.smsURL != "" {
		if eff.Texter, err = notify.ParseSMSURL(cfg.smsURL); err != nil {
			return nil, usageError(err.Error())
		}
	}
	if eff.Fetcher, err = newFetcher(cfg, logger); err != nil {
		return nil, err
	}
	if u, err := url.Parse(cfg.baseURL); err == nil && u.Hostname() != "" {
		eff.Domain = u.Hostname()
	}
	return eff, nil
}

// newJobRunner is the runner of bark tasks (its workers and the
// scheduler of scheduled barks), with its metrics in registry and its runs
// traced by tracing (nil: none).
func newJobRunner(cfg *serveConfig, db *store.DB, effects *jobs.Effects, registry *prometheus.Registry, logger *slog.Logger,
	tracing trace.TracerProvider) (*jobs.Service, error) {
	if cfg.workers < 1 || cfg.jobLease < time.Second {
		return nil, usageError("--workers must be at least 1 and --job-lease at least 1s")
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
		n, _ := db.PendingTasks(ctx)
		return float64(n)
	})
	registry.MustRegister(tasks, durations, pending)
	return jobs.New(jobs.Config{DB: db, Effects: effects, Logger: logger.With("component", "barks"),
		Owner:   instanceID(),
		Workers: cfg.workers, Lease: cfg.jobLease, FetchWorkers: cfg.fetch.workers, FetchPerUser: cfg.fetch.perUser,
		Observe: func(effect, outcome string, d time.Duration) {
			tasks.WithLabelValues(effect, outcome).Inc()
			durations.WithLabelValues(effect).Observe(d.Seconds())
		},
		Tracing: tracing,
	}), nil
}

// fetchFlags are the flags of fetch-code barks (docs/barks.md, "Where
// fetches may go"; docs/configuration.md).
type fetchFlags struct {
	allowDirs  listFlag
	allowHosts listFlag
	timeout    time.Duration
	idle       time.Duration
	workers    int
	perUser    int
	caFile     string
}

func (f *fetchFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.allowDirs, "fetch-allow-dir", "directory under which file:// codeUrls may point (repeat or comma-separate; default none)")
	fs.Var(&f.allowHosts, "fetch-allow-host", "HOST or HOST:PORT fetches may reach although it is not a public address (repeat or comma-separate; default none)")
	fs.DurationVar(&f.timeout, "fetch-timeout", fetch.DefaultTimeout, "time limit of one fetch-code bark's fetch")
	fs.DurationVar(&f.idle, "fetch-idle-timeout", fetch.DefaultIdleTimeout, "a fetch that receives nothing for this long ends (also bounds connecting)")
	fs.IntVar(&f.workers, "fetch-workers", jobs.DefaultFetchWorkers, "fetch-code barks run at once by this process (apart from --workers)")
	fs.StringVar(&f.caFile, "fetch-ca-file", "", "PEM file of the certificate authorities git trusts for https:// codeUrls (default: the system's)")
	fs.IntVar(&f.perUser, "fetch-per-user", jobs.DefaultFetchPerUser, "fetch-code barks running at once for the dogs of one owner, across all processes")
}

func (f *fetchFlags) check() error {
	if f.timeout < time.Second || f.idle < time.Second || f.workers < 1 || f.perUser < 1 {
		return usageError("--fetch-timeout and --fetch-idle-timeout must be at least 1s, --fetch-workers and --fetch-per-user at least 1")
	}
	for i, d := range f.allowDirs {
		abs, err := filepath.Abs(d)
		if err != nil || d == "" {
			return usageError("--fetch-allow-dir " + d + ": not a usable directory")
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return usageError("--fetch-allow-dir " + d + ": not a directory")
		}
		f.allowDirs[i] = abs
	}
	if f.caFile != "" {
		abs, err := filepath.Abs(f.caFile)
		if _, serr := os.Stat(abs); err != nil || serr != nil {
			return usageError("--fetch-ca-file " + f.caFile + ": cannot be read")
		}
		f.caFile = abs
	}
	return f.allowHosts.checkHosts("fetch-allow-host")
}

// listFlag collects a flag given several times or as a comma-separated
// list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

// checkHosts refuses, as flag name's values, anything but HOST or
// HOST:PORT.
func (l listFlag) checkHosts(name string) error {
	for _, h := range l {
		if strings.ContainsAny(h, "/@ \t") {
			return usageError("--" + name + " " + h + ": want HOST or HOST:PORT")
		}
	}
	return nil
}

// instanceID is a new name of this process, host, process id and a
// random suffix: the owner of its task leases, its traces'
// service.instance.id.
func instanceID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), yard.NewID()[24:])
}

// Set adds the comma-separated values of one occurrence.
func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}
