package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard/conform"
	"github.com/yard-api/yard/store/storetest"
)

// conformCLI runs yard conform through run() with the password in
// YARD_ADMIN_PASSWORD and returns what it printed and its exit status.
func conformCLI(t *testing.T, password string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == "YARD_ADMIN_PASSWORD" {
			return password
		}
		return ""
	}
	err := run(context.Background(), append([]string{"conform"}, args...), env, strings.NewReader(""), &out, &errb)
	if err != nil {
		code = exitCode(err)
		errb.WriteString("yard: " + err.Error() + "\n")
	}
	return out.String(), errb.String(), code
}

// checkConformJSON reads the kit's JSON report, fails the test for every
// MUST check that did not pass and for anything left behind, and logs the
// time the kit took.
func checkConformJSON(t *testing.T, what, stdout, stderr string, code int) *conform.Report {
	t.Helper()
	var rep conform.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%s: the JSON report: %v\n%s\n%s", what, err, stdout, stderr)
	}
	for _, r := range rep.Results {
		if r.Status == conform.Failed || (r.Status == conform.Skipped && r.Level == conform.Must) {
			t.Errorf("%s: %s %s %s: %s\n%s", what, r.Status, r.ID, r.Level, r.Message, r.Exchange)
		}
	}
	if len(rep.Leftovers) > 0 {
		t.Errorf("%s: the kit left %q", what, rep.Leftovers)
	}
	if code != 0 {
		t.Errorf("%s: exit status %d, want 0\n%s", what, code, stderr)
	}
	if len(rep.Results) != len(conform.Checks()) {
		t.Errorf("%s: %d results, want one per check (%d)", what, len(rep.Results), len(conform.Checks()))
	}
	t.Logf("%s: %d passed, %d failed, %d skipped in %s", what, rep.Passed, rep.Failed, rep.Skipped, rep.Duration.Round(time.Millisecond))
	return &rep
}

// noConformLeftovers fails when the server still holds a person, dog or
// car made by a kit run (their names start with "conform-").
func noConformLeftovers(t *testing.T, base, password string) {
	t.Helper()
	for _, path := range []string{"/v1/people?max=100", "/v1/dogs?max=100", "/garages?max=100", "/cars?max=100"} {
		resp, m := call(t, "GET", base+path, "admin", password, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		items, _ := m["items"].([]any)
		for _, it := range items {
			o, _ := it.(map[string]any)
			for _, f := range []string{"name", "make"} {
				if s, _ := o[f].(string); strings.HasPrefix(s, "conform-") {
					t.Errorf("GET %s: the kit left %v", path, o)
				}
			}
		}
	}
}

// TestConformSQLite runs the whole kit, through the command line, against
// yard on SQLite with the default login rate limit: every check passes
// (the webhook checks too: the server allows the kit's loopback receiver)
// and nothing is left behind.
func TestConformSQLite(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startInProcess(t, "--data", data, "--webhook-allow-host", "127.0.0.1")
	base := publicURL(s)
	junit := filepath.Join(t.TempDir(), "conform.xml")
	start := time.Now()
	stdout, stderr, code := conformCLI(t, s.Password, "--ca", filepath.Join(data, "tls", "cert.pem"), "--json", "--junit", junit, base)
	rep := checkConformJSON(t, "SQLite", stdout, stderr, code)
	t.Logf("the kit against yard on SQLite: %s (%d checks)", time.Since(start).Round(time.Millisecond), len(rep.Results))
	if !strings.Contains(stderr, rep.Summary()) {
		t.Errorf("the report for people (standard error with --json) lacks %q:\n%s", rep.Summary(), stderr)
	}
	x, err := os.ReadFile(junit)
	if err != nil || !bytes.Contains(x, []byte(`<testsuites name="yard conform `)) || !bytes.Contains(x, []byte(`<testcase name="dogs.create"`)) {
		t.Errorf("the JUnit file: %v\n%.500s", err, x)
	}
	noConformLeftovers(t, s.URL, s.Password)
}

// balancer is a TLS front for yard processes: each request goes to the
// next process, through wrap (nil: none). Its URL is known before the
// processes start, so that they can take it as their --base-url.
type balancer struct {
	srv     *httptest.Server
	URL     string
	CAFile  string
	targets []*url.URL
	next    atomic.Uint64
}

func newBalancer(t *testing.T, wrap func(http.Handler) http.Handler) *balancer {
	t.Helper()
	b := &balancer{}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(b.targets[b.next.Add(1)%uint64(len(b.targets))])
			pr.Out.Host = pr.In.Host
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery // with its semicolons: the car grammar splits on them
		},
		Transport:     tr,
		FlushInterval: -1,
	}
	var h http.Handler = proxy
	if wrap != nil {
		h = wrap(proxy)
	}
	b.srv = httptest.NewUnstartedServer(h)
	b.srv.EnableHTTP2 = true
	b.URL = "https://" + b.srv.Listener.Addr().String()
	return b
}

