package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// storeLimiter is a login limiter of limit attempts per minute whose
// counts live in db, as serve wires it.
func storeLimiter(db *store.DB, limit int) *auth.LoginLimiter {
	return auth.NewLoginLimiter(limit, db)
}

// h2Client is a client of the test server over one HTTP/2 connection, so
// that a burst of requests costs the test process no connection each.
func h2Client(e *authEnv) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(e.Server.Certificate())
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	e.T.Cleanup(c.CloseIdleConnections)
	return c
}

// rssBytes returns the resident set size of this process.
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// basicBurst sends n parallel Basic requests for user with n different
// wrong passwords to the URLs in turn and returns the count of each status.
func basicBurst(t *testing.T, c *http.Client, urls []string, user string, n int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", urls[i%len(urls)], nil)
			req.SetBasicAuth(user, fmt.Sprintf("guess number %d", i))
			<-start
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return statuses
}

// TestLoginBurst is finding 1 of the hardening review: 200 parallel
// wrong-password Basic requests for one user. Each attempt takes its place
// in the limiter before its password is hashed, so at most 10 (the limit)
// are hashed and the rest answer 429; hashing runs one at a time (the
// bound of a 2-core machine), so memory stays flat; and a bearer-token
// request keeps answering quickly meanwhile.
func TestLoginBurst(t *testing.T) {
	if os.Getenv("YARD_TEST_BURST_ALONE") == "" {
		// Resident memory belongs to the whole process: the garbage that
		// the package's earlier tests leave to the collector raises its
		// heap goal, and with it what a burst may allocate before a
		// collection. Run the burst alone in a fresh test process, as a
		// server runs it, on this process's PostgreSQL cluster (a
		// database of its own there) rather than a cluster of its own.
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoginBurst$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "YARD_TEST_BURST_ALONE=1", "YARD_TEST_POSTGRES_URL="+storetest.PostgresURL(t))
		out, err := cmd.CombinedOutput()
		t.Logf("the burst in its own process:\n%s", out)
		if err != nil {
			t.Fatalf("the burst in its own process: %v", err)
		}
		return
	}
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		// A queue as long as the limit: every attempt the limiter admits
		// waits for its hash rather than answering 503, so the statuses
		// are exactly 401 and 429 (TestHashGate covers the 503).
		gate := auth.NewHashGate(1, 16, time.Minute)
		e := startAuth(t, db, func(c *auth.Config) { c.Limiter, c.Hashing = storeLimiter(db, 10), gate })
		c := h2Client(e)
		ctx := context.Background()

		// Alice's bearer token, taken before the burst of guesses for bob.
		login := e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": pw}})
		wantStatus(t, "login", login.StatusCode, 200)
		access := login.Map(t)["access_token"].(string)
		get := func() (time.Duration, int) {
			req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+e.dogURI, nil)
			req.Header.Set("Authorization", "Bearer "+access)
			start := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return 0, 0
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return time.Since(start), resp.StatusCode
		}
		// Warm up the connection and the caches, and measure the machine
		// as it is without the burst.
		var quiet []time.Duration
		for range 300 {
			d, code := get()
			if code != 200 {
				t.Fatalf("bearer GET before the burst: %d", code)
			}
			quiet = append(quiet, d)
		}
		quietP99 := p99Of(quiet)

		runtime.GC()
		baseRSS := rssBytes(t)
		var peakRSS atomic.Int64
		peakRSS.Store(baseRSS)
		stop := make(chan struct{})
		var bg sync.WaitGroup
		bg.Go(func() { // sample the resident memory through the burst
			for {
				if r := rssBytes(t); r > peakRSS.Load() {
					peakRSS.Store(r)
				}
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		})
		var latencies []time.Duration
		bg.Go(func() { // a bearer-token reader, all through the burst
			for {
				d, code := get()
				if code != 200 {
					t.Errorf("bearer GET during the burst: %d", code)
				}
				latencies = append(latencies, d)
				select {
				case <-stop:
					return
				default:
				}
			}
		})

		hashesBefore := gate.Runs()
		statuses := basicBurst(t, c, []string{e.URL + e.dogURI}, "bob", 200)
		hashed := gate.Runs() - hashesBefore
		close(stop)
		bg.Wait()

		if hashed > 10 {
			t.Errorf("%d passwords hashed for 200 parallel guesses, want at most 10", hashed)
		}
		if statuses[401] > 10 || statuses[401]+statuses[429] != 200 {
			t.Errorf("statuses %v, want at most 10 × 401 and the rest 429", statuses)
		}
		// The bound is 100 MB. The race detector keeps shadow
		// memory for every allocation, and argon2id allocates 19 MiB per
		// hash, so a -race build is allowed 400 MiB: still a tenth of what
		// 200 unbounded hashes take (about 3.8 GB), so the test fails
		// without the limiter and the hashing bound in either build.
		limit := int64(100)
		if raceEnabled {
			limit = 400
		}
		if growth := peakRSS.Load() - baseRSS; growth > limit<<20 {
			t.Errorf("resident memory grew by %d MiB during the burst, want under %d", growth>>20, limit)
		}
		if len(latencies) < 10 {
			t.Fatalf("only %d bearer requests during the burst", len(latencies))
		}
		p99 := p99Of(latencies)
		// The bound is 50 ms for the time the burst adds. It is
		// measured faithfully, on the machine as it is:
		//   - the machine's own delay (other processes on a shared CI
		//     runner) is measured just before, without the burst, and
		//     allowed on top, so the assertion is about the burst;
		//   - the race detector slows every request several times over
		//     (and argon2id much more): a -race build allows 250 ms;
		//   - on a machine running more threads than it has cores (load
		//     average; in CI, the other test packages run beside this one),
		//     a request gets a proportionally smaller share of a core, so
		//     the bound grows by that factor.
		// Without the fix the reader waits behind 200 hashes (seconds).
		bound := 50 * time.Millisecond
		if raceEnabled {
			bound = 250 * time.Millisecond
		}
		if over := loadAverage() / float64(runtime.NumCPU()); over > 1 {
			bound = time.Duration(float64(bound) * over)
		}
		t.Logf("%d bearer GETs during the burst: p99 %v (%v without it; bound %v), max %v; statuses %v; %d hashed; RSS +%d MiB",
			len(latencies), p99, quietP99, bound, slices.Max(latencies), statuses, hashed, (peakRSS.Load()-baseRSS)>>20)
		if p99 > bound+quietP99 {
			t.Errorf("p99 of bearer GETs during the burst = %v, want under %v (+%v, the p99 without the burst; load average %.1f)", p99, bound, quietP99, loadAverage())
		}
	})
}

