package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// tokenHeader decodes the protected header of a compact JWS.
func tokenHeader(t *testing.T, tok string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// thirdParty verifies an access token as another service would, with
// jwx and nothing of yard's: the JWKS fetched from the issuer over HTTPS,
// the signature, exp and iss.
func thirdParty(t *testing.T, e *authEnv, tok string) (jwt.Token, error) {
	t.Helper()
	set, err := jwk.Fetch(context.Background(), e.URL+"/.well-known/jwks.json", jwk.WithHTTPClient(e.http))
	if err != nil {
		t.Fatalf("fetch the JWKS: %v", err)
	}
	return jwt.Parse([]byte(tok), jwt.WithKeySet(set), jwt.WithValidate(true), jwt.WithIssuer(e.URL),
		jwt.WithClock(jwt.ClockFunc(e.clock.Now)))
}

// TestTokenPairAsymmetric runs the token pair signed with EdDSA and ES256
// on both engines: the access token verifies through the published JWKS
// with a third-party library; refresh, reuse detection and logout work as
// with HS256; no other algorithm or key is accepted; a verify-only server
// checks access tokens with the issuer's JWKS; and after a rotation the
// old key keeps verifying (and stays published) until its tokens expire.
func TestTokenPairAsymmetric(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"EdDSA", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
				testTokenPairAsymmetric(t, db, alg)
			})
		})
	}
}

