// Package bench measures yard on loopback (docs/benchmarks.md): TestYardbench
// starts the API in this process on a real TLS listener over a real store,
// drives it with a closed-loop load generator, and prints requests per
// second and latency percentiles beside a ceiling (a bare net/http handler
// on the same TLS setup), all in one run so the ratios are comparable. It
// runs only when -groups names the scenario groups:
//
//	go test ./bench -run TestYardbench -timeout 0 -v -args -groups foundation [-duration 5s] [-concurrency 16] [-db sqlite|postgres://...]
//
// or from a test binary built once:
//
//	go test -c -o /tmp/yardbench ./bench
//	/tmp/yardbench -test.run TestYardbench -test.timeout 0 -groups barks [-duration 5s] ...
//
// The same binary is the programs scripts/bench-http and scripts/bench-backup
// start beside yard serve (the TLS ceiling, the request paths, the backup
// writers), chosen by YARDBENCH_TOOL (tools):
//
//	YARDBENCH_TOOL=paths /tmp/yardbench -workload pages -n 200000 -seed 1 > pages.txt
package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/store"
)

// The flags of the benchmark (after go test's -args); each group's own
// flags are beside the group.
var (
	which         = flag.String("groups", "", "comma-separated scenario groups to run (none: the benchmark is skipped): "+strings.Join(groupNames(), ", "))
	dur           = flag.Duration("duration", 5*time.Second, "length of each scenario")
	conc          = flag.Int("concurrency", 16, "concurrent clients")
	dsn           = flag.String("db", "sqlite", "store: sqlite (temporary file) or a postgres:// URL of an empty database")
	cpuprofile    = flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	eventRounds   = flag.Int("event-rounds", 4, "events group: rounds, each with and without the streams (even: as many start with the streams as without)")
	streamProto   = flag.String("streams", "http1", "events group: http1 (a connection per stream) or h2 (a person's streams on one HTTP/2 connection)")
	eventProfiles = flag.String("event-profiles", "", "events group: write a CPU profile of each round's accepts (beside the renames) without and with the streams into this directory, as without-N.prof and with-N.prof (not with -cpuprofile)")
	otherServer   = flag.Bool("event-other-server", true, "events group on PostgreSQL: half the streams on a second server over its own connections, as another process (false: all on the one server the writes and accepts go to)")
	sqliteSync    = flag.String("sqlite-sync", store.DefaultSQLiteSync, "SQLite's synchronous, as serve's --sqlite-sync: full or normal")
)

// bench is the shared state of a run.
type bench struct {
	ctx         context.Context
	db          *store.DB
	dsn         string
	duration    time.Duration
	concurrency int
	out         io.Writer
	results     []result
	// hashing bounds the password hashes of every server the groups
	// start, as serve's one gate does.
	hashing *auth.HashGate
	// streamProto is how the events group's streams connect: http1 or h2.
	streamProto string
	// otherServer: on PostgreSQL, the events group serves half the streams
	// from a second server, as another process would.
	otherServer bool
	eventRounds int // events group: rounds, each with and without the streams
	// eventProfiles: a directory where the events group writes a CPU
	// profile of each round's accepts without and with the streams.
	eventProfiles string
	settleWarned  bool // settle said once why it could not
}

// groups is the table of scenario groups: -groups names them.
func groups() map[string]func(b *bench) error {
	return map[string]func(b *bench) error{
		"foundation":   foundation,
		"auth":         authGroup,
		"barks":        func(b *bench) error { return barks(b, true) },
		"barks-accept": func(b *bench) error { return barks(b, false) },
		"cars":         carsGroup,
		"carsearch":    carSearchGroup,
		"carwrites":    carWritesGroup,
		"events":       eventsGroup,
		"webhooks":     webhooksGroup,
	}
}

// tools is the table of the programs the scripts run through this binary:
// YARDBENCH_TOOL names one, which reads its own flags from the command
// line (the test flags are not parsed).
func tools() map[string]func(args []string) {
	return map[string]func(args []string){
		"bare":   bareServer,    // scripts/bench-http's ceiling
		"paths":  writePaths,    // scripts/bench-http's request paths
		"backup": backupWriters, // scripts/bench-backup's writers
	}
}