// loadAverage returns the one-minute load average of the machine (0 when
// unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// p99Of returns the 99th percentile of ds.
func p99Of(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// TestLoginLimitAcrossProcesses: two servers (two store pools, two
// limiters, as two processes have) on one PostgreSQL database share one
// limit, because the counts live in the store.
func TestLoginLimitAcrossProcesses(t *testing.T) {
	t.Parallel()
	gate := auth.NewHashGate(1, 32, time.Minute)
	dsn := storetest.DSN(t, store.Postgres)
	dbA, dbB := storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)
	a := startAuth(t, dbA, func(c *auth.Config) { c.Limiter, c.Hashing = storeLimiter(dbA, 10), gate })
	// The second server's users are the first's (one database).
	clock := storetest.NewClock(time.Now())
	var kitB *auth.Kit
	b := apitest.Start(t, dbB, apitest.WithAuthKit(t, dbB, &kitB, func(c *auth.Config) {
		c.Now = clock.Now
		c.Limiter, c.Hashing = storeLimiter(dbB, 10), gate
	}))

	// Sequential: ten failures on A, then B refuses even the right password.
	for i := range 10 {
		wantStatus(t, "wrong password on A", a.Do(apitest.Request{Path: a.dogURI, User: "bob", Password: fmt.Sprint("wrong ", i)}).StatusCode, 401)
	}
	res := b.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "bob", "password": pw}})
	wantStatus(t, "right password on B after ten failures on A", res.StatusCode, 429)
	if res.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}

	// Parallel: 200 guesses for another user spread over both servers.
	c := h2Client(a)
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(b.Server.Certificate())
	before := gate.Runs()
	statuses := basicBurst(t, c, []string{a.URL + a.dogURI, b.URL + a.dogURI}, "alice", 200)
	hashed := gate.Runs() - before
	// The client address is shared too: it already holds ten failures,
	// so no guess for alice may be hashed at all.
	if hashed != 0 || statuses[429] != 200 {
		t.Errorf("two servers: %d hashed, statuses %v; want 0 hashed, 200 × 429", hashed, statuses)
	}
}

