package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/store/storetest"
)

// TestTokenAlgES256 runs serve --token-alg ES256 on PostgreSQL: the access
// token verifies with jwx through the served JWKS; yard keys public writes
// the pair's public key beside the public-key tokens' one, and a
// verify-only process given that file (no secret, no private key) accepts
// the access token; yard keys rotate makes a new key for both.
func TestTokenAlgES256(t *testing.T) {
	t.Parallel()
	if _, _, code := cli(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--token-alg", "RS256"); code != 2 {
		t.Errorf("--token-alg RS256: exit %d, want a usage error", code)
	}
	dsn := storetest.NewPostgresDatabase(t)
	data := t.TempDir()
	a := startProcess(t, "--data", data, "--db", dsn, "--token-alg", "ES256")
	hc := trusting(t, data)
	ctx := context.Background()
	tp := &client.TokenPair{Username: "admin", Password: a.Password}
	if err := tp.Login(ctx, client.New(a.URL, hc, nil)); err != nil {
		t.Fatal(err)
	}
	access := tp.Tokens().AccessToken
	head, _ := base64.RawURLEncoding.DecodeString(strings.Split(access, ".")[0])
	var h struct{ Alg, Kid string }
	if err := json.Unmarshal(head, &h); err != nil || h.Alg != "ES256" || h.Kid == "" {
		t.Fatalf("access token header %s", head)
	}
	if _, err := os.Stat(filepath.Join(data, "keys", "token-es256")); err != nil {
		t.Fatalf("no key directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "keys", "token-hs256.key")); err == nil {
		t.Error("an ES256 server made an HMAC token key")
	}

	// A third party: the JWKS over HTTPS and jwx.
	set, err := jwk.Fetch(ctx, a.URL+"/.well-known/jwks.json", jwk.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Parse([]byte(access), jwt.WithKeySet(set), jwt.WithValidate(true))
	if err != nil {
		t.Fatalf("jwx does not verify the access token: %v", err)
	}
	if sub, _ := tok.Subject(); sub == "" {
		t.Error("no sub")
	}

	// yard keys public: both keys, PEM; a verify-only process reads them.
	out, _, code := cli(t, "keys", "public", "--data", data)
	if code != 0 || strings.Count(out, "-----BEGIN PUBLIC KEY-----") != 2 {
		t.Fatalf("yard keys public: exit %d\n%s", code, out)
	}
	pubFile := filepath.Join(t.TempDir(), "pub.pem")
	if err := os.WriteFile(pubFile, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.LoadPublicKeys(pubFile)
	if err != nil || keys[h.Kid] == nil {
		t.Fatalf("the PEM of yard keys public lacks the pair's key %s: %v", h.Kid, err)
	}
	vdata := t.TempDir()
	v := startProcess(t, "--data", vdata, "--db", dsn, "--verify-only", "--public-key", pubFile, "--token-alg", "ES256")
	cv := client.New(v.URL, trusting(t, vdata), nil)
	resp, err := cv.Do(ctx, "GET", "/v1/people", nil, http.Header{"Authorization": {"Bearer " + access}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "access token at the verify-only process", resp.StatusCode, 200)
	if _, err := os.Stat(filepath.Join(vdata, "keys", "token-es256")); err == nil {
		t.Error("the verify-only process made token signing keys")
	}

	// yard keys rotate: a new key for public-key tokens and for the pair.
	out, _, code = cli(t, "keys", "rotate", "--data", data)
	if code != 0 || strings.Count(out, "new signing key ") != 2 || !strings.Contains(out, filepath.Join("keys", "token-es256")) {
		t.Fatalf("yard keys rotate: exit %d\n%s", code, out)
	}
	if names, _ := filepath.Glob(filepath.Join(data, "keys", "token-es256", "es256-*.pem")); len(names) != 2 {
		t.Errorf("after rotation the pair has %d keys: %v", len(names), names)
	}
}