// start begins serving, in front of the processes at urls.
func (b *balancer) start(t *testing.T, urls ...string) {
	t.Helper()
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		b.targets = append(b.targets, p)
	}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	b.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
	if err := os.WriteFile(b.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
}

// client trusts the balancer's certificate.
func (b *balancer) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(b.srv.Certificate())
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
}

// TestConformPostgres runs the whole kit against three yard processes on
// one PostgreSQL (one data directory: shared keys), each request going to
// the next process: a credential used at one is a replay at the next, an
// event written by one streams from another.
func TestConformPostgres(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewCluster(t).NewDatabase(t)
	data := t.TempDir()
	lb := newBalancer(t, nil)
	args := []string{"--data", data, "--db", dsn, "--base-url", lb.URL, "--webhook-allow-host", "127.0.0.1", "--auth-cache-ttl", "10ms"}
	s1 := startProcess(t, args...)
	s2 := startProcess(t, args...)
	s3 := startProcess(t, args...)
	lb.start(t, s1.URL, s2.URL, s3.URL)
	start := time.Now()
	stdout, stderr, code := conformCLI(t, s1.Password, "--ca", lb.CAFile, "--json", lb.URL)
	rep := checkConformJSON(t, "PostgreSQL, 3 processes", stdout, stderr, code)
	t.Logf("the kit against three yard processes on PostgreSQL: %s (%d checks)", time.Since(start).Round(time.Millisecond), len(rep.Results))
	noConformLeftovers(t, s2.URL, s1.Password)
}