// TestLoginLimitAcrossProcessesFresh: the parallel case without earlier
// failures: at most the limit is hashed over both servers together.
func TestLoginLimitAcrossProcessesFresh(t *testing.T) {
	t.Parallel()
	gate := auth.NewHashGate(1, 32, time.Minute)
	dsn := storetest.DSN(t, store.Postgres)
	var dbs []*store.DB
	for range 2 {
		db, err := store.Open(context.Background(), dsn, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	a := startAuth(t, dbs[0], func(c *auth.Config) { c.Limiter, c.Hashing = storeLimiter(dbs[0], 10), gate })
	var kitB *auth.Kit
	b := apitest.Start(t, dbs[1], apitest.WithAuthKit(t, dbs[1], &kitB, func(c *auth.Config) { c.Limiter, c.Hashing = storeLimiter(dbs[1], 10), gate }))
	c := h2Client(a)
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(b.Server.Certificate())
	before := gate.Runs()
	statuses := basicBurst(t, c, []string{a.URL + a.dogURI, b.URL + a.dogURI}, "bob", 200)
	hashed := gate.Runs() - before
	if hashed > 10 || statuses[401] > 10 || statuses[401]+statuses[429] != 200 {
		t.Errorf("two servers: %d hashed, statuses %v; want at most 10 hashed and 401, the rest 429", hashed, statuses)
	}
}

// TestXPasswordThrottled is finding 2: X-Password guesses with a
// public-key token go through the login limiter like any password.
func TestXPasswordThrottled(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		gate := auth.NewHashGate(1, 64, time.Minute)
		e := startAuth(t, db, func(c *auth.Config) { c.Limiter, c.Hashing = storeLimiter(db, 10), gate })
		res := e.Do(apitest.Request{Method: "POST", Path: "/auth/pk-token", Body: map[string]any{"username": "alice", "password": pw, "include_password_hash": true}})
		wantStatus(t, "pk-token", res.StatusCode, 200)
		tok := res.Map(t)["token"].(string)
		h := map[string]string{"Authorization": "Bearer " + tok, "X-Password": pw}
		wantStatus(t, "right X-Password", e.raw(t, "GET", e.dogURI, h).StatusCode, 200)

		// 50 parallel guesses: at most 10 hashed, the rest 429.
		before := gate.Runs()
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				code := e.raw(t, "GET", e.dogURI, map[string]string{"Authorization": "Bearer " + tok, "X-Password": fmt.Sprint("guess ", i)}).StatusCode
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if hashed := gate.Runs() - before; hashed > 10 || statuses[401] > 10 || statuses[401]+statuses[429] != 50 {
			t.Errorf("50 X-Password guesses: %d hashed, statuses %v; want at most 10 hashed and 401, the rest 429", hashed, statuses)
		}
		// Past the limit, a password not checked before is not checked.
		h["X-Password"] = pw + "!"
		wantStatus(t, "another X-Password past the limit", e.raw(t, "GET", e.dogURI, h).StatusCode, 429)
	})
}

// TestHashGate: hashing beyond the slots waits in a short queue, for a
// bounded time; beyond the queue it is refused at once with 503 and
// Retry-After, never queued without bound.
func TestHashGate(t *testing.T) {
	hold := func(g *auth.HashGate) (release func()) {
		ch, running := make(chan struct{}), make(chan struct{})
		done := make(chan struct{})
		go func() { _ = g.Do(context.Background(), func() { close(running); <-ch }); close(done) }()
		<-running
		return func() { close(ch); <-done }
	}
	busy := func(err error) bool {
		var e *yard.Error
		return yard.ErrorCode(err) == yard.EUNAVAILABLE && errors.As(err, &e) && e.RetryAfter > 0
	}

	// No queue: refused at once.
	g := auth.NewHashGate(1, 0, time.Minute)
	release := hold(g)
	start := time.Now()
	if err := g.Do(context.Background(), func() { t.Error("ran beyond the slot") }); !busy(err) || time.Since(start) > 5*time.Second {
		t.Errorf("beyond the slot without a queue: %v after %v, want 503 at once", err, time.Since(start))
	}
	release()

	// A queue place: waits, then runs.
	g = auth.NewHashGate(1, 1, time.Minute)
	release = hold(g)
	queued := make(chan error, 1)
	go func() { queued <- g.Do(context.Background(), func() {}) }()
	time.Sleep(50 * time.Millisecond)
	release()
	if err := <-queued; err != nil {
		t.Fatalf("queued hash: %v", err)
	}
	if g.Runs() != 2 {
		t.Errorf("runs %d, want 2", g.Runs())
	}

	// The wait in the queue is bounded.
	g = auth.NewHashGate(1, 1, 100*time.Millisecond)
	release = hold(g)
	if err := g.Do(context.Background(), func() { t.Error("ran beyond the slot") }); !busy(err) {
		t.Errorf("after the longest wait: %v, want 503", err)
	}
	release()
	if g.Refused() != 1 {
		t.Errorf("refused %d, want 1", g.Refused())
	}
}

