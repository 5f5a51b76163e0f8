package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/crypto/acme/autocert"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/internal/fairgate"
	"github.com/yard-api/yard/internal/tracing"
	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/search"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/webhooks"
)

// serveConfig holds every flag of serve (docs/configuration.md).
type serveConfig struct {
	storeFlags
	addr        string
	baseURL     string
	tlsCert     string
	tlsKey      string
	acmeDomain  string
	httpAddr    string
	debugAddr   string
	demo        bool
	accessTTL   time.Duration
	refreshTTL  time.Duration
	sessionIdle time.Duration
	sessionMax  time.Duration
	loginRate   int
	smtpURL     string
	smtpFrom    string
	smsURL      string
	fetchCmd    string
	workers     int
	jobLease    time.Duration
	logLevel    string
	storeWait   time.Duration
	// events holds the limits of event streams (docs/events.md).
	eventsRetention  time.Duration
	eventsPerPerson  int
	eventsPerProcess int
	// webhookAllowHosts are the hosts webhook deliveries may reach
	// although they are not public addresses (docs/events.md, "Webhooks").
	webhookAllowHosts listFlag
	// webhookWorkers is the delivery attempts this process makes at once.
	webhookWorkers int
	// searchSlots and searchQueue bound the car lists computed at once and
	// those one client address may have waiting (docs/operations.md,
	// "Fair shares").
	searchSlots, searchQueue int
	// carLease is the read lease of the car search index on PostgreSQL
	// (docs/cars.md, "Read leases"); 0: none.
	carLease time.Duration
	// auth holds the flags of the token and key schemes (authwire.go).
	auth authFlags
	// fetch holds the flags of fetch-code barks (barks.go).
	fetch fetchFlags
	// otel holds where traces go (trace.go).
	otel traceFlags
	// backup holds --backup-every, --backup-keep and --sqlite-sync
	// (backup.go).
	backup backupFlags
}

func (c *serveConfig) register(fs *flag.FlagSet) {
	c.storeFlags.register(fs)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8443", "HTTPS listen address")
	fs.StringVar(&c.baseURL, "base-url", "", "public base URL for Location headers and links (default https://localhost:PORT)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key file (PEM); with --tls-cert")
	fs.StringVar(&c.acmeDomain, "acme-domain", "", "obtain certificates for this domain with ACME (comma-separated for several)")
	fs.StringVar(&c.httpAddr, "http-addr", "", "optional plain-HTTP listen address that only redirects (308) to HTTPS")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "optional loopback address serving Go's profiler (/debug/pprof/) over plain HTTP")
	fs.BoolVar(&c.demo, "demo", false, "fill an empty store with demo people, dogs, garages and cars")
	fs.DurationVar(&c.accessTTL, "access-ttl", 30*time.Minute, "lifetime of access tokens")
	fs.DurationVar(&c.refreshTTL, "refresh-ttl", 24*time.Hour, "lifetime of refresh tokens")
	fs.DurationVar(&c.sessionIdle, "session-idle", 30*time.Minute, "idle time-out of cookie sessions")
	fs.DurationVar(&c.sessionMax, "session-max", 12*time.Hour, "absolute lifetime of cookie sessions")
	fs.IntVar(&c.loginRate, "login-rate", 10, "failed sign-ins allowed per minute per client address and per user name (0: no limit)")
	fs.StringVar(&c.smtpURL, "smtp-url", "", "SMTP server for bark e-mails: smtp://user:pass@host:587 (STARTTLS) or smtps://host:465; empty writes .eml files to DATA/outbox/mail")
	fs.StringVar(&c.smtpFrom, "smtp-from", "yard@localhost", "sender address of bark e-mails")
	fs.StringVar(&c.smsURL, "sms-url", "", "Twilio-style SMS API: https://ACCOUNT:TOKEN@host[/path]?from=+1555...; empty writes to DATA/outbox/sms")
	fs.StringVar(&c.fetchCmd, "fetch-command", "", "argument vector for fetch-code barks with {url} and {dir} (default: git clone, then git fetch)")
	fs.IntVar(&c.workers, "workers", 4, "bark tasks run at once by this process")
	fs.DurationVar(&c.jobLease, "job-lease", 30*time.Second, "lease of a running bark task; a task whose process died runs again after it")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&c.eventsRetention, "events-retention", events.DefaultRetention, "how long events are kept for streams to resume from")
	fs.IntVar(&c.eventsPerPerson, "events-per-person", events.DefaultPerPerson, "event streams one person may hold on this process (past it: 429)")
	fs.IntVar(&c.eventsPerProcess, "events-per-process", events.DefaultPerProcess, "event streams and bark waits this process holds (past it: 503)")
	fs.IntVar(&c.webhookWorkers, "webhook-workers", webhooks.DefaultWorkers, "webhook delivery attempts this process makes at once")
	fs.Var(&c.webhookAllowHosts, "webhook-allow-host", "HOST or HOST:PORT webhook deliveries may reach although it is not a public address, also by plain http:// (repeat or comma-separate; default none)")
	fs.IntVar(&c.searchSlots, "search-slots", 0, "car lists and searches this process computes at once; when all are taken, client addresses wait in turn (0: sixteen per core)")
	fs.IntVar(&c.searchQueue, "search-queue", 256, "car lists and searches one client address may have waiting for a slot (past it: 429)")
	fs.DurationVar(&c.carLease, "car-read-lease", store.DefaultCarLease, "PostgreSQL: the read lease of the car search index, which spares car reads a round trip while no car is written (0: none, else 300ms to 10s; every process's car writes wait for the others' leases)")
	fs.DurationVar(&c.storeWait, "store-wait", httpapi.DefaultStoreWait, "longest a request waits for the store (a free connection and its answers) before it is answered 503 (0: no bound)")
	c.auth.register(fs)
	c.fetch.register(fs)
	c.otel.register(fs)
	c.backup.register(fs)
}