// TestConformRefusals: bad arguments, an unreachable server and a wrong
// password each exit 2 with a clear message, and leave nothing behind.
func TestConformRefusals(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startInProcess(t, "--data", data)
	ca := filepath.Join(data, "tls", "cert.pem")
	base := publicURL(s)
	if resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "plain", "password": "plain password 1"}); resp.StatusCode != 201 {
		t.Fatalf("create a person: %d %v", resp.StatusCode, m)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := strings.Replace(dead.URL, "http://", "https://", 1)
	dead.Close()
	for _, tc := range []struct {
		name     string
		password string
		args     []string
		want     string
	}{
		{"no URL", s.Password, []string{"--ca", ca}, "the server's URL is needed"},
		{"two URLs", s.Password, []string{"--ca", ca, base, base}, "unexpected argument"},
		{"plain http", s.Password, []string{"--ca", ca, "http://localhost:1"}, "want https://"},
		{"ca and insecure", s.Password, []string{"--ca", ca, "--insecure", base}, "exclude each other"},
		{"missing CA file", s.Password, []string{"--ca", filepath.Join(data, "none.pem"), base}, "--ca"},
		{"no password", "", []string{"--ca", ca, base}, "password is needed"},
		{"unknown part", s.Password, []string{"--ca", ca, "--only", "dogs,cats", base}, `unknown part "cats"`},
		{"unknown check", s.Password, []string{"--ca", ca, "--skip", "dogs.fly", base}, `unknown check "dogs.fly"`},
		{"bad timeout", s.Password, []string{"--ca", ca, "--timeout", "soon", base}, "--timeout"},
		{"unreachable", s.Password, []string{"--insecure", deadURL}, "cannot reach"},
		{"untrusted certificate", s.Password, []string{base}, "cannot reach"},
		{"wrong password", "wrong password", []string{"--ca", ca, base}, "cannot sign in"},
		{"not an administrator", "plain password 1", []string{"--ca", ca, "--admin", "plain", base}, "is not an administrator"},
	} {
		stdout, stderr, code := conformCLI(t, tc.password, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.name, code, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%s: printed a report: %q", tc.name, stdout)
		}
	}
	noConformLeftovers(t, s.URL, s.Password)

	// A server that refuses the kit's loopback receiver (no
	// --webhook-allow-host): the checks that need deliveries are skipped
	// with the reason, the run passes.
	stdout, stderr, code := conformCLI(t, s.Password, "--ca", ca, "--only", "webhooks", base)
	if code != 0 || !strings.Contains(stdout, "SKIP webhooks.delivery webhooks MUST: the server refuses deliveries to the kit's loopback receiver") ||
		!strings.Contains(stdout, "1 passed, 0 failed, 4 skipped") {
		t.Errorf("webhooks against a server refusing loopback: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// A run that times out: the checks not started are skipped, the run
	// fails, and what it made is removed all the same.
	stdout, stderr, code = conformCLI(t, s.Password, "--ca", ca, "--only", "schedules,cars", "--timeout", "1500ms", base)
	if code != 1 || !strings.Contains(stdout, "the run's time-out (--timeout) passed before this check") || !strings.Contains(stderr, "timed out") {
		t.Errorf("a run that times out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	noConformLeftovers(t, s.URL, s.Password)

	// A run whose time-out passes while the server creates the kit's
	// first person, answered only after it: the kit lets the write
	// finish and removes the person all the same.
	slow := newBalancer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "POST" && r.URL.Path == "/v1/people" {
				w = lateHeader{w, 1500 * time.Millisecond}
			}
			h.ServeHTTP(w, r)
		})
	})
	s3 := startInProcess(t, "--data", t.TempDir(), "--base-url", slow.URL)
	slow.start(t, s3.URL)
	stdout, stderr, code = conformCLI(t, s3.Password, "--ca", slow.CAFile, "--only", "dogs", "--timeout", "1s", slow.URL)
	if code != 1 || !strings.Contains(stdout, "FAIL dogs.") {
		t.Errorf("a run timing out during a write: exit %d\n%s\n%s", code, stdout, stderr)
	}
	noConformLeftovers(t, s3.URL, s3.Password)

	// --only, --skip and exit status 1: a part run alone, one check left
	// out, and a check failing against a server whose HSTS header a front
	// removes.
	lb := newBalancer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Strict-Transport-Security", "")
			h.ServeHTTP(stripHeader{w, "Strict-Transport-Security"}, r)
		})
	})
	s2 := startInProcess(t, "--data", t.TempDir(), "--base-url", lb.URL)
	lb.start(t, s2.URL)
	stdout, stderr, code = conformCLI(t, s2.Password, "--ca", lb.CAFile, "--only", "discovery", "--skip", "discovery.openapi", lb.URL)
	if code != 1 || !strings.Contains(stdout, "FAIL discovery.hsts discovery MUST: ") || !strings.Contains(stdout, "SKIP discovery.openapi") ||
		!strings.Contains(stdout, "\ndiscovery  ") || strings.Contains(stdout, "\ndogs ") {
		t.Errorf("--only discovery against a server without HSTS: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.HasSuffix(stdout, "10 passed, 1 failed, 1 skipped ("+strings.SplitAfter(stdout, "1 skipped (")[1]) {
		t.Errorf("the summary line: %q", stdout)
	}
}

// lateHeader writes the response's status and headers after a delay.
type lateHeader struct {
	http.ResponseWriter
	delay time.Duration
}

func (l lateHeader) WriteHeader(code int) {
	time.Sleep(l.delay)
	l.ResponseWriter.WriteHeader(code)
}

func (l lateHeader) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// stripHeader removes a header just before the response is written.
type stripHeader struct {
	http.ResponseWriter
	name string
}

func (s stripHeader) WriteHeader(code int) {
	s.ResponseWriter.Header().Del(s.name)
	s.ResponseWriter.WriteHeader(code)
}

func (s stripHeader) Write(b []byte) (int, error) {
	s.ResponseWriter.Header().Del(s.name)
	return s.ResponseWriter.Write(b)
}

func (s stripHeader) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