// TestSignedBinding is finding 5: the optional method and bodyhash query
// variables bind a signed request; a signed GET replayed as DELETE is 401.
func TestSignedBinding(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, nil)
		created := e.Do(apitest.Request{Method: "POST", Path: "/apikeys", User: "alice", Password: pw})
		wantStatus(t, "create key", created.StatusCode, 201)
		k := created.Map(t)
		apiKey, secret := k["apiKey"].(string), k["secret"].(string)
		ts := e.clock.Now().Unix()
		sign := func(path, rawQuery string) string {
			ts++
			pairs, _ := sigbase.ParseRawQuery(rawQuery)
			pairs = append(pairs, [2]string{"timestamp", itoa(ts)}, [2]string{"apiKey", apiKey})
			q := rawQuery
			if q != "" {
				q += "&"
			}
			return path + "?" + q + "timestamp=" + itoa(ts) + "&apiKey=" + apiKey + "&signature=" + sigbase.Sign([]byte(secret), sigbase.CanonicalString(path, pairs))
		}
		send := func(method, url, body string) int {
			req, _ := http.NewRequest(method, e.URL+url, strings.NewReader(body))
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := e.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }

		// A GET signed with method=GET, replayed as DELETE: refused, and
		// the refusal does not spend the genuine GET.
		u := sign(e.dogURI, "method=GET")
		wantStatus(t, "signed GET replayed as DELETE", send("DELETE", u, ""), 401)
		wantStatus(t, "the genuine GET", send("GET", u, ""), 200)
		// Without the binding a signature is the spec's and works for any
		// method (that is the gap the binding closes).
		// The body hash: a PATCH with another body is refused.
		patch := `{"name":"Rexy"}`
		u = sign(e.dogURI, "method=PATCH&bodyhash="+hash(patch))
		wantStatus(t, "PATCH with another body", send("PATCH", u, `{"name":"Evil"}`), 401)
		wantStatus(t, "PATCH with the signed body", send("PATCH", u, patch)/100, 2)
		wantStatus(t, "upper-case bodyhash", send("GET", sign(e.dogURI, "bodyhash="+strings.ToUpper(hash(""))), ""), 401)
		wantStatus(t, "empty body bound", send("GET", sign(e.dogURI, "bodyhash="+hash("")), ""), 200)
		wantStatus(t, "two methods", send("GET", sign(e.dogURI, "method=GET&method=DELETE"), ""), 401)
		// Names are case-insensitive, as every signed query variable.
		wantStatus(t, "Method=DELETE on a GET", send("GET", sign(e.dogURI, "Method=DELETE"), ""), 401)
		// The car query grammar takes the binding variables as signed-request ones.
		wantStatus(t, "signed car list", send("GET", sign("/cars", "color=red&method=GET&bodyhash="+hash("")), ""), 200)
		// A signed page's links keep its filters, not its credentials.
		req, _ := http.NewRequest("GET", e.URL+sign("/cars", "color=red&max=1"), nil)
		resp, err := e.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if l := resp.Header.Get("Link"); resp.StatusCode != 200 || !strings.Contains(l, "color=red") ||
			strings.Contains(l, "signature=") || strings.Contains(l, "apiKey=") || strings.Contains(l, "timestamp=") {
			t.Errorf("signed car list: %d, Link %q: want its filters without the credentials", resp.StatusCode, l)
		}
		// Plain spec-style signatures keep working by default.
		wantStatus(t, "unbound PATCH by default", send("PATCH", sign(e.dogURI, ""), patch)/100, 2)

		// The OpenAPI document describes the binding variables once, in
		// the signedRequest security scheme, not on each operation.
		doc := e.Do(apitest.Request{Path: "/openapi.json"}).Map(t)
		scheme, _ := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)["signedRequest"].(map[string]any)
		vars, _ := scheme["x-yard-query-variables"].([]any)
		for _, name := range []string{"method", "bodyhash"} {
			if !slices.Contains(vars, any(name)) || !strings.Contains(scheme["description"].(string), name) {
				t.Errorf("OpenAPI: the signedRequest scheme does not describe %s (%v)", name, scheme)
			}
		}
		op := doc["paths"].(map[string]any)["/v1/dogs/{dog_id}/"].(map[string]any)["delete"].(map[string]any)
		if params, _ := op["parameters"].([]any); len(params) != 1 {
			t.Errorf("OpenAPI: DELETE /v1/dogs/{dog_id}/ has parameters %v, want dog_id alone", params)
		}

		// --signed-require-binding: unsafe methods must bind both.
		e.kit.Signed.RequireBinding = true
		wantStatus(t, "unbound PATCH with binding required", send("PATCH", sign(e.dogURI, ""), patch), 401)
		wantStatus(t, "method only", send("PATCH", sign(e.dogURI, "method=PATCH"), patch), 401)
		wantStatus(t, "bound PATCH with binding required", send("PATCH", sign(e.dogURI, "method=PATCH&bodyhash="+hash(patch)), patch)/100, 2)
		wantStatus(t, "unbound GET with binding required", send("GET", sign(e.dogURI, ""), ""), 200)
	})
}

