package auth

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/yard-api/yard"
	"golang.org/x/sync/singleflight"
)

// KeySource finds the Ed25519 public key with a key id.
type KeySource interface {
	PublicKey(ctx context.Context, kid string) (ed25519.PublicKey, bool)
}

// SigningKey is one Ed25519 key of a KeyRing.
type SigningKey struct {
	ID      string // RFC 7638 thumbprint
	Private ed25519.PrivateKey
	Public  ed25519.PublicKey
	Created time.Time
}

// KeyRing holds the server's Ed25519 keys for public-key tokens. The newest
// key signs. An older key keeps verifying (and stays in the JWKS) until
// Overlap after the key that replaced it was made, which is at least the
// lifetime of any token it signed; then Prune removes it.
//
// Keys are PKCS #8 PEM files named ed25519-<unix seconds>.pem in Dir, so
// several processes sharing the directory share the keys. A ring loaded
// from one given file (LoadKeyFile) has no directory and does not rotate.
type KeyRing struct {
	Dir     string
	Overlap time.Duration
	Now     func() time.Time

	mu   sync.RWMutex
	keys []*SigningKey // oldest first
	// reloaded is when an unknown key id last made the ring re-read Dir.
	reloaded time.Time
}

// OpenKeyRing loads the keys of dir, creating the first one if there is none.
func OpenKeyRing(dir string, overlap time.Duration, now func() time.Time) (*KeyRing, error) {
	k := &KeyRing{Dir: dir, Overlap: overlap, Now: now}
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

// LoadKeyFile returns a ring of the one private key in a PEM file.
func LoadKeyFile(path string) (*KeyRing, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sk, err := parsePrivatePEM(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &KeyRing{keys: []*SigningKey{sk}, Now: time.Now}, nil
}

func parsePrivatePEM(b []byte) (*SigningKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("not an Ed25519 private key")
	}
	pub := priv.Public().(ed25519.PublicKey)
	return &SigningKey{ID: Thumbprint(pub), Private: priv, Public: pub}, nil
}

// Thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url) of an
// Ed25519 public key; it is the key id.
func Thumbprint(pub ed25519.PublicKey) string {
	// RFC 8037 §2: the required members of an OKP key, in lexical order.
	s := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Reload reads the key files of Dir again (another process may have rotated).
func (k *KeyRing) Reload() error {
	if k.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(k.Dir, 0o700); err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(k.Dir, "ed25519-*.pem"))
	if err != nil {
		return err
	}
	var keys []*SigningKey
	for _, n := range names {
		sec, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(n), "ed25519-"), ".pem"), 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			return err
		}
		sk, err := parsePrivatePEM(b)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		sk.Created = time.Unix(sec, 0)
		keys = append(keys, sk)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Created.Before(keys[j].Created) })
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return nil
}