// app is a built server: the store, the HTTP API and the background work.
type app struct {
	db  *store.DB
	api *httpapi.Server
	// background runs until its context ends (jobs, schedulers, purges);
	// serve waits for it on shutdown.
	background []func(ctx context.Context)
	// events streams the store's events; closed first on shutdown, so
	// open streams end and do not hold the graceful shutdown.
	events *events.Hub
	// traces exports spans (nil: traces are off); its last ones are
	// sent on close, within tracing.ShutdownTimeout.
	traces *tracing.Provider
}

// newLogger returns the JSON logger of the process.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// openStore opens and migrates the store named by the flags.
func openStore(ctx context.Context, sf storeFlags, opts ...store.Option) (*store.DB, error) {
	db, err := store.Open(ctx, sf.db, sf.data, opts...)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// newApp builds the whole server, each part once and with everything it
// needs, in this order (docs/architecture.md, "What a running server is
// made of"). It writes nothing a person would see (no user, no password):
// serve creates the first administrator only once all of it stands.
func newApp(ctx context.Context, cfg *serveConfig, logger *slog.Logger) (_ *app, err error) {
	// The store, opened and migrated.
	db, err := openStore(ctx, cfg.storeFlags, store.WithSQLiteSync(cfg.backup.sqliteSync))
	if err != nil {
		return nil, err
	}
	a := &app{db: db}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	// Traces (docs/operations.md, "Metrics and traces"): off unless an
	// OTLP endpoint is configured; the request, the bark runs and the
	// webhook deliveries start them.
	if a.traces, err = newTraces(ctx, cfg.otel, logger); err != nil {
		return nil, err
	}
	// What the parts take: nil when traces are off (a nil
	// *tracing.Provider in the interface would not be nil).
	var tr trace.TracerProvider
	if a.traces != nil {
		tr = a.traces
	}
	// The replay log of signed requests. On SQLite one process keeps it:
	// a second serve on the same file stops here, not at a signed request.
	if err := db.OpenSignatureLog(); err != nil {
		return nil, err
	}

	// Authentication: one bound on password hashing (argon2id) for the
	// whole process (docs/auth.md, "Login rate limit"), the login limiter
	// counting attempts in the store (shared by every process on it),
	// Basic, then every other scheme and the chain.
	if cfg.auth.hashConcurrency < 0 {
		return nil, usageError("--hash-concurrency must be 0 or more")
	}
	hashing := auth.NewHashGate(cfg.auth.hashConcurrency, cfg.auth.hashQueue, 0)
	limiter := auth.NewLoginLimiter(cfg.loginRate, db)
	basic := auth.NewBasic(db, limiter, hashing)
	kit, err := newAuthKit(ctx, cfg, db, limiter, basic)
	if err != nil {
		return nil, err
	}
	// The OpenID 2.0 provider (OAuth 1.0a is one of the kit's schemes).
	openID := &openid.Provider{Store: db, Box: kit.Box, Endpoint: cfg.baseURL + httpapi.OpenIDEndpoint, Now: kit.Now}

	// Barks: the notifiers and the fetcher behind the effects, and the
	// job runner with its metrics.
	effects, err := newBarkEffects(cfg, db, logger)
	if err != nil {
		return nil, err
	}
	// The Go runtime's and the process's standard metrics (go_*,
	// process_*) beside yard's own (docs/operations.md, "Metrics").
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	barks, err := newJobRunner(cfg, db, effects, registry, logger, tr)
	if err != nil {
		return nil, err
	}

	// The car search index (docs/cars.md, "The search index"): built in
	// the background at start, car lists answered by SQL until it is ready.
	index := search.New(db, logger, search.WithStoreWait(cfg.storeWait))
	registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "yard_car_reads_without_probe_total",
		Help: "Car reads answered under the read lease without asking PostgreSQL whether cars changed (docs/cars.md, \"Read leases\").",
	}, func() float64 { return float64(db.CarReadsWithoutProbe()) }))

	// Events (docs/events.md): this process's streams and waits follow
	// the store's event log through one hub.
	hub := events.New(db, events.Config{Retention: cfg.eventsRetention, PerPerson: cfg.eventsPerPerson,
		PerProcess: cfg.eventsPerProcess, Logger: logger})
	// Webhooks (docs/events.md, "Webhooks"): deliveries of the events to
	// subscriptions, woken by the hub; their bodies are rendered by the
	// API, built first with their policy.
	if cfg.webhookWorkers < 1 {
		return nil, usageError("--webhook-workers must be at least 1")
	}
	if cfg.carLease < 0 || (cfg.carLease > 0 && cfg.carLease < 300*time.Millisecond) || cfg.carLease > store.MaxCarLease {
		return nil, usageError("--car-read-lease must be 0 (none) or from 300ms to " + store.MaxCarLease.String())
	}
	if cfg.searchSlots < 0 || cfg.searchQueue < 1 {
		return nil, usageError("--search-slots must be 0 (sixteen per core) or more, --search-queue at least 1")
	}
	if err := cfg.webhookAllowHosts.checkHosts("webhook-allow-host"); err != nil {
		return nil, err
	}
	hookPolicy := &fetch.Policy{AllowHosts: cfg.webhookAllowHosts}

	// The HTTP API over all of them.
	api := httpapi.New(httpapi.Deps{
		DB: db, Auth: kit.Chain, Kit: kit, OpenID: openID,
		BaseURL: cfg.baseURL, Logger: logger, Registry: registry, Version: Version,
		Barks: barks, Cars: index, StoreWait: cfg.storeWait, Events: hub, Webhooks: webhooks.PolicyChecker{Policy: hookPolicy},
		Lists: fairgate.New(fairgate.Config{Slots: cfg.searchSlots, PerClient: cfg.searchQueue}),
		// POST /v1/backups backs up as --backup-every does, into the
		// same directory, kept by the same --backup-keep.
		Backups: &store.BackupDir{DB: db, Dir: filepath.Join(cfg.data, "backups"), Keep: cfg.backup.keep},
		Tracing: tr,
	})
	hooks := webhooks.New(webhooks.Config{DB: db, Hub: hub, Policy: hookPolicy, Render: api.RenderEvent,
		Retention: cfg.eventsRetention, Workers: cfg.webhookWorkers, Logger: logger.With("component", "webhooks"),
		Tracing: tr})

	a.api, a.events = api, hub
	a.background = []func(context.Context){
		func(ctx context.Context) { _ = hub.Run(ctx) },
		barks.Run,
		hooks.Run,
		// SQLite: checkpoint the WAL off the writer's path (see RunCheckpoints).
		func(ctx context.Context) { db.RunCheckpoints(ctx, 200*time.Millisecond) },
		index.Run,
		func(ctx context.Context) { db.HoldCarLease(ctx, cfg.carLease, logger.With("component", "car-lease")) },
		api.WatchStore, // ends the store's outages (httpapi/outage.go)
		every(time.Minute, logger, "purging expired auth state", func(ctx context.Context, _ time.Time) error { return kit.Purge(ctx) }),
		every(time.Minute, logger, "purging expired OpenID state", db.PurgeOpenID),
	}
	return a, nil
}