// TestTwoAuthorizationHeaders: which of two would count is ambiguous: 400.
func TestTwoAuthorizationHeaders(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	for _, path := range []string{e.dogURI, "/cars", "/auth/refresh"} {
		method := "GET"
		if path == "/auth/refresh" {
			method = "POST"
		}
		req, _ := http.NewRequest(method, e.URL+path, nil)
		req.Header.Add("Authorization", "Basic "+basicValue("alice", pw))
		req.Header.Add("Authorization", "Basic "+basicValue("bob", pw))
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantStatus(t, "two Authorization headers on "+path, resp.StatusCode, 400)
		if resp.Header.Get("Content-Type") != "application/problem+json" || !bytes.Contains(body, []byte("Authorization")) {
			t.Errorf("%s: %s %s", path, resp.Header.Get("Content-Type"), body)
		}
	}
}

// TestSessionIdleFollowsTimeout is finding 8: with a 3 s idle time-out, a
// session used every second lives on (to its absolute lifetime), and one
// left alone for 4 s ends.
func TestSessionIdleFollowsTimeout(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.SessionIdle = 3 * time.Second; c.SessionMax = 15 * time.Second })
		login := func() string {
			res := e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice", "password": pw}})
			wantStatus(t, "sign in", res.StatusCode, 201)
			return res.Map(t)["key"].(string)
		}
		use := func(key string) int {
			return e.raw(t, "GET", e.dogURI, map[string]string{"Cookie": auth.SessionCookie + "=" + key}).StatusCode
		}
		busy := login()
		for i := range 12 {
			e.clock.Advance(time.Second)
			if got := use(busy); got != 200 {
				t.Fatalf("session used every second: %d at +%d s", got, i+1)
			}
		}
		e.clock.Advance(3 * time.Second) // 15 s: the absolute lifetime
		wantStatus(t, "session past its absolute lifetime", use(busy), 401)

		idle := login()
		wantStatus(t, "fresh session", use(idle), 200)
		e.clock.Advance(2900 * time.Millisecond)
		wantStatus(t, "session idle 2.9 s", use(idle), 200)
		e.clock.Advance(2900 * time.Millisecond)
		wantStatus(t, "session idle 2.9 s again", use(idle), 200)
		e.clock.Advance(4 * time.Second)
		wantStatus(t, "session left alone for 4 s", use(idle), 401)
	})
}

