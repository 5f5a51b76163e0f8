package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/store/storetest"
)

// trusting returns an HTTP client that trusts the self-signed certificate
// of a data directory.
func trusting(t *testing.T, data string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(data, "tls", "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestTwoProcessesShareAuthState runs two serve processes on one
// PostgreSQL and one data directory (shared keys), with the default
// --auth-cache-ttl: a credential used at one cannot be replayed at the
// other, and state made or ended at one holds at the other at once. A
// third, verify-only process checks public-key tokens with the JWKS.
func TestTwoProcessesShareAuthState(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewPostgresDatabase(t)
	data := t.TempDir()
	a := startProcess(t, "--data", data, "--db", dsn)
	b := startProcess(t, "--data", data, "--db", dsn)
	if a.Password == "" {
		t.Fatal("no first admin password")
	}
	hc := trusting(t, data)
	ctx := context.Background()
	admin := &client.Basic{Username: "admin", Password: a.Password}
	ca := client.New(a.URL, hc, admin)
	var dog map[string]any
	if err := ca.JSON(ctx, "POST", "/v1/dogs", map[string]any{"name": "Rex", "email": "rex@example.org"}, &dog); err != nil {
		t.Fatal(err)
	}
	dogURI := "/v1/dogs/" + dog["id"].(string) + "/"
	status := func(c *client.Client, h http.Header, path string) int {
		t.Helper()
		resp, err := c.Do(ctx, "GET", path, nil, h)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	plainA, plainB := client.New(a.URL, hc, nil), client.New(b.URL, hc, nil)

	// Signed request: the same URL at the other process is a replay.
	signed, err := ca.CreateAPIKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", a.URL+dogURI, nil)
	if err := signed.Apply(ca, req); err != nil {
		t.Fatal(err)
	}
	signedPath := req.URL.RequestURI()
	wantStatus(t, "signed at A", status(plainA, nil, signedPath), 200)
	wantStatus(t, "same signature at B", status(plainB, nil, signedPath), 401)
	// The key, deleted at B, is refused at A at once.
	req, _ = http.NewRequest("GET", a.URL+dogURI+"?again=1", nil)
	if err := signed.Apply(ca, req); err != nil {
		t.Fatal(err)
	}
	if err := client.New(b.URL, hc, admin).JSON(ctx, "DELETE", "/apikeys/"+signed.APIKey, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "a key deleted at B, used at A", status(plainA, nil, req.URL.RequestURI()), 401)

	// Digest: the same nonce count at the other process is a replay.
	d := &client.Digest{Username: "admin", Password: a.Password}
	if err := client.New(a.URL, hc, d).Get(ctx, dogURI, nil); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("GET", a.URL+dogURI, nil)
	_ = d.Apply(nil, req)
	h := http.Header{"Authorization": {req.Header.Get("Authorization")}}
	wantStatus(t, "digest at A", status(plainA, h, dogURI), 200)
	wantStatus(t, "same digest nc at B", status(plainB, h, dogURI), 401)

	// Token pair: refresh at B, reuse at A revokes the family everywhere.
	tp := &client.TokenPair{Username: "admin", Password: a.Password}
	if err := tp.Login(ctx, plainA); err != nil {
		t.Fatal(err)
	}
	first := tp.Tokens()
	if err := tp.Refresh(ctx, plainB); err != nil {
		t.Fatalf("refresh at B of a pair from A: %v", err)
	}
	wantStatus(t, "new access token at A", status(plainA, http.Header{"Authorization": {"Bearer " + tp.Tokens().AccessToken}}, dogURI), 200)
	stale := &client.TokenPair{}
	stale.SetTokens(first)
	if err := stale.Refresh(ctx, plainA); client.StatusOf(err) != 400 {
		t.Errorf("reused refresh at A: got %v, want 400", err)
	}
	if err := tp.Refresh(ctx, plainB); client.StatusOf(err) != 400 {
		t.Errorf("refresh of a revoked family at B: got %v, want 400", err)
	}

	// Session: made at A, used at B, ended at B, refused at A.
	s, err := client.NewSession(ctx, plainA, "admin", a.Password)
	if err != nil {
		t.Fatal(err)
	}
	cookie := http.Header{"Cookie": {"sessionToken=" + s.Key()}}
	wantStatus(t, "session from A at B", status(plainB, cookie, dogURI), 200)
	wantStatus(t, "session at A", status(plainA, cookie, dogURI), 200)
	if err := s.Logout(ctx, plainB); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "session ended at B, used at A at once", status(plainA, cookie, dogURI), 401)

	// Public-key token: issued by A, verified by B and by a verify-only
	// process that has only the JWKS URL.
	pk, err := client.NewPKToken(ctx, plainA, "admin", a.Password, client.PKTokenOptions{BindIP: true})
	if err != nil {
		t.Fatal(err)
	}
	bearer := http.Header{"Authorization": {"Bearer " + pk.Token}}
	wantStatus(t, "pk-token from A at B", status(plainB, bearer, dogURI), 200)
	vdata := t.TempDir()
	v := startProcess(t, "--data", vdata, "--db", dsn, "--verify-only", "--jwks", a.URL+"/.well-known/jwks.json",
		"--jwks-ca", filepath.Join(data, "tls", "cert.pem"))
	cv := client.New(v.URL, trusting(t, vdata), nil)
	wantStatus(t, "pk-token at the verify-only process", status(cv, bearer, dogURI), 200)
	if _, err := client.NewPKToken(ctx, cv, "admin", a.Password, client.PKTokenOptions{}); client.StatusOf(err) != 503 {
		t.Errorf("pk-token issued by the verify-only process: got %v, want 503", err)
	}
	if err := (&client.TokenPair{Username: "admin", Password: a.Password}).Login(ctx, cv); client.StatusOf(err) != 503 {
		t.Errorf("login at the verify-only process: got %v, want 503", err)
	}
	wantStatus(t, "JWKS of the verify-only process", status(cv, nil, "/.well-known/jwks.json"), 404)
	wantStatus(t, "bad token at the verify-only process", status(cv, http.Header{"Authorization": {"Bearer " + pk.Token + "x"}}, dogURI), 401)

	// A verify-only process given the public key as a file (yard keys public).
	var pub syncBuffer
	if err := run(ctx, []string{"keys", "public", "--data", data}, func(string) string { return "" }, nil, &pub, io.Discard); err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(t.TempDir(), "pub.pem")
	if err := os.WriteFile(pubFile, []byte(pub.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fdata := t.TempDir()
	f := startProcess(t, "--data", fdata, "--db", dsn, "--verify-only", "--public-key", pubFile)
	cf := client.New(f.URL, trusting(t, fdata), nil)
	wantStatus(t, "pk-token at a verify-only process with a key file", status(cf, bearer, dogURI), 200)
}

func wantStatus(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %d, want %d", what, got, want)
	}
}

// TestSignedReplayOnSQLite: on SQLite one serve process keeps the replay
// log of signed requests. A second serve on the same store stops at start
// and says why, and a signature used before a kill -9 is still refused
// after the restart.
func TestSignedReplayOnSQLite(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	a := startProcess(t, "--data", data)
	hc := trusting(t, data)
	ctx := context.Background()
	ca := client.New(a.URL, hc, &client.Basic{Username: "admin", Password: a.Password})
	var dog map[string]any
	if err := ca.JSON(ctx, "POST", "/v1/dogs", map[string]any{"name": "Rex", "email": "rex@example.org"}, &dog); err != nil {
		t.Fatal(err)
	}
	dogURI := "/v1/dogs/" + dog["id"].(string) + "/"
	signed, err := ca.CreateAPIKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sign := func() string {
		req, _ := http.NewRequest("GET", a.URL+dogURI, nil)
		if err := signed.Apply(ca, req); err != nil {
			t.Fatal(err)
		}
		return req.URL.RequestURI()
	}
	status := func(base, path string) int {
		t.Helper()
		resp, err := client.New(base, hc, nil).Do(ctx, "GET", path, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	used := sign()
	wantStatus(t, "signed", status(a.URL, used), 200)
	wantStatus(t, "replayed", status(a.URL, used), 401)

	// A second process on the same SQLite store stops at start.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	second := exec.CommandContext(sctx, os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data", data)
	second.Env = append(os.Environ(), "YARD_TEST_MAIN=1")
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "held by another process") {
		t.Fatalf("second serve on one SQLite store: %v\n%s", err, out)
	}

	// Killed and started again, the process still knows the signature.
	a.kill9(t)
	b := startProcess(t, "--data", data)
	wantStatus(t, "replayed after kill -9 and restart", status(b.URL, used), 401)
	wantStatus(t, "a new signature after the restart", status(b.URL, sign()), 200)
}
