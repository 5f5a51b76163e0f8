package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
)

// The asymmetric signing keys. A KeyRing holds the keys of one use and one
// algorithm in one directory of DATA/keys: public-key tokens' Ed25519 keys
// (PKTokenKeyDir), and the token pair's EdDSA or ES256 keys when it is not
// signed with HS256 (TokenPairKeyDir). A verifier finds public keys through
// a KeySource: a ring, a JWKS URL (RemoteJWKS) or a file (StaticKeys).

// PKTokenKeyDir is the directory of DATA/keys holding public-key tokens'
// Ed25519 keys.
const PKTokenKeyDir = "ed25519"

// TokenPairKeyDir is the directory of DATA/keys holding the token pair's
// keys for an asymmetric algorithm ("token-eddsa", "token-es256").
func TokenPairKeyDir(alg jwa.SignatureAlgorithm) string {
	return "token-" + strings.ToLower(alg.String())
}

// keyReloadEvery is how often a ring re-reads its directory at most, to
// pick up a key another process made.
const keyReloadEvery = 10 * time.Second

// keyKind is an asymmetric algorithm a KeyRing can hold.
type keyKind struct {
	prefix   string // key files are <prefix><unix seconds>.pem
	generate func() (crypto.Signer, error)
	fits     func(crypto.PublicKey) bool
}

var keyKinds = map[string]keyKind{
	"EdDSA": {prefix: "ed25519-", fits: isEd25519, generate: func() (crypto.Signer, error) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	}},
	"ES256": {prefix: "es256-", fits: isP256, generate: func() (crypto.Signer, error) {
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}},
}

// file is the name of the key file in dir made at created.
func (k keyKind) file(dir string, created time.Time) string {
	return filepath.Join(dir, fmt.Sprintf("%s%d.pem", k.prefix, created.Unix()))
}

func isEd25519(k crypto.PublicKey) bool { _, ok := k.(ed25519.PublicKey); return ok }

func isP256(k crypto.PublicKey) bool {
	e, ok := k.(*ecdsa.PublicKey)
	return ok && e.Curve == elliptic.P256()
}

func kindOf(alg jwa.SignatureAlgorithm) (keyKind, error) {
	k, ok := keyKinds[alg.String()]
	if !ok {
		return keyKind{}, fmt.Errorf("key ring: no asymmetric keys for the algorithm %q (EdDSA or ES256)", alg.String())
	}
	return k, nil
}

// KeySource finds the public key with a key id.
type KeySource interface {
	PublicKey(ctx context.Context, kid string) (crypto.PublicKey, bool)
}

// SigningKey is one key of a KeyRing.
type SigningKey struct {
	ID      string // RFC 7638 thumbprint
	Alg     jwa.SignatureAlgorithm
	Private crypto.Signer
	Public  crypto.PublicKey
	Created time.Time
}

// KeyRing holds the server's keys of one use and one algorithm (Alg: EdDSA
// with Ed25519, or ES256 with P-256). The newest key signs. An older key
// keeps verifying (and stays in the JWKS) until Overlap after the key that
// replaced it was made, which is at least the lifetime of any token it
// signed; then Prune removes it.
//
// Keys are PKCS #8 PEM files named <prefix>-<unix seconds>.pem in Dir
// (ed25519-…, es256-…), so several processes sharing the directory share
// the keys; each re-reads the directory at most every 10 seconds when it
// signs, and when a token names a key id it does not know, so a key made
// by another process (yard keys rotate) signs and verifies everywhere. A
// ring loaded from one given file (LoadKeyFile) has no directory and does
// not rotate.
type KeyRing struct {
	Dir     string
	Alg     jwa.SignatureAlgorithm
	Overlap time.Duration
	Now     func() time.Time

	kind keyKind
	mu   sync.RWMutex
	keys []*SigningKey // oldest first
	// reloaded is when the ring last read Dir.
	reloaded time.Time
}