// TestMain runs the stream client of the events group when this binary is
// started again as that group's child process (YARDBENCH_STREAMS set), the
// program of tools that YARDBENCH_TOOL names, and the tests otherwise.
func TestMain(m *testing.M) {
	if urls := os.Getenv("YARDBENCH_STREAMS"); urls != "" {
		streamClient(urls)
		return
	}
	if name := os.Getenv("YARDBENCH_TOOL"); name != "" {
		tool, ok := tools()[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "bench: YARDBENCH_TOOL=%s: not one of bare, paths, backup\n", name)
			os.Exit(2)
		}
		tool(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

// TestYardbench runs the scenario groups -groups names, printing their
// table to standard output; without -groups it is skipped.
func TestYardbench(t *testing.T) {
	if *which == "" {
		t.Skip("a load benchmark: run it with -args -groups NAME,... (docs/benchmarks.md)")
	}
	if err := run(strings.Split(*which, ",")); err != nil {
		t.Fatalf("yardbench: %v", err)
	}
}

// run runs the named groups over a new store.
func run(names []string) error {
	for _, g := range names {
		if _, ok := groups()[g]; !ok {
			return fmt.Errorf("unknown group %q (groups: %s)", g, strings.Join(groupNames(), ", "))
		}
	}
	if *eventProfiles != "" && *cpuprofile != "" {
		return errors.New("-event-profiles and -cpuprofile: one profile at a time")
	}
	if *eventRounds < 1 {
		return fmt.Errorf("-event-rounds: at least 1, not %d", *eventRounds)
	}
	if *streamProto != "http1" && *streamProto != "h2" {
		return fmt.Errorf("-streams: http1 or h2, not %q", *streamProto)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "yardbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, *dsn, dir, store.WithSQLiteSync(*sqliteSync), store.WithCarReadBatching(*carsBatch))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	// SQLite: checkpoint the WAL off the writer's path, as yard serve does
	// (store.RunCheckpoints); YARD_BENCH_NO_CHECKPOINTER=1 shows what it
	// saves.
	if os.Getenv("YARD_BENCH_NO_CHECKPOINTER") == "" {
		checkpoints, stop := context.WithCancel(ctx)
		defer stop()
		go db.RunCheckpoints(checkpoints, 200*time.Millisecond)
	}
	// The argon2id baselines measure the hash itself: one slot per core
	// and a queue as long as any run needs, where serve bounds it
	// (docs/auth.md, "Login rate limit") and would answer 503.
	b := &bench{ctx: ctx, db: db, dsn: *dsn, duration: *dur, concurrency: *conc, out: os.Stdout,
		hashing: auth.NewHashGate(runtime.GOMAXPROCS(0), 1<<16, time.Hour), streamProto: *streamProto, otherServer: *otherServer, eventRounds: *eventRounds, eventProfiles: *eventProfiles}
	durability, err := db.Durability(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("yardbench: %s, %d CPUs, GOMAXPROCS %d, %s, store %s (%s), %d clients, %s per scenario\n\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOARCH, db.Engine(), durability.Setting, *conc, *dur)
	for _, g := range names {
		if err := groups()[g](b); err != nil {
			return err
		}
	}
	return nil
}

func groupNames() []string {
	var n []string
	for k := range groups() {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// report prints a result and keeps it.
func (b *bench) report(r result) result {
	fmt.Fprintln(b.out, r)
	b.results = append(b.results, r)
	return r
}

// ratio prints a line comparing two results.
func (b *bench) ratio(what string, num, den result) {
	if den.RPS > 0 {
		fmt.Fprintf(b.out, "  %s: %.1f%% (%.0f / %.0f req/s)\n", what, 100*num.RPS/den.RPS, num.RPS, den.RPS)
	}
}

// serve starts h on a TLS listener on 127.0.0.1 and returns its URL.
func serve(h http.Handler) (string, func()) {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	return srv.URL, srv.Close
}

// ceiling measures a bare net/http handler that returns a fixed JSON body
// of about the same size as body.
func (b *bench) ceiling(name string, body []byte) result {
	url, stop := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer stop()
	client := loadClient(b.concurrency)
	return b.report(runLoad(b.ctx, name, client, b.concurrency, b.duration, 200, func(int, int) *http.Request {
		req, _ := http.NewRequest("GET", url+"/fixed", nil)
		return req
	}))
}

// fixedPrincipal is a benchmark-only scheme that authenticates every
// request as one user without checking anything: it measures the request
// path without the cost of verifying credentials.
type fixedPrincipal struct{ p yard.Principal }

func (f fixedPrincipal) Name() string                      { return "fixed" }
func (f fixedPrincipal) Match(r *http.Request) bool        { return true }
func (f fixedPrincipal) Challenges(*http.Request) []string { return nil }
func (f fixedPrincipal) Authenticate(*http.Request) (*yard.Principal, error) {
	p := f.p
	return &p, nil
}

// uncachedBasic checks Basic credentials against argon2id on every
// request: no cache and no sharing of concurrent verifications.
type uncachedBasic struct{ *auth.Basic }

func (u uncachedBasic) Authenticate(r *http.Request) (*yard.Principal, error) {
	user, pass, _ := r.BasicAuth()
	return auth.VerifyUserPassword(r.Context(), u.Hashing, u.Users, user, pass)
}

// apiServer starts the API over the bench store with the given chain.
func (b *bench) apiServer(chain *auth.Chain, basic *auth.Basic) (string, func()) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	srv := httptest.NewUnstartedServer(nil)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	api := httpapi.New(httpapi.Deps{DB: b.db, Auth: chain, BaseURL: srv.URL, Logger: logger, StoreWait: httpapi.DefaultStoreWait})
	srv.Config.Handler = api.Handler()
	return srv.URL, srv.Close
}

// benchPassword is the password of every user a group creates.
const benchPassword = "benchmark password"

// newUser creates a user (role user) with benchPassword.
func (b *bench) newUser(name string) (*yard.User, error) {
	creds, err := auth.NewCredentials(name, benchPassword)
	if err != nil {
		return nil, err
	}
	u := &yard.User{Name: name, Roles: []string{yard.RoleUser}}
	if err := b.db.CreateUser(b.ctx, u, creds); err != nil {
		return nil, err
	}
	return u, nil
}

// newUserWithDog creates a user as newUser does and a dog, Rex, of theirs.
func (b *bench) newUserWithDog(name string) (*yard.User, *yard.Dog, error) {
	u, err := b.newUser(name)
	if err != nil {
		return nil, nil, err
	}
	d := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: u.ID}
	if err := b.db.CreateDog(b.ctx, d); err != nil {
		return nil, nil, err
	}
	return u, d, nil
}

// foundation: GET /v1/dogs/{id}/ without credential checks, with Basic
// (cached), and with Basic verifying argon2id on every request, beside the
// ceiling.
func foundation(b *bench) error {
	u, d, err := b.newUserWithDog("bench")
	if err != nil {
		return err
	}
	path := "/v1/dogs/" + d.ID + "/"
	fmt.Fprintln(b.out, "## foundation: GET "+path)
	ceil := b.ceiling("ceiling: bare net/http, fixed JSON", []byte(`{"id":"`+d.ID+`","name":"Rex","email":"rex@example.org","owner":"`+u.ID+`","barkCount":0,"barkEffect":"record","codeUrl":"","codeRevision":""}`+"\n"))

	get := func(url string, basicAuth bool) func(int, int) *http.Request {
		return func(int, int) *http.Request {
			req, _ := http.NewRequest("GET", url+path, nil)
			if basicAuth {
				req.SetBasicAuth("bench", benchPassword)
			}
			return req
		}
	}
	client := loadClient(b.concurrency)

	url, stop := b.apiServer(&auth.Chain{Cookie: []auth.Scheme{fixedPrincipal{yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}}}}, nil)
	noAuth := b.report(runLoad(b.ctx, "GET dog, no credential check", client, b.concurrency, b.duration, 200, get(url, false)))
	stop()

	basic := auth.NewBasic(b.db, auth.NewLoginLimiter(0, nil), b.hashing)
	url, stop = b.apiServer(&auth.Chain{Header: []auth.Scheme{basic}}, basic)
	cached := b.report(runLoad(b.ctx, "GET dog, Basic (cached)", client, b.concurrency, b.duration, 200, get(url, true)))
	stop()

	url, stop = b.apiServer(&auth.Chain{Header: []auth.Scheme{uncachedBasic{basic}}}, nil)
	uncached := b.report(runLoad(b.ctx, "GET dog, Basic (argon2id every request)", client, b.concurrency, b.duration, 200, get(url, true)))
	stop()

	fmt.Fprintln(b.out)
	b.ratio("Basic (cached) / ceiling", cached, ceil)
	b.ratio("no credential check / ceiling", noAuth, ceil)
	if uncached.RPS > 0 {
		fmt.Fprintf(b.out, "  Basic cache speed-up: %.0fx (%.0f / %.0f req/s)\n", cached.RPS/uncached.RPS, cached.RPS, uncached.RPS)
	}
	fmt.Fprintln(b.out)
	return nil
}