func testTokenPairAsymmetric(t *testing.T, db *store.DB, alg string) {
	e := startAuth(t, db, func(c *auth.Config) {
		c.TokenAlg = alg
		c.AccessTTL, c.RefreshTTL = 30*time.Minute, 24*time.Hour
	})
	ctx := context.Background()
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	login := func() client.Tokens {
		t.Helper()
		res := e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": pw}})
		wantStatus(t, "login", res.StatusCode, 200)
		var p client.Tokens
		res.JSON(t, &p)
		return p
	}
	ring := e.kit.Tokens.Ring
	if ring == nil || e.kit.Tokens.Key != nil {
		t.Fatalf("the %s pair has no key ring, or an HMAC key", alg)
	}
	firstKey := ring.Active().ID

	pair := login()
	for _, tok := range []string{pair.AccessToken, pair.RefreshToken} {
		if h := tokenHeader(t, tok); h["alg"] != alg || h["kid"] != firstKey || h["typ"] != "JWT" {
			t.Errorf("token header %v, want alg %s and kid %s", h, alg, firstKey)
		}
	}

	// A third party verifies the access token with the JWKS alone.
	tok, err := thirdParty(t, e, pair.AccessToken)
	if err != nil {
		t.Fatalf("jwx does not verify the access token with the JWKS: %v", err)
	}
	var use string
	if sub, _ := tok.Subject(); sub != e.alice.ID || tok.Get("token_use", &use) != nil || use != "access" {
		t.Errorf("access token claims: sub %q token_use %q", sub, use)
	}
	set, err := jwk.Parse(e.Do(apitest.Request{Path: "/.well-known/jwks.json"}).Body)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := set.LookupKeyID(firstKey)
	if !ok {
		t.Fatalf("the JWKS lacks the pair's key %s", firstKey)
	}
	var raw any
	if err := jwk.Export(key, &raw); err != nil {
		t.Fatal(err)
	}
	switch raw.(type) {
	case ed25519.PublicKey:
		if alg != "EdDSA" {
			t.Errorf("an Ed25519 key for %s", alg)
		}
	case *ecdsa.PublicKey:
		if alg != "ES256" {
			t.Errorf("an EC key for %s", alg)
		}
	default:
		t.Errorf("the pair's key in the JWKS is a %T", raw)
	}
	if a, _ := key.Algorithm(); a.String() != alg {
		t.Errorf("the pair's key has alg %q, want %s", a, alg)
	}
	if _, ok := set.LookupKeyID(e.kit.PK.Ring.Active().ID); !ok || set.Len() != 2 {
		t.Errorf("the JWKS holds %d keys, want the public-key tokens' and the pair's", set.Len())
	}

	wantStatus(t, "access token", e.raw(t, "GET", e.dogURI, bearer(pair.AccessToken)).StatusCode, 200)
	wantStatus(t, "refresh token as access token", e.raw(t, "GET", e.dogURI, bearer(pair.RefreshToken)).StatusCode, 401)
	// Public-key tokens keep working beside the pair, and are not a pair's.
	pk, err := client.NewPKToken(ctx, e.client(nil), "alice", pw, client.PKTokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "public-key token", e.raw(t, "GET", e.dogURI, bearer(pk.Token)).StatusCode, 200)
	wantStatus(t, "public-key token at /auth/refresh", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pk.Token)}).StatusCode, 400)

	// Forgeries: the algorithm and the key are pinned.
	parts := strings.Split(pair.AccessToken, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	pubPEM, _ := auth.PublicKeyPEM(ring.Active().Public)
	hsWithPublic, _ := jws.Sign(payload, jws.WithKey(jwa.HS256(), pubPEM))
	evil := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + e.alice.ID + `","exp":9999999999,"roles":["admin"],"token_use":"access"}`))
	otherRing, err := auth.OpenKeyRing(t.TempDir(), mustAlg(t, alg), time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.KeyIDKey, firstKey) // the right kid, another key
	otherKey, _ := jws.Sign(payload, jws.WithKey(mustAlg(t, alg), otherRing.Active().Private, jws.WithProtectedHeaders(hdr)))
	for _, tc := range []struct{ name, tok string }{
		{"HS256 keyed with the public key", string(hsWithPublic)},
		{"tampered payload", parts[0] + "." + evil + "." + parts[2]},
		{"signed by another key with the pair's kid", string(otherKey)},
		{"alg none", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."},
	} {
		wantStatus(t, tc.name, e.raw(t, "GET", e.dogURI, bearer(tc.tok)).StatusCode, 401)
	}
	if _, err := thirdParty(t, e, string(otherKey)); err == nil {
		t.Error("the third party verified a token of another key")
	}

	// Refresh, reuse detection, logout.
	ref := e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair.RefreshToken)})
	wantStatus(t, "refresh", ref.StatusCode, 200)
	var pair2 client.Tokens
	ref.JSON(t, &pair2)
	wantStatus(t, "refreshed access token", e.raw(t, "GET", e.dogURI, bearer(pair2.AccessToken)).StatusCode, 200)
	reuse := e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair.RefreshToken)})
	wantStatus(t, "reused refresh token", reuse.StatusCode, 400)
	if !strings.Contains(string(reuse.Body), "/problems/refresh-token-invalid") {
		t.Errorf("reuse: %s", reuse.Body)
	}
	wantStatus(t, "newest refresh token of a revoked family", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair2.RefreshToken)}).StatusCode, 400)
	tp := &client.TokenPair{Username: "alice", Password: pw}
	c := e.client(tp)
	if err := c.Get(ctx, e.dogURI, nil); err != nil {
		t.Fatal(err)
	}
	before := tp.Tokens()
	if err := tp.Logout(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "refresh after logout", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(before.RefreshToken)}).StatusCode, 400)

	// A verify-only server with the issuer's JWKS URL checks access tokens.
	certFile := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	var vkit *auth.Kit
	v := apitest.Start(t, db, apitest.WithAuthKit(t, db, &vkit, func(c *auth.Config) {
		c.Now = e.clock.Now
		c.Limiter = auth.NewLoginLimiter(0, nil)
		c.VerifyOnly, c.JWKSURL, c.JWKSCAFile, c.TokenAlg = true, e.URL+"/.well-known/jwks.json", certFile, alg
	}))
	if vkit.Tokens != nil {
		t.Fatal("a verify-only server issues token pairs")
	}
	verifier := &authEnv{Env: v, http: e.http}
	pair = login()
	wantStatus(t, "access token at the verify-only server", verifier.raw(t, "GET", e.dogURI, bearer(pair.AccessToken)).StatusCode, 200)
	wantStatus(t, "public-key token at the verify-only server", verifier.raw(t, "GET", e.dogURI, bearer(pk.Token)).StatusCode, 200)
	wantStatus(t, "refresh token as access token at the verify-only server", verifier.raw(t, "GET", e.dogURI, bearer(pair.RefreshToken)).StatusCode, 401)
	wantStatus(t, "forged token at the verify-only server", verifier.raw(t, "GET", e.dogURI, bearer(string(otherKey))).StatusCode, 401)
	wantStatus(t, "login at the verify-only server", v.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": pw}}).StatusCode, 503)
	wantStatus(t, "refresh at the verify-only server", v.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair.RefreshToken)}).StatusCode, 503)

	// Rotation: a new key signs; the old one verifies its tokens, and
	// stays in the JWKS, until the longest of them (the refresh token)
	// has expired.
	old := login()
	e.clock.Advance(time.Minute)
	if err := ring.Rotate(); err != nil {
		t.Fatal(err)
	}
	newKey := ring.Active().ID
	fresh := login()
	if newKey == firstKey || tokenHeader(t, fresh.AccessToken)["kid"] != newKey {
		t.Fatalf("after rotation the pair is signed with %v, want the new key %s", tokenHeader(t, fresh.AccessToken)["kid"], newKey)
	}
	for _, tc := range []struct{ name, tok string }{{"old-key access token", old.AccessToken}, {"new-key access token", fresh.AccessToken}} {
		wantStatus(t, tc.name, e.raw(t, "GET", e.dogURI, bearer(tc.tok)).StatusCode, 200)
		wantStatus(t, tc.name+" at the verify-only server", verifier.raw(t, "GET", e.dogURI, bearer(tc.tok)).StatusCode, 200)
		if _, err := thirdParty(t, e, tc.tok); err != nil {
			t.Errorf("%s: the third party does not verify it: %v", tc.name, err)
		}
	}
	e.clock.Advance(23 * time.Hour)
	ref = e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(old.RefreshToken)})
	wantStatus(t, "old-key refresh token 23 hours after the rotation", ref.StatusCode, 200)
	var renewed client.Tokens
	ref.JSON(t, &renewed)
	if tokenHeader(t, renewed.RefreshToken)["kid"] != newKey {
		t.Error("a refresh after the rotation is not signed with the new key")
	}
	set, _ = jwk.Parse(e.Do(apitest.Request{Path: "/.well-known/jwks.json"}).Body)
	if _, ok := set.LookupKeyID(firstKey); !ok {
		t.Error("the old key left the JWKS while a refresh token it signed was live")
	}
	e.clock.Advance(time.Hour + 2*time.Minute)
	set, _ = jwk.Parse(e.Do(apitest.Request{Path: "/.well-known/jwks.json"}).Body)
	if _, ok := set.LookupKeyID(firstKey); ok {
		t.Error("the old key is still published after every token it signed expired")
	}
	if _, ok := set.LookupKeyID(newKey); !ok {
		t.Error("the new key is not published")
	}
	wantStatus(t, "renewed access token", e.raw(t, "GET", e.dogURI, bearer(login().AccessToken)).StatusCode, 200)
}

func mustAlg(t *testing.T, name string) jwa.SignatureAlgorithm {
	t.Helper()
	alg, err := auth.ParseTokenAlg(name)
	if err != nil {
		t.Fatal(err)
	}
	return alg
}
