package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/store"
)

var authRounds = flag.Int("auth-rounds", 5, "auth group: rounds that interleave the schemes (the figure is each scheme's median round)")

var authOnly = flag.String("auth-only", "", "auth group: run only the schemes whose names contain one of these comma-separated words (the baseline always runs)")

// authGroup: GET /v1/dogs/{id}/ with every first-party scheme beside the
// same request with no credential check, on one server (the full chain of
// cmd/yard, plus the benchmark-only scheme for requests without
// credentials). Rounds interleave the schemes so that load from other
// processes on a shared machine falls on all of them alike.
func authGroup(b *bench) error {
	u, d, err := b.newUserWithDog("authbench")
	if err != nil {
		return err
	}
	path := "/v1/dogs/" + d.ID + "/"

	keyDir, err := os.MkdirTemp("", "yardbench-keys-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(keyDir)
	srv := httptest.NewUnstartedServer(nil)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	limiter := auth.NewLoginLimiter(0, nil)
	basic := auth.NewBasic(b.db, limiter, b.hashing)
	kit, err := auth.NewKit(b.ctx, auth.Config{Store: b.db, Limiter: limiter, Hashing: b.hashing, Basic: basic, KeyDir: keyDir, Issuer: srv.URL})
	if err != nil {
		return err
	}
	kit.Chain.Cookie = append(kit.Chain.Cookie, fixedPrincipal{yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}})
	api := httpapi.New(httpapi.Deps{DB: b.db, Auth: kit.Chain, Kit: kit, BaseURL: srv.URL,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), StoreWait: httpapi.DefaultStoreWait})
	srv.Config.Handler = api.Handler()

	hc := loadClient(b.concurrency)
	anon := client.New(srv.URL, hc, nil)
	session, err := client.NewSession(b.ctx, anon, u.Name, benchPassword)
	if err != nil {
		return err
	}
	tp := &client.TokenPair{Username: u.Name, Password: benchPassword}
	if err := tp.Login(b.ctx, anon); err != nil {
		return err
	}
	pk, err := client.NewPKToken(b.ctx, anon, u.Name, benchPassword, client.PKTokenOptions{})
	if err != nil {
		return err
	}
	signed, err := client.New(srv.URL, hc, &client.Basic{Username: u.Name, Password: benchPassword}).CreateAPIKey(b.ctx)
	if err != nil {
		return err
	}
	// OAuth 1.0a: a consumer, a request token the user allows (the
	// consent page's own call), and the access token it is exchanged for.
	consumer, consumerSecret, err := kit.OAuth1.RegisterConsumer(b.ctx, "yardbench", "", u.ID)
	if err != nil {
		return err
	}
	oauth := &client.OAuth1{ConsumerKey: consumer.Key, ConsumerSecret: consumerSecret}
	rt, rs, err := oauth.RequestToken(b.ctx, anon, "oob")
	if err != nil {
		return err
	}
	verifier, ok, err := kit.OAuth1.Decide(b.ctx, rt, u.ID, true)
	if err != nil || !ok {
		return fmt.Errorf("oauth: allow the request token: %v", err)
	}
	if err := oauth.AccessToken(b.ctx, anon, rt, rs, verifier); err != nil {
		return err
	}
	// Digest: one client per worker, each holding a challenge, so that each
	// reuses its nonce with a growing nonce count.
	digests := make([]*client.Digest, b.concurrency)
	for w := range digests {
		digests[w] = &client.Digest{Username: u.Name, Password: benchPassword}
		// (A request without credentials would meet the benchmark scheme:
		// a wrong bearer token draws the 401 and its challenges.)
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer x")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if ok, err := digests[w].Retry(b.ctx, anon, &client.Response{Response: resp}); !ok || err != nil {
			return fmt.Errorf("digest challenge: %v", err)
		}
	}

	with := func(a func(w int) client.Authenticator, uniq bool) func(int, int) *http.Request {
		return func(w, i int) *http.Request {
			p := path
			if uniq {
				p += "?n=" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
			}
			req, _ := http.NewRequest("GET", srv.URL+p, nil)
			if a != nil {
				_ = a(w).Apply(anon, req)
			}
			return req
		}
	}
	schemes := []struct {
		name string
		req  func(int, int) *http.Request
	}{
		{"no credential check", with(nil, false)},
		{"Basic (cached)", with(func(int) client.Authenticator { return &client.Basic{Username: u.Name, Password: benchPassword} }, false)},
		{"Digest", with(func(w int) client.Authenticator { return digests[w] }, false)},
		{"session cookie", with(func(int) client.Authenticator { return session }, false)},
		{"token pair (access JWT)", with(func(int) client.Authenticator { return tp }, false)},
		{"public-key token", with(func(int) client.Authenticator { return pk }, false)},
		{"signed request", with(func(int) client.Authenticator { return signed }, true)},
		{"OAuth 1.0a (HMAC-SHA1, fresh nonce)", with(func(int) client.Authenticator { return oauth }, false)},
	}
	if *authOnly != "" {
		kept := schemes[:1]
		for _, sc := range schemes[1:] {
			for w := range strings.SplitSeq(*authOnly, ",") {
				if w != "" && strings.Contains(sc.name, w) {
					kept = append(kept, sc)
					break
				}
			}
		}
		schemes = kept
	}
	fmt.Fprintln(b.out, "## auth: GET "+path+" per scheme")
	// Each round runs every scheme once, in a shuffled order; a scheme's
	// ratio is taken against the baseline of the same round. CPU time of
	// this process (server and load generator) per request is measured
	// too: it moves much less than throughput when other processes load
	// the machine.
	rps := make([][]float64, len(schemes))
	ratio := make([][]float64, len(schemes))
	cpu := make([][]float64, len(schemes))
	pgCPU := make([][]float64, len(schemes)) // a local PostgreSQL server's
	rng := rand.New(rand.NewPCG(1, 2))
	for r := range *authRounds {
		fmt.Fprintf(b.out, "round %d\n", r+1)
		order := rng.Perm(len(schemes))
		got := make([]float64, len(schemes))
		for _, i := range order {
			c0 := cpuTime()
			p0, pgLocal := postgresCPUTime()
			res := b.report(runLoad(b.ctx, schemes[i].name, hc, b.concurrency, b.duration, 200, schemes[i].req))
			if res.Errors > 0 {
				return fmt.Errorf("%s: %d errors", schemes[i].name, res.Errors)
			}
			got[i] = res.RPS
			rps[i] = append(rps[i], res.RPS)
			if res.Requests > 0 {
				cpu[i] = append(cpu[i], float64((cpuTime()-c0).Microseconds())/float64(res.Requests))
				if p1, ok := postgresCPUTime(); pgLocal && ok && b.db.Engine() == store.Postgres {
					pgCPU[i] = append(pgCPU[i], float64((p1-p0).Microseconds())/float64(res.Requests))
				}
			}
		}
		for i := range schemes {
			ratio[i] = append(ratio[i], got[i]/got[0])
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	withPG := len(pgCPU[0]) == *authRounds
	fmt.Fprintf(b.out, "\n| scheme | req/s (median of %d rounds) | of no credential check (median of per-round ratios) | CPU µs per request | capacity vs no check (CPU) |", *authRounds)
	if withPG {
		fmt.Fprint(b.out, " local PostgreSQL CPU µs per request |")
	}
	fmt.Fprint(b.out, "\n|---|---:|---:|---:|---:|")
	if withPG {
		fmt.Fprint(b.out, "---:|")
	}
	fmt.Fprintln(b.out)
	for i, sc := range schemes {
		fmt.Fprintf(b.out, "| %s | %.0f | %.1f%% | %.0f | %.1f%% |", sc.name, median(rps[i]), 100*median(ratio[i]), median(cpu[i]), 100*median(cpu[0])/median(cpu[i]))
		if withPG && len(pgCPU[i]) > 0 {
			fmt.Fprintf(b.out, " %.0f |", median(pgCPU[i]))
		}
		fmt.Fprintln(b.out)
	}
	fmt.Fprintln(b.out)
	return context.Cause(b.ctx)
}

// cpuTime returns the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