// every runs f every period until its context ends, logging its failures.
func every(period time.Duration, logger *slog.Logger, what string, f func(ctx context.Context, now time.Time) error) func(context.Context) {
	return func(ctx context.Context) {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if err := f(ctx, now); err != nil && ctx.Err() == nil {
					logger.Warn(what, slog.String("error", err.Error()))
				}
			}
		}
	}
}

func (a *app) close() {
	ctx, cancel := context.WithTimeout(context.Background(), tracing.ShutdownTimeout)
	defer cancel()
	_ = a.traces.Shutdown(ctx)
	a.db.Close()
}

// runServe is "yard serve": check everything, build the application
// (newApp), then serve until the context ends.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg := &serveConfig{}
	fs := newFlagSet("serve", stderr)
	cfg.register(fs)
	if err := parseNoArgs(fs, args, getenv); err != nil {
		return err
	}
	if err := cfg.otel.resolve(getenv); err != nil {
		return err
	}
	if err := cfg.backup.check(cfg.db); err != nil {
		return err
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return usageError("--tls-cert and --tls-key go together")
	}
	if cfg.acmeDomain != "" && cfg.tlsCert != "" {
		return usageError("use either --acme-domain or --tls-cert/--tls-key")
	}
	if cfg.baseURL != "" {
		// Every Location and link starts with it: it must be absolute.
		u, err := url.Parse(cfg.baseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return usageError("--base-url must be an absolute https:// URL without user, query or fragment, such as https://yard.example.com")
		}
	}
	if err := cfg.auth.check(); err != nil {
		return err
	}
	// The log's lines are written in batches (logbuf.go); whatever way
	// serve ends, the batch is written first.
	lb := newLineBuffer(stderr)
	defer lb.Close()
	logger := slog.New(flushingHandler{newLogger(lb, cfg.logLevel).Handler(), lb})

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	cfg.baseURL = strings.TrimRight(cmp.Or(cfg.baseURL, fmt.Sprintf("https://localhost:%d", ln.Addr().(*net.TCPAddr).Port)), "/")

	// Start-up checks everything before it writes anything
	// (docs/configuration.md, "Start-up checks"): the listen addresses and
	// the certificate are checked before the store is opened, and the store
	// and every other part (newApp) before the first user is created.
	var pln net.Listener
	if cfg.httpAddr != "" {
		if pln, err = net.Listen("tcp", cfg.httpAddr); err != nil {
			return err
		}
		defer pln.Close()
	}
	var dln net.Listener
	if cfg.debugAddr != "" {
		if dln, err = debugListen(cfg.debugAddr); err != nil {
			return err
		}
		defer dln.Close()
	}
	if err := store.DataDir(cfg.data); err != nil { // mode 0700 (docs/operations.md)
		return err
	}
	tlsConfig, httpHandler, err := tlsSetup(cfg, stdout)
	if err != nil {
		return err
	}

	a, err := newApp(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.close()
	if err := reportDurability(ctx, a.db, stdout, logger); err != nil {
		return err
	}
	reportTraces(cfg.otel, stdout, logger)
	if cfg.backup.every > 0 {
		a.background = append(a.background, scheduledBackups(a.db, filepath.Join(cfg.data, "backups"), cfg.backup.every, cfg.backup.keep, logger))
	}
	if err := ensureFirstAdmin(ctx, a.db, stdout); err != nil {
		return err
	}
	if cfg.demo {
		if err := seedDemo(ctx, a.db, stdout); err != nil {
			return fmt.Errorf("demo data: %w", err)
		}
	}

	srv := &http.Server{
		Handler:           a.api.Handler(),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// OPTIONS * goes to the API, which answers it with its headers
		// (httpapi.Server.serve), not to net/http's bare 200.
		DisableGeneralOptionsHandler: true,
		ConnState:                    (&newConns{perAddr: map[string]int{}, pending: map[net.Conn]string{}}).connState,
	}
	srv.RegisterOnShutdown(a.events.Close)
	errc := make(chan error, 2)
	// The server does each TLS handshake on the connection's own
	// goroutine, bounded by its shortest time-out and by newConns
	// (docs/operations.md, "Transport").
	go func() { errc <- srv.Serve(tls.NewListener(ln, tlsConfig)) }()

	var plain *http.Server
	if pln != nil {
		plain = &http.Server{Handler: httpHandler(redirectToHTTPS(cfg.baseURL)), ReadHeaderTimeout: 10 * time.Second, DisableGeneralOptionsHandler: true}
		// Every plain-HTTP answer is a redirect: one per connection, so
		// nothing pipelined behind a request of ambiguous length is read.
		plain.SetKeepAlivesEnabled(false)
		go func() { errc <- plain.Serve(pln) }()
		fmt.Fprintf(stdout, "redirecting http://%s to %s\n", pln.Addr(), cfg.baseURL)
	}
	if dln != nil {
		debug := debugServer(a.api.Metrics())
		go func() { _ = debug.Serve(dln) }()
		defer debug.Close()
		fmt.Fprintf(stdout, "profiler on http://%s/debug/pprof/, metrics on http://%[1]s/metrics\n", dln.Addr())
	}

	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	for _, f := range a.background {
		bg.Go(func() {
			defer lb.closeOnPanic()
			f(bgCtx)
		})
	}
	fmt.Fprintf(stdout, "listening on https://%s\n", ln.Addr())
	logger.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("base_url", cfg.baseURL),
		slog.String("store", a.db.String()), slog.String("version", Version))

	select {
	case <-ctx.Done():
	case err := <-errc:
		stopBackground()
		bg.Wait()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
	// Graceful shutdown: stop accepting, finish in-flight requests, then
	// stop background work, which hands running jobs back.
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	// The HTTP/1.1 event streams left the server (httpapi.Server.WaitStreams);
	// Shutdown's hub Close has cut them off.
	_ = a.api.WaitStreams(shutdownCtx)
	if plain != nil {
		_ = plain.Shutdown(shutdownCtx)
	}
	stopBackground()
	bg.Wait()
	return err
}

