package httpapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strconv"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// benchScheme is the "unauthenticated" baseline: it trusts a header and
// checks nothing, so a request costs everything but authentication.
type benchScheme struct{ p yard.Principal }

func (benchScheme) Name() string                      { return "none" }
func (benchScheme) Match(r *http.Request) bool        { return r.Header.Get("X-Bench-User") != "" }
func (benchScheme) Challenges(*http.Request) []string { return nil }
func (s benchScheme) Authenticate(*http.Request) (*yard.Principal, error) {
	p := s.p
	return &p, nil
}

// headerAuth sets fixed headers (the baseline).
type headerAuth map[string]string

func (h headerAuth) Apply(_ *client.Client, r *http.Request) error {
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return nil
}

func (headerAuth) Retry(context.Context, *client.Client, *client.Response) (bool, error) {
	return false, nil
}

// BenchmarkDogBySchemes measures requests per second of GET
// /v1/dogs/{id}/ over TLS on loopback with each scheme, in one run, beside
// a baseline that authenticates nothing. It is a load generator rather than
// a b.N loop: 64 client goroutines with kept-alive connections, 1 s per
// scheme per round, YARD_BENCH_ROUNDS rounds (default 5) interleaving the
// schemes; the figure is the median round. Client and server share the
// machine. The store is SQLite unless YARD_BENCH_ENGINE=postgres.
//
//	go test ./httpapi -run '^$' -bench DogBySchemes -benchtime 1x -v
func BenchmarkDogBySchemes(b *testing.B) {
	engine := store.SQLite
	if os.Getenv("YARD_BENCH_ENGINE") == "postgres" {
		engine = store.Postgres
	}
	db := storetest.Open(b, engine)
	var kit *auth.Kit
	env := apitest.Start(b, db, apitest.WithAuthKit(b, db, &kit, nil))
	alice := env.CreateUser("alice", pw)
	kit.Chain.Query = append([]auth.Scheme{benchScheme{yard.Principal{UserID: alice.ID, Name: "alice", Roles: alice.Roles, Scheme: "none"}}}, kit.Chain.Query...)
	resp := env.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw,
		Body: map[string]any{"name": "Rex", "email": "rex@example.org"}})
	dogURI := "/v1/dogs/" + resp.Map(b)["id"].(string) + "/"
	ctx := context.Background()
	pool := x509.NewCertPool()
	pool.AddCert(env.Server.Certificate())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64}}
	defer hc.CloseIdleConnections()
	anon := client.New(env.URL, hc, nil)

	session, err := client.NewSession(ctx, anon, "alice", pw)
	if err != nil {
		b.Fatal(err)
	}
	pk, err := client.NewPKToken(ctx, anon, "alice", pw, client.PKTokenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	signed, err := client.New(env.URL, hc, &client.Basic{Username: "alice", Password: pw}).CreateAPIKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tp := &client.TokenPair{Username: "alice", Password: pw}
	if err := tp.Login(ctx, anon); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	schemes := []struct {
		name string
		auth func() client.Authenticator // one per client goroutine
		uniq bool                        // add a unique query variable (signed requests)
	}{
		{"none", func() client.Authenticator { return headerAuth{"X-Bench-User": "alice"} }, false},
		{"basic", func() client.Authenticator { return &client.Basic{Username: "alice", Password: pw} }, false},
		{"digest", func() client.Authenticator { return &client.Digest{Username: "alice", Password: pw} }, false},
		{"session", func() client.Authenticator { return session }, false},
		{"token-pair", func() client.Authenticator { return tp }, false},
		{"pk-token", func() client.Authenticator { return pk }, false},
		{"signed", func() client.Authenticator { return &client.Signed{APIKey: signed.APIKey, Secret: signed.Secret} }, true},
	}
	rounds, per, workers := 5, time.Second, 64
	if v, err := strconv.Atoi(os.Getenv("YARD_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	// Rounds interleave the schemes so that a burst of load from other
	// processes on the machine touches them all alike; each scheme's
	// figure is its median round.
	rates := make([][]float64, len(schemes))
	for range rounds {
		for i, sc := range schemes {
			var done atomic.Int64
			stop := time.Now().Add(per)
			var wg sync.WaitGroup
			start := time.Now()
			for range workers {
				wg.Go(func() {
					c := client.New(env.URL, hc, sc.auth())
					for time.Now().Before(stop) {
						path := dogURI
						if sc.uniq {
							path += "?n=" + strconv.FormatInt(n.Add(1), 10)
						}
						resp, err := c.Do(ctx, "GET", path, nil, nil)
						if err != nil {
							b.Error(err)
							return
						}
						if resp.StatusCode != 200 {
							b.Errorf("%s: status %d: %s", sc.name, resp.StatusCode, resp.Body)
							return
						}
						done.Add(1)
					}
				})
			}
			wg.Wait()
			rates[i] = append(rates[i], float64(done.Load())/time.Since(start).Seconds())
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := median(rates[0])
	for i, sc := range schemes {
		m := median(rates[i])
		b.ReportMetric(m, sc.name+"-req/s")
		b.Logf("%-10s %8.0f req/s  %5.1f%% of none  (rounds %v)", sc.name, m, 100*m/base, rates[i])
	}
}
