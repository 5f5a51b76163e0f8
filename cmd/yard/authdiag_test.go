package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/store/storetest"
)

// TestServeDigestNonceTTLAndDiagnostics runs yard serve with
// --digest-nonce-ttl and --auth-diagnostics, on each engine (the Digest
// nonce counts live in the store): a nonce older than the lifetime gets
// a 401 with stale=true and a fresh nonce, with which the same
// credentials succeed; the refusals carry diagnostics by default and not
// with --auth-diagnostics=false.
func TestServeDigestNonceTTLAndDiagnostics(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewPostgresDatabase(t)
	for _, tc := range []struct {
		name string
		args []string
		diag bool
	}{
		{"sqlite", nil, true},
		{"postgres, diagnostics off", []string{"--db", dsn, "--auth-diagnostics=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			s := startInProcess(t, append([]string{"--data", data, "--digest-nonce-ttl", "2s"}, tc.args...)...)
			hc := trusting(t, data)
			ctx := context.Background()
			get := func(path string, h http.Header) (int, http.Header, map[string]any) {
				t.Helper()
				req, _ := http.NewRequest("GET", s.URL+path, nil)
				for k, v := range h {
					req.Header[k] = v
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var p map[string]any
				_ = json.Unmarshal(b, &p)
				return resp.StatusCode, resp.Header, p
			}

			d := &client.Digest{Username: "admin", Password: s.Password}
			c := client.New(s.URL, hc, d)
			if err := c.Get(ctx, "/v1/dogs", nil); err != nil {
				t.Fatal(err)
			}
			// The next request the client would send reuses its nonce.
			req, _ := http.NewRequest("GET", s.URL+"/v1/dogs", nil)
			if err := d.Apply(c, req); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2100 * time.Millisecond)
			status, h, p := get("/v1/dogs", http.Header{"Authorization": {req.Header.Get("Authorization")}})
			challenges := strings.Join(h.Values("WWW-Authenticate"), " | ")
			if status != 401 || !strings.Contains(challenges, "stale=true") {
				t.Fatalf("expired nonce: %d, challenges %q; want 401 with stale=true", status, challenges)
			}
			if got, want := p["digestField"] != nil, tc.diag; got != want {
				t.Errorf("expired nonce: digestField %v, want present %v", p["digestField"], want)
			}
			// The same credentials with the new nonce: the client retries by
			// itself.
			if err := c.Get(ctx, "/v1/dogs", nil); err != nil {
				t.Errorf("the same credentials after stale=true: %v", err)
			}

			// A refused signed request shows the canonical string or not.
			now := strconv.FormatInt(time.Now().Unix(), 10)
			status, _, p = get("/v1/dogs?timestamp="+now+"&apiKey=ak_unknown&signature="+strings.Repeat("0", 64), nil)
			if status != 401 {
				t.Fatalf("signed request: %d", status)
			}
			if got, want := p["canonicalString"] == "/v1/dogs?apikey=ak_unknown&timestamp="+now, tc.diag; got != want {
				t.Errorf("signed request: canonicalString %v, want present %v", p["canonicalString"], want)
			}
		})
	}

	// A lifetime that is not positive is a usage error.
	if _, errs, code := cli(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--digest-nonce-ttl", "0s"); code != 2 || !strings.Contains(errs, "--digest-nonce-ttl must be positive") {
		t.Errorf("--digest-nonce-ttl 0s: exit %d\n%s", code, errs)
	}
}