// redirectToHTTPS answers every plain-HTTP request with 308 to the same
// path under the HTTPS base URL. It never reads credentials.
func redirectToHTTPS(baseURL string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := baseURL + r.URL.EscapedPath()
		if !strings.HasPrefix(r.URL.EscapedPath(), "/") {
			target = baseURL + "/" // OPTIONS *: the server as a whole
		}
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		w.Header().Set("X-Request-Id", httpapi.RequestID(r))
		w.Header().Set("Location", target)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusPermanentRedirect)
		fmt.Fprintln(w, "This server speaks HTTPS only:", target)
	})
}

// aeadSuites are the TLS 1.2 cipher suites yard offers: forward-secret
// AEAD ones only, no CBC (which scanners flag for LUCKY13) and no RSA key
// exchange (docs/configuration.md). TLS 1.3's suites are all AEAD and not
// configurable.
var aeadSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// tlsSetup returns the TLS configuration of the HTTPS listener and the
// wrapper of the plain-HTTP handler (ACME answers its challenges there).
func tlsSetup(cfg *serveConfig, stdout io.Writer) (*tls.Config, func(http.Handler) http.Handler, error) {
	c := &tls.Config{}
	wrap := func(h http.Handler) http.Handler { return h }
	switch {
	case cfg.acmeDomain != "":
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      autocert.DirCache(filepath.Join(cfg.data, "acme")),
			HostPolicy: autocert.HostWhitelist(strings.Split(cfg.acmeDomain, ",")...),
		}
		c, wrap = m.TLSConfig(), m.HTTPHandler
	case cfg.tlsCert != "":
		cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS key pair: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	default:
		cert, fingerprint, created, err := selfSignedCert(filepath.Join(cfg.data, "tls"))
		if err != nil {
			return nil, nil, err
		}
		if created {
			fmt.Fprintf(stdout, "created a self-signed certificate for localhost in %s\n", filepath.Join(cfg.data, "tls"))
		}
		fmt.Fprintf(stdout, "TLS certificate SHA-256 fingerprint: %s\n", fingerprint)
		c.Certificates = []tls.Certificate{cert}
	}
	c.MinVersion, c.CipherSuites = tls.VersionTLS12, aeadSuites
	// HTTP/2 and HTTP/1.1 (what ServeTLS would add), keeping any protocol
	// c already offers (ACME's acme-tls/1).
	for _, p := range []string{"h2", "http/1.1"} {
		if !slices.Contains(c.NextProtos, p) {
			c.NextProtos = append(c.NextProtos, p)
		}
	}
	return c, wrap, nil
}