// TestNoSecretEchoed is finding 10: the sign-in endpoints read JSON and
// forms (a body without a Content-Type, or a JSON object sent as a form as
// curl -d does, by its shape), answer anything else with 415, and no
// problem ever carries a credential's value, whatever the content type.
func TestNoSecretEchoed(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	const secret = "Zq9-never-echo-this-Secret"
	bodies := map[string]string{
		"json":              `{"username":"alice","password":"` + secret + `"}`,
		"json extra":        `{"username":"alice","password":"` + secret + `","remember":true}`,
		"json bad type":     `{"username":"alice","password":["` + secret + `"]}`,
		"json unquoted":     `{"username":"alice","password":` + secret + `}`,
		"json truncated":    `{"username":"alice","password":"` + secret,
		"json in key":       `{"username":"alice","` + secret + `":"x"}`,
		"json twice":        `{"username":"alice","password":"` + secret + `","password":"` + secret + `"}`,
		"json wrong":        `{"username":"alice","password":"` + secret + `x"}`,
		"form":              "username=alice&password=" + secret,
		"form extra":        "username=alice&password=" + secret + "&" + secret + "=1",
		"form repeated":     "username=alice&password=" + secret + "&password=" + secret,
		"form bad escape":   "username=alice&password=" + secret + "%zz",
		"text":              "alice:" + secret,
		"xml":               "<login><username>alice</username><password>" + secret + "</password></login>",
		"multipart-looking": "--b\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\n" + secret + "\r\n--b--\r\n",
	}
	types := []string{"", "application/json", "application/json; charset=utf-8", "application/json; charset=latin1",
		"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=b", "application/xml", "garbage/;;"}
	for _, path := range []string{"/sessions", "/auth/login", "/auth/pk-token"} {
		for name, body := range bodies {
			for _, ct := range types {
				req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(body))
				if ct != "" {
					req.Header.Set("Content-Type", ct)
				}
				resp, err := e.Client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				what := fmt.Sprintf("POST %s %s as %q", path, name, ct)
				if resp.StatusCode >= 400 && bytes.Contains(got, []byte(secret[3:15])) {
					t.Errorf("%s: %d echoes the password: %s", what, resp.StatusCode, got)
				}
				if resp.StatusCode >= 500 {
					t.Errorf("%s: %d %s", what, resp.StatusCode, got)
				}
			}
		}
	}

	// What each content type is answered with, for the right password.
	goodJSON := `{"username":"alice","password":"` + pw + `"}`
	for _, c := range []struct {
		ct, body string
		want     int
	}{
		{"", goodJSON, 200}, // by its shape
		{"application/x-www-form-urlencoded", goodJSON, 200}, // curl -d '{...}'
		{"application/x-www-form-urlencoded", "username=alice&password=" + strings.ReplaceAll(pw, " ", "+"), 200},
		{"", "username=alice&password=" + strings.ReplaceAll(pw, " ", "+"), 200},
		{"application/json", goodJSON, 200},
		{"text/plain", goodJSON, 415},
		{"application/xml", goodJSON, 415},
		{"multipart/form-data; boundary=b", goodJSON, 415},
		{"application/json; charset=latin1", goodJSON, 415},
		{"", "alice " + pw, 415},
	} {
		req, _ := http.NewRequest("POST", e.URL+"/auth/login", strings.NewReader(c.body))
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wantStatus(t, fmt.Sprintf("/auth/login with %q and %.20q", c.ct, c.body), resp.StatusCode, c.want)
	}
}