// OpenKeyRing loads the alg keys of dir, creating the first one if there
// is none.
func OpenKeyRing(dir string, alg jwa.SignatureAlgorithm, overlap time.Duration, now func() time.Time) (*KeyRing, error) {
	kind, err := kindOf(alg)
	if err != nil {
		return nil, err
	}
	k := &KeyRing{Dir: dir, Alg: alg, Overlap: overlap, Now: now, kind: kind}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	if len(k.keys) == 0 {
		if err := k.Rotate(); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// openRotatingRing opens the ring of dir at start-up: it makes a new key
// when the newest is older than rotation (0: never) and deletes keys
// replaced more than overlap ago. overlap is the longest lifetime of a
// token the keys sign; a minute is added for processes that sign with a
// key for up to keyReloadEvery after it was replaced, and for clocks a
// little apart.
func openRotatingRing(dir string, alg jwa.SignatureAlgorithm, overlap, rotation time.Duration, now func() time.Time) (*KeyRing, error) {
	ring, err := OpenKeyRing(dir, alg, overlap+time.Minute, now)
	if err != nil {
		return nil, err
	}
	if rotation > 0 && now().Sub(ring.Active().Created) > rotation {
		if err := ring.Rotate(); err != nil {
			return nil, err
		}
	}
	if err := ring.Prune(); err != nil {
		return nil, err
	}
	return ring, nil
}

// LoadKeyFile returns a ring of the one alg private key in a PEM file.
func LoadKeyFile(path string, alg jwa.SignatureAlgorithm) (*KeyRing, error) {
	kind, err := kindOf(alg)
	if err != nil {
		return nil, err
	}
	sk, err := readPrivateKey(path, kind, alg)
	if err != nil {
		return nil, err
	}
	return &KeyRing{Alg: alg, keys: []*SigningKey{sk}, Now: time.Now, kind: kind}, nil
}

// readPrivateKey reads the PKCS #8 PEM file of a kind's private key.
func readPrivateKey(path string, kind keyKind, alg jwa.SignatureAlgorithm) (*SigningKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(crypto.Signer)
	if !ok || !kind.fits(priv.Public()) {
		return nil, fmt.Errorf("%s: not a private key for %s", path, alg.String())
	}
	pub := priv.Public()
	return &SigningKey{ID: Thumbprint(pub), Alg: alg, Private: priv, Public: pub}, nil
}

// Thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url) of an
// Ed25519 or P-256 public key; it is the key id.
func Thumbprint(pub crypto.PublicKey) string {
	key, err := jwk.Import(pub)
	if err != nil {
		return ""
	}
	sum, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(sum)
}

// Reload reads the key files of Dir again (another process may have rotated).
func (k *KeyRing) Reload() error {
	if k.Dir == "" {
		return nil
	}
	// A missing directory holds no key; Rotate makes it.
	names, err := filepath.Glob(filepath.Join(k.Dir, k.kind.prefix+"*.pem"))
	if err != nil {
		return err
	}
	var keys []*SigningKey
	for _, n := range names {
		sec, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(n), k.kind.prefix), ".pem"), 10, 64)
		if err != nil {
			continue
		}
		sk, err := readPrivateKey(n, k.kind, k.Alg)
		if err != nil {
			return err
		}
		sk.Created = time.Unix(sec, 0)
		keys = append(keys, sk)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Created.Before(keys[j].Created) })
	k.mu.Lock()
	k.keys, k.reloaded = keys, k.Now()
	k.mu.Unlock()
	return nil
}

// reloadIfStale re-reads Dir when it was read more than keyReloadEvery
// ago, and reports whether it did.
func (k *KeyRing) reloadIfStale() bool {
	if k.Dir == "" {
		return false
	}
	k.mu.RLock()
	stale := k.Now().Sub(k.reloaded) > keyReloadEvery
	k.mu.RUnlock()
	return stale && k.Reload() == nil
}

// Rotate makes a new signing key; older keys keep verifying until pruned.
// The file appears whole (written aside, then linked into place), so
// another process never reads half a key; when another process made a key
// in the same second, that key is the new one.
func (k *KeyRing) Rotate() error {
	if k.Dir == "" {
		return errors.New("key ring: a key given as a file does not rotate")
	}
	if err := os.MkdirAll(k.Dir, 0o700); err != nil {
		return err
	}
	priv, err := k.kind.generate()
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	now := k.Now()
	k.mu.RLock()
	if n := len(k.keys); n > 0 && now.Unix() <= k.keys[n-1].Created.Unix() {
		now = k.keys[n-1].Created.Add(time.Second) // names (whole seconds) must grow
	}
	k.mu.RUnlock()
	if err := createOnce(k.kind.file(k.Dir, now), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		return err
	}
	return k.Reload()
}

// Prune deletes keys that were replaced more than Overlap ago.
func (k *KeyRing) Prune() error {
	if k.Dir == "" {
		return nil
	}
	now := k.Now()
	k.mu.RLock()
	keys := k.keys
	k.mu.RUnlock()
	for i := 0; i+1 < len(keys); i++ {
		if now.Sub(keys[i+1].Created) > k.Overlap {
			if err := os.Remove(k.kind.file(k.Dir, keys[i].Created)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return k.Reload()
}

// Active returns the signing key: the newest of Dir, read again when it
// was read more than keyReloadEvery ago; nil for a nil ring (a server that
// only verifies).
func (k *KeyRing) Active() *SigningKey {
	if k == nil {
		return nil
	}
	k.reloadIfStale()
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.keys) == 0 {
		return nil
	}
	return k.keys[len(k.keys)-1]
}

// live returns the keys that still verify: the newest, and each older one
// until Overlap after its successor was made.
func (k *KeyRing) live() []*SigningKey {
	now := k.Now()
	k.mu.RLock()
	defer k.mu.RUnlock()
	var out []*SigningKey
	for i, sk := range k.keys {
		if i+1 == len(k.keys) || now.Sub(k.keys[i+1].Created) <= k.Overlap {
			out = append(out, sk)
		}
	}
	return out
}

// PublicKey implements KeySource.
// An unknown key id makes the ring re-read its directory (at most every 10
// seconds), so a key another process made is picked up.
func (k *KeyRing) PublicKey(_ context.Context, kid string) (crypto.PublicKey, bool) {
	for range 2 {
		for _, sk := range k.live() {
			if sk.ID == kid {
				return sk.Public, true
			}
		}
		if !k.reloadIfStale() {
			break
		}
	}
	return nil, false
}

// JWKS returns the JSON Web Key Set (RFC 7517 §5) of the live public keys
// of every ring given (nil rings are skipped), each with its kid, alg and
// use "sig".
func JWKS(rings ...*KeyRing) ([]byte, error) {
	set := jwk.NewSet()
	for _, ring := range rings {
		if ring == nil {
			continue
		}
		for _, sk := range ring.live() {
			key, err := jwk.Import(sk.Public)
			if err != nil {
				return nil, err
			}
			_ = key.Set(jwk.KeyIDKey, sk.ID)
			_ = key.Set(jwk.AlgorithmKey, sk.Alg)
			_ = key.Set(jwk.KeyUsageKey, "sig")
			if err := set.AddKey(key); err != nil {
				return nil, err
			}
		}
	}
	return json.Marshal(set)
}
