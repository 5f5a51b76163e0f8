package auth

import (
	"cmp"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Public keys a verifier finds outside a KeyRing (keys.go): fixed ones
// from a PEM or JWKS file (StaticKeys), and an issuer's JWKS URL
// (RemoteJWKS).

// StaticKeys is a KeySource of fixed public keys (a PEM public key file or
// a JWKS file given to a verify-only server).
type StaticKeys map[string]crypto.PublicKey

// PublicKey implements KeySource.
func (s StaticKeys) PublicKey(_ context.Context, kid string) (crypto.PublicKey, bool) {
	k, ok := s[kid]
	return k, ok
}

// LoadPublicKeys reads a PEM file of Ed25519 and P-256 public keys (PKIX;
// yard keys public writes one) or a JWKS JSON document.
func LoadPublicKeys(path string) (StaticKeys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		return ParseJWKS(b)
	}
	out := StaticKeys{}
	for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
		pk, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if isEd25519(pk) || isP256(pk) {
			out[Thumbprint(pk)] = pk
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no Ed25519 or P-256 public key", path)
	}
	return out, nil
}

// ParseJWKS returns the Ed25519 (EdDSA) and P-256 (ES256) public keys of a
// JWKS document; keys of other types or algorithms are ignored.
func ParseJWKS(b []byte) (StaticKeys, error) {
	set, err := jwk.Parse(b)
	if err != nil {
		return nil, err
	}
	out := StaticKeys{}
	for i := range set.Len() {
		key, _ := set.Key(i)
		if alg, ok := key.Algorithm(); ok && alg.String() != jwa.EdDSA().String() && alg.String() != jwa.ES256().String() {
			continue
		}
		var raw any
		if err := jwk.Export(key, &raw); err != nil || !(isEd25519(raw) || isP256(raw)) {
			continue
		}
		kid, _ := key.KeyID()
		out[cmp.Or(kid, Thumbprint(raw))] = raw
	}
	if len(out) == 0 {
		return nil, errors.New("JWKS holds no Ed25519 or P-256 key")
	}
	return out, nil
}

// RemoteJWKS is a KeySource that fetches a JWKS URL, refreshing every
// Refresh and, at most once per MinRefetch, when a token names an unknown
// key id (the issuer rotated).
type RemoteJWKS struct {
	URL        string
	Client     *http.Client
	Refresh    time.Duration
	MinRefetch time.Duration
	Now        func() time.Time

	mu      sync.Mutex
	keys    StaticKeys
	fetched time.Time
}

// Fetch loads the key set now.
func (j *RemoteJWKS) Fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.URL, nil)
	if err != nil {
		return err
	}
	res, err := j.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("JWKS %s: status %d", j.URL, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	keys, err := ParseJWKS(b)
	if err != nil {
		return fmt.Errorf("JWKS %s: %w", j.URL, err)
	}
	j.mu.Lock()
	j.keys, j.fetched = keys, j.Now()
	j.mu.Unlock()
	return nil
}

// PublicKey implements KeySource.
func (j *RemoteJWKS) PublicKey(ctx context.Context, kid string) (crypto.PublicKey, bool) {
	j.mu.Lock()
	k, ok := j.keys[kid]
	age := j.Now().Sub(j.fetched)
	j.mu.Unlock()
	if (ok && age < j.Refresh) || (!ok && age < j.MinRefetch) {
		return k, ok
	}
	if err := j.Fetch(ctx); err != nil {
		return k, ok // keep the keys we had
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	k, ok = j.keys[kid]
	return k, ok
}

// PublicKeyPEM returns the PKIX PEM form of a public key, for giving it to
// verify-only servers as a file.
func PublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