func basicValue(user, pass string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// TestCredentialChangesAcrossProcesses: a password change, a revoked
// session, a deleted API key and a disabled user stop working at once on
// the server that made the change, and within the auth cache TTL on
// another server on the same store, although that one had just verified
// and remembered each of them. The other server's clock is a test clock,
// moved on by the TTL.
func TestCredentialChangesAcrossProcesses(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	dsn := storetest.DSN(t, store.Postgres)
	var dbs []*store.DB
	for range 2 {
		db, err := store.Open(context.Background(), dsn, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	keys := t.TempDir() // processes share DATA/keys
	mod := func(c *auth.Config) { c.Now = time.Now; c.CacheTTL = ttl; c.KeyDir = keys }
	a := startAuth(t, dbs[0], mod)
	a.CreateUser("root", pw, "admin")
	var kitB *auth.Kit
	clockB := storetest.NewClock(time.Now())
	b := apitest.Start(t, dbs[1], apitest.WithAuthKit(t, dbs[1], &kitB, func(c *auth.Config) {
		mod(c)
		c.Now = clockB.Now
		if c.Basic != nil {
			c.Basic.Now = clockB.Now
		}
	}))
	bRaw := func(method, path string, h map[string]string) int {
		req, _ := http.NewRequest(method, b.URL+path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// refusedWithin checks that B refuses once the TTL has passed on its
	// clock.
	refusedWithin := func(what string, status func() int) {
		t.Helper()
		clockB.Advance(ttl)
		if got := status(); got == 200 {
			t.Errorf("%s: still accepted by the other server %v after the change", what, ttl)
		}
	}
	basic := func(user, pass string) map[string]string {
		return map[string]string{"Authorization": "Basic " + basicValue(user, pass)}
	}

	// A password change made on A.
	wantStatus(t, "bob's Basic on B", bRaw("GET", "/v1/dogs", basic("bob", pw)), 200)
	wantStatus(t, "bob's Basic on A", a.Do(apitest.Request{Path: "/v1/dogs", User: "bob", Password: pw}).StatusCode, 200)
	bob, _ := dbs[0].FindUserByName(context.Background(), "bob")
	wantStatus(t, "bob changes his password on A", a.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + bob.ID, User: "bob", Password: pw,
		Headers: map[string]string{"Content-Type": "application/merge-patch+json"}, Body: map[string]string{"password": "bob's new password"}}).StatusCode/100, 2)
	wantStatus(t, "bob's old password on A at once", a.Do(apitest.Request{Path: "/v1/dogs", User: "bob", Password: pw}).StatusCode, 401)
	refusedWithin("bob's old password", func() int { return bRaw("GET", "/v1/dogs", basic("bob", pw)) })

	// A session revoked on A.
	res := b.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice", "password": pw}})
	wantStatus(t, "alice signs in on B", res.StatusCode, 201)
	key := res.Map(t)["key"].(string)
	cookie := map[string]string{"Cookie": auth.SessionCookie + "=" + key}
	wantStatus(t, "alice's session on B", bRaw("GET", a.dogURI, cookie), 200)
	wantStatus(t, "alice's session on A", a.raw(t, "GET", a.dogURI, cookie).StatusCode, 200)
	wantStatus(t, "sign out on A", a.Do(apitest.Request{Method: "DELETE", Path: "/sessions/" + key}).StatusCode, 204)
	wantStatus(t, "the session on A at once", a.raw(t, "GET", a.dogURI, cookie).StatusCode, 401)
	refusedWithin("a revoked session", func() int { return bRaw("GET", a.dogURI, cookie) })

	// An API key deleted on A.
	created := a.Do(apitest.Request{Method: "POST", Path: "/apikeys", User: "alice", Password: pw})
	wantStatus(t, "create key", created.StatusCode, 201)
	k := created.Map(t)
	apiKey, secret := k["apiKey"].(string), k["secret"].(string)
	n := 0
	signed := func() string { // a fresh signature each time
		n++
		ts := itoa(time.Now().Unix())
		q := "n=" + itoa(int64(n))
		pairs, _ := sigbase.ParseRawQuery(q + "&timestamp=" + ts + "&apiKey=" + apiKey)
		return a.dogURI + "?" + q + "&timestamp=" + ts + "&apiKey=" + apiKey + "&signature=" + sigbase.Sign([]byte(secret), sigbase.CanonicalString(a.dogURI, pairs))
	}
	wantStatus(t, "signed on B", bRaw("GET", signed(), nil), 200)
	wantStatus(t, "delete the key on A", a.Do(apitest.Request{Method: "DELETE", Path: "/apikeys/" + apiKey, User: "alice", Password: pw}).StatusCode, 204)
	wantStatus(t, "the deleted key on A at once", a.raw(t, "GET", signed(), nil).StatusCode, 401)
	refusedWithin("a deleted API key", func() int { return bRaw("GET", signed(), nil) })

	// A user disabled on A: Basic and a bearer token on B.
	login := b.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": pw}})
	wantStatus(t, "alice logs in on B", login.StatusCode, 200)
	bearer := map[string]string{"Authorization": "Bearer " + login.Map(t)["access_token"].(string)}
	wantStatus(t, "alice's token on B", bRaw("GET", a.dogURI, bearer), 200)
	wantStatus(t, "alice's Basic on B", bRaw("GET", a.dogURI, basic("alice", pw)), 200)
	wantStatus(t, "disable alice on A", a.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + a.alice.ID, User: "root", Password: pw,
		Headers: map[string]string{"Content-Type": "application/merge-patch+json"}, Body: map[string]bool{"disabled": true}}).StatusCode/100, 2)
	wantStatus(t, "alice's Basic on A at once", a.Do(apitest.Request{Path: a.dogURI, User: "alice", Password: pw}).StatusCode, 401)
	refusedWithin("a disabled user's token", func() int { return bRaw("GET", a.dogURI, bearer) })
	refusedWithin("a disabled user's Basic", func() int { return bRaw("GET", a.dogURI, basic("alice", pw)) })
}