// Rotate makes a new signing key; older keys keep verifying until pruned.
func (k *KeyRing) Rotate() error {
	if k.Dir == "" {
		return errors.New("key ring: a key given as a file does not rotate")
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	now := k.Now()
	k.mu.RLock()
	if n := len(k.keys); n > 0 && !now.After(k.keys[n-1].Created) {
		now = k.keys[n-1].Created.Add(time.Second) // names must grow
	}
	k.mu.RUnlock()
	path := filepath.Join(k.Dir, fmt.Sprintf("ed25519-%d.pem", now.Unix()))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return k.Reload()
}

// Prune deletes keys that were replaced more than Overlap ago.
func (k *KeyRing) Prune() error {
	now := k.Now()
	k.mu.RLock()
	keys := k.keys
	k.mu.RUnlock()
	for i := 0; i+1 < len(keys); i++ {
		if now.Sub(keys[i+1].Created) > k.Overlap && k.Dir != "" {
			if err := os.Remove(filepath.Join(k.Dir, fmt.Sprintf("ed25519-%d.pem", keys[i].Created.Unix()))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return k.Reload()
}

// Active returns the signing key.
func (k *KeyRing) Active() *SigningKey {
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
func (k *KeyRing) PublicKey(_ context.Context, kid string) (ed25519.PublicKey, bool) {
	for range 2 {
		for _, sk := range k.live() {
			if sk.ID == kid {
				return sk.Public, true
			}
		}
		k.mu.Lock()
		stale := k.Dir != "" && k.Now().Sub(k.reloaded) > 10*time.Second
		if stale {
			k.reloaded = k.Now()
		}
		k.mu.Unlock()
		if !stale || k.Reload() != nil {
			break
		}
	}
	return nil, false
}

// JWKS returns the JSON Web Key Set (RFC 7517 §5) of the live public keys.
func (k *KeyRing) JWKS() ([]byte, error) {
	set := jwk.NewSet()
	for _, sk := range k.live() {
		key, err := jwk.Import(sk.Public)
		if err != nil {
			return nil, err
		}
		_ = key.Set(jwk.KeyIDKey, sk.ID)
		_ = key.Set(jwk.AlgorithmKey, jwa.EdDSA())
		_ = key.Set(jwk.KeyUsageKey, "sig")
		if err := set.AddKey(key); err != nil {
			return nil, err
		}
	}
	return json.Marshal(set)
}

// StaticKeys is a KeySource of fixed public keys (a PEM public key file or
// a JWKS file given to a verify-only server).
type StaticKeys map[string]ed25519.PublicKey

// PublicKey implements KeySource.
func (s StaticKeys) PublicKey(_ context.Context, kid string) (ed25519.PublicKey, bool) {
	k, ok := s[kid]
	return k, ok
}

// LoadPublicKeys reads a PEM file of Ed25519 public keys (PKIX) or a JWKS
// JSON document.
func LoadPublicKeys(path string) (StaticKeys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		return ParseJWKS(b)
	}
	out := StaticKeys{}
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		pk, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ed, ok := pk.(ed25519.PublicKey); ok {
			out[Thumbprint(ed)] = ed
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no Ed25519 public key", path)
	}
	return out, nil
}

// ParseJWKS returns the Ed25519 signing keys of a JWKS document; keys of
// other types or algorithms are ignored.
func ParseJWKS(b []byte) (StaticKeys, error) {
	set, err := jwk.Parse(b)
	if err != nil {
		return nil, err
	}
	out := StaticKeys{}
	for i := range set.Len() {
		key, _ := set.Key(i)
		if alg, ok := key.Algorithm(); ok && alg.String() != jwa.EdDSA().String() {
			continue
		}
		var raw ed25519.PublicKey
		if err := jwk.Export(key, &raw); err != nil {
			continue
		}
		kid, _ := key.KeyID()
		if kid == "" {
			kid = Thumbprint(raw)
		}
		out[kid] = raw
	}
	if len(out) == 0 {
		return nil, errors.New("JWKS holds no Ed25519 key")
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
func (j *RemoteJWKS) PublicKey(ctx context.Context, kid string) (ed25519.PublicKey, bool) {
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

// PKTokens issues and verifies public-key tokens (docs/auth.md): compact JWS
// signed with EdDSA (Ed25519), carrying sub, exp, and optionally name, ip
// and pwh. Ring is nil on a verify-only server, which only verifies.
type PKTokens struct {
	Ring  *KeyRing
	Keys  KeySource
	TTL   time.Duration
	Users *UserCache
	// Limiter counts X-Password checks like every other password check;
	// Hashing bounds them and the hashes tokens carry.
	Limiter *LoginLimiter
	Hashing *HashGate
	Now     func() time.Time

	// flights shares one X-Password check among concurrent requests with
	// the same token and password.
	flights singleflight.Group

	verified verifiedTokens
	mu       sync.Mutex
	// passwords remembers (token, X-Password) pairs that matched pwh.
	passwords map[[32]byte]time.Time
}

// PKOptions are the optional claims of a public-key token.
type PKOptions struct {
	BindIP              string // the caller's address, "" for none
	IncludePasswordHash bool
	Password            string // hashed into pwh when IncludePasswordHash
	// Context bounds the wait for a hashing slot (nil: none).
	Context context.Context
}

// Issue signs a public-key token for u.
func (p *PKTokens) Issue(u *yard.User, opt PKOptions) (token string, expires time.Time, err error) {
	if p.Ring == nil || p.Ring.Active() == nil {
		return "", time.Time{}, yard.Errorf(yard.EUNAVAILABLE, "This server only verifies public-key tokens; ask the issuing server.")
	}
	now := p.Now()
	expires = now.Add(p.TTL)
	c := &Claims{Subject: u.ID, Name: u.Name, IssuedAt: now.Unix(), Expires: expires.Unix(), IP: opt.BindIP}
	if opt.IncludePasswordHash {
		// A fresh, salted slow hash: never the stored credential hash.
		ctx := opt.Context
		if ctx == nil {
			ctx = context.Background()
		}
		if c.PasswordHash, err = p.Hashing.Hash(ctx, opt.Password); err != nil {
			return "", time.Time{}, err
		}
	}
	sk := p.Ring.Active()
	token, err = signJWT(c, jwa.EdDSA(), sk.Private, sk.ID)
	return token, expires, err
}

// Verify checks a public-key token on request r: key id, EdDSA signature,
// exp, ip binding, the X-Password header against pwh, and that the user may
// use the API.
func (p *PKTokens) Verify(r *http.Request, token, kid string) (*yard.Principal, error) {
	ctx := r.Context()
	c, err := p.verified.verify(token, func() (*Claims, error) {
		pub, ok := p.Keys.PublicKey(ctx, kid)
		if !ok {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The token was signed with an unknown key.")
		}
		c, err := verifyJWT(token, jwa.EdDSA(), pub)
		if err != nil || c.Use != "" {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not valid.")
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	now := p.Now()
	if !now.Before(time.Unix(c.Expires, 0)) {
		p.verified.forget(token)
		return nil, &yard.Error{Code: yard.ETOKENEXPIRED, Message: "The public-key token has expired; get a new one.",
			Challenge: InvalidTokenChallenge("The token expired")}
	}
	if c.IP != "" && c.IP != ClientIP(r) {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The token is bound to another address.")
	}
	pr, err := p.Users.Principal(ctx, c.Subject)
	if err != nil {
		return nil, err
	}
	if c.PasswordHash != "" {
		pw := r.Header.Get("X-Password")
		if pw == "" {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "This token needs the X-Password header.")
		}
		if err := p.checkPassword(r, pr.Name, token, c.PasswordHash, pw, now); err != nil {
			return nil, err
		}
	}
	pr.Scheme = "pk-token"
	return pr, nil
}

// checkPassword compares X-Password with the token's pwh claim. A pair
// that matched is remembered for a minute; any other check is a password
// check like a sign-in: it takes a place in the login limiter (per client
// address and user name) before the slow hash and gives it back when the
// password was right.
func (p *PKTokens) checkPassword(r *http.Request, username, token, pwh, pw string, now time.Time) error {
	h := sha256.New()
	h.Write([]byte(token))
	h.Write([]byte{0})
	h.Write([]byte(pw))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	p.mu.Lock()
	until, ok := p.passwords[key]
	p.mu.Unlock()
	if ok && now.Before(until) {
		return nil
	}
	keys := Keys(r, username)
	_, err, _ := p.flights.Do(string(key[:]), func() (any, error) {
		ctx, cancel := detach(r.Context())
		defer cancel()
		attempt, err := p.Limiter.Begin(ctx, keys...)
		if err != nil {
			return nil, err
		}
		match, err := p.Hashing.Check(ctx, pwh, pw)
		if err != nil {
			attempt.Succeeded(ctx) // not checked: not a guess
			return nil, err
		}
		if !match {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The X-Password does not match the token.")
		}
		attempt.Succeeded(ctx)
		return nil, nil
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.passwords == nil || len(p.passwords) > 100000 {
		p.passwords = map[[32]byte]time.Time{}
	}
	p.passwords[key] = now.Add(time.Minute)
	p.mu.Unlock()
	return nil
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

// newPKTokens makes the public-key token service of cfg: a verify-only
// server verifies with a JWKS URL or a public key file; a signing server
// signs with one key file or the rotating ring in KeyDir.
func newPKTokens(ctx context.Context, cfg Config, k *Kit) (*PKTokens, error) {
	now := k.Now
	pkTTL := orDefault(cfg.PKTokenTTL, time.Hour)
	pk := &PKTokens{TTL: pkTTL, Users: k.Users, Limiter: cfg.Limiter, Hashing: cfg.Hashing, Now: now}
	switch {
	case cfg.VerifyOnly && cfg.JWKSURL != "":
		client := &http.Client{Timeout: 10 * time.Second}
		if cfg.JWKSCAFile != "" {
			pem, err := os.ReadFile(cfg.JWKSCAFile)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: no certificate", cfg.JWKSCAFile)
			}
			client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
		}
		remote := &RemoteJWKS{URL: cfg.JWKSURL, Client: client, Refresh: 5 * time.Minute, MinRefetch: 10 * time.Second, Now: now}
		if err := remote.Fetch(ctx); err != nil {
			return nil, err
		}
		pk.Keys = remote
	case cfg.VerifyOnly && cfg.PublicKeyFile != "":
		keys, err := LoadPublicKeys(cfg.PublicKeyFile)
		if err != nil {
			return nil, err
		}
		pk.Keys = keys
	case cfg.VerifyOnly:
		return nil, errors.New("a verify-only server needs --jwks URL or --public-key FILE")
	case cfg.SigningKeyFile != "":
		ring, err := LoadKeyFile(cfg.SigningKeyFile)
		if err != nil {
			return nil, err
		}
		pk.Ring, pk.Keys = ring, ring
	default:
		ring, err := OpenKeyRing(filepath.Join(cfg.KeyDir, "ed25519"), pkTTL, now)
		if err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		if cfg.KeyRotation > 0 && now().Sub(ring.Active().Created) > cfg.KeyRotation {
			if err := ring.Rotate(); err != nil {
				return nil, err
			}
		}
		if err := ring.Prune(); err != nil {
			return nil, err
		}
		pk.Ring, pk.Keys = ring, ring
	}
	return pk, nil
}
