package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
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
	ring, err := OpenKeyRing(dir, time.Hour, clock)
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
	other, err := OpenKeyRing(dir, time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	if other.Active().ID != second.ID {
		t.Errorf("other process signs with %s, want %s", other.Active().ID, second.ID)
	}
	jwks, err := ring.JWKS()
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
	jwks, _ = other.JWKS()
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
	fileRing, err := LoadKeyFile(dir + "/ed25519-" + itoa64(second.Created.Unix()) + ".pem")
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
