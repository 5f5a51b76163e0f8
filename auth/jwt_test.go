package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

func TestJWTAlgorithmPinned(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	c := &Claims{Subject: "u1", Expires: time.Now().Add(time.Hour).Unix(), Use: UseAccess}

	hs, err := signJWT(c, jwa.HS256(), key, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := verifyJWT(hs, jwa.HS256(), key); err != nil || got.Subject != "u1" {
		t.Fatalf("verify HS256 = %v, %v", got, err)
	}
	ed, err := signJWT(c, jwa.EdDSA(), priv, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := peekHeader(ed); h.Alg != "EdDSA" || h.Kid != "k1" {
		t.Errorf("header = %+v", h)
	}

	// Algorithm confusion: an HS256 token keyed with the public Ed25519 key.
	confused, err := signJWT(c, jwa.HS256(), []byte(pub), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyJWT(confused, jwa.HS256(), key); err == nil {
		t.Error("HS256 token keyed with the public key verified")
	}
	if _, err := verifyJWT(confused, jwa.EdDSA(), pub); err == nil {
		t.Error("HS256 token verified as EdDSA")
	}
	if _, err := verifyJWT(ed, jwa.HS256(), key); err == nil {
		t.Error("EdDSA token verified as HS256")
	}

	// alg none.
	parts := strings.Split(hs, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	if _, err := verifyJWT(none, jwa.HS256(), key); err == nil {
		t.Error("alg none verified")
	}
	// Tampered payload.
	evil := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"admin","exp":9999999999,"token_use":"access"}`))
	if _, err := verifyJWT(parts[0]+"."+evil+"."+parts[2], jwa.HS256(), key); err == nil {
		t.Error("tampered token verified")
	}
	for _, bad := range []string{"", "a.b", "a.b.c.d", "a b.c.d", hs + "=", `{"payload":"x"}`} {
		if _, err := peekHeader(bad); err == nil {
			t.Errorf("peekHeader(%q) accepted", bad)
		}
	}
}

func TestKeyRingRotation(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	ring, err := OpenKeyRing(dir, jwa.EdDSA(), time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	first := ring.Active()
	now = now.Add(24 * time.Hour)
	if err := ring.Rotate(); err != nil {
		t.Fatal(err)
	}
	second := ring.Active()
	if second.ID == first.ID {
		t.Fatal("rotation kept the key")
	}
	// A second process on the same directory sees both keys.
	other, err := OpenKeyRing(dir, jwa.EdDSA(), time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	if other.Active().ID != second.ID {
		t.Errorf("other process signs with %s, want %s", other.Active().ID, second.ID)
	}
	jwks, err := JWKS(ring)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseJWKS(jwks)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := keys[first.ID]; !ok || len(keys) != 2 {
		t.Errorf("JWKS during the overlap has %d keys, want both", len(keys))
	}
	if _, ok := ring.PublicKey(t.Context(), first.ID); !ok {
		t.Error("old key stopped verifying during the overlap")
	}
	now = now.Add(2 * time.Hour)
	if _, ok := ring.PublicKey(t.Context(), first.ID); ok {
		t.Error("old key still verifies after the overlap")
	}
	if err := ring.Prune(); err != nil {
		t.Fatal(err)
	}
	if err := other.Reload(); err != nil {
		t.Fatal(err)
	}
	jwks, _ = JWKS(other)
	keys, _ = ParseJWKS(jwks)
	if _, ok := keys[second.ID]; !ok || len(keys) != 1 {
		t.Errorf("JWKS after pruning = %v, want only the new key", keys)
	}

	// The key as files: a private key file signs, a public key file verifies.
	pemPub, err := PublicKeyPEM(second.Public)
	if err != nil {
		t.Fatal(err)
	}
	path := dir + "/pub.pem"
	if err := writeFile(path, pemPub); err != nil {
		t.Fatal(err)
	}
	static, err := LoadPublicKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := static.PublicKey(t.Context(), second.ID); !ok {
		t.Error("public key file does not give the key id")
	}
	fileRing, err := LoadKeyFile(dir+"/ed25519-"+itoa64(second.Created.Unix())+".pem", jwa.EdDSA())
	if err != nil || fileRing.Active().ID != second.ID {
		t.Fatalf("LoadKeyFile = %v, %v", fileRing, err)
	}
}

func TestLoadOrCreateSecret(t *testing.T) {
	path := t.TempDir() + "/keys/s.key"
	a, err := LoadOrCreateSecret(path, 32)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateSecret(path, 32)
	if err != nil || string(a) != string(b) || len(a) != 32 {
		t.Fatalf("second load = %x, %v; want %x", b, err, a)
	}
}

// TestKeyRingES256: the token pair's P-256 keys rotate like the Ed25519
// ring, are published with alg ES256 and their RFC 7638 thumbprint as kid,
// and come back from a PEM file (yard keys public) and a JWKS.
func TestKeyRingES256(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	ring, err := OpenKeyRing(dir, jwa.ES256(), time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	first := ring.Active()
	if _, ok := first.Public.(*ecdsa.PublicKey); !ok || first.Alg.String() != "ES256" {
		t.Fatalf("an ES256 ring made a %T key for %s", first.Public, first.Alg)
	}
	if _, err := os.Stat(filepath.Join(dir, "es256-1800000000.pem")); err != nil {
		t.Fatalf("key file: %v", err)
	}
	key, _ := jwk.Import(first.Public)
	sum, _ := key.Thumbprint(crypto.SHA256)
	if first.ID != base64.RawURLEncoding.EncodeToString(sum) {
		t.Errorf("kid %s is not the RFC 7638 thumbprint", first.ID)
	}
	// An Ed25519 ring in the same directory sees none of these keys.
	if ed, err := OpenKeyRing(dir, jwa.EdDSA(), time.Hour, clock); err != nil || ed.Active().ID == first.ID {
		t.Fatalf("EdDSA ring over the ES256 keys: %v", err)
	}

	c := &Claims{Subject: "u1", Expires: now.Add(time.Hour).Unix(), Use: UseAccess}
	tok, err := signJWT(c, jwa.ES256(), first.Private, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := ring.PublicKey(t.Context(), first.ID)
	if !ok {
		t.Fatal("the ring does not find its key")
	}
	if _, err := verifyJWT(tok, jwa.ES256(), pub); err != nil {
		t.Fatalf("ES256 token: %v", err)
	}
	if _, err := verifyJWT(tok, jwa.EdDSA(), pub); err == nil {
		t.Error("ES256 token verified as EdDSA")
	}

	now = now.Add(time.Minute)
	if err := ring.Rotate(); err != nil {
		t.Fatal(err)
	}
	second := ring.Active()
	set, err := jwk.Parse(must(JWKS(ring)))
	if err != nil || set.Len() != 2 {
		t.Fatalf("JWKS during the overlap: %v keys, %v", set.Len(), err)
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if a, _ := k.Algorithm(); a.String() != "ES256" {
			t.Errorf("JWKS key alg %v", a)
		}
	}
	keys, err := ParseJWKS(must(JWKS(ring, nil)))
	if err != nil || keys[first.ID] == nil || keys[second.ID] == nil {
		t.Fatalf("ParseJWKS = %v, %v", keys, err)
	}
	now = now.Add(2 * time.Hour)
	if _, ok := ring.PublicKey(t.Context(), first.ID); ok {
		t.Error("the replaced key still verifies after the overlap")
	}
	if err := ring.Prune(); err != nil {
		t.Fatal(err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "es256-*.pem")); len(names) != 1 {
		t.Errorf("after pruning: %v", names)
	}

	// yard keys public writes PEM; a verify-only server reads it back.
	pemPub, err := PublicKeyPEM(second.Public)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pub.pem")
	if err := writeFile(path, pemPub); err != nil {
		t.Fatal(err)
	}
	static, err := LoadPublicKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := static.PublicKey(t.Context(), second.ID); !ok {
		t.Error("the PEM file does not give the ES256 key under its kid")
	}
	if _, err := LoadKeyFile(filepath.Join(dir, "es256-"+itoa64(second.Created.Unix())+".pem"), jwa.EdDSA()); err == nil {
		t.Error("a P-256 key file loaded as an EdDSA key")
	}
	if _, err := OpenKeyRing(dir, jwa.HS256(), time.Hour, clock); err == nil {
		t.Error("a key ring for HS256")
	}
}

// TestKeyRingCreatedOnce: processes starting together on an empty
// directory agree on one first key.
func TestKeyRingCreatedOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	dir := t.TempDir()
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			ring, err := OpenKeyRing(dir, jwa.ES256(), time.Hour, func() time.Time { return now })
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = ring.Active().ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("processes sign with different first keys: %v", ids)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("the directory holds %v, want one key file", names)
	}
	// A rotation within the same second still makes a new key.
	now = now.Add(300 * time.Millisecond)
	ring, err := OpenKeyRing(dir, jwa.ES256(), time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if err := ring.Rotate(); err != nil || ring.Active().ID == ids[0] {
		t.Fatalf("rotation in the first key's second: %v, key %s", err, ring.Active().ID)
	}
}

// TestParseTokenAlg: the names --token-alg takes.
func TestParseTokenAlg(t *testing.T) {
	for name, want := range map[string]string{"": "HS256", "HS256": "HS256", "EdDSA": "EdDSA", "ES256": "ES256"} {
		if alg, err := ParseTokenAlg(name); err != nil || alg.String() != want {
			t.Errorf("ParseTokenAlg(%q) = %v, %v", name, alg, err)
		}
	}
	for _, bad := range []string{"none", "RS256", "es256", "HS512"} {
		if _, err := ParseTokenAlg(bad); err == nil {
			t.Errorf("ParseTokenAlg(%q) accepted", bad)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
