package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/yard-api/yard"
)

// Store is what the schemes need of the store.
type Store interface {
	Users
	yard.AuthStateService
}

// Config configures every first-party scheme. Zero durations take the
// defaults of docs/auth.md.
type Config struct {
	Store   Store
	Limiter *LoginLimiter
	// Basic is the lead's Basic scheme; it is put first in the chain.
	Basic *Basic
	// KeyDir holds the server's secret files and Ed25519 keys
	// (DATA/keys); processes sharing it share every key.
	KeyDir string
	// Issuer is the iss claim of the token pair (the public base URL).
	Issuer string

	AccessTTL   time.Duration // 30m
	RefreshTTL  time.Duration // 24h
	PKTokenTTL  time.Duration // 1h
	SessionIdle time.Duration // 30m
	SessionMax  time.Duration // 12h
	NonceTTL    time.Duration // 5m
	// CacheTTL bounds how long a process trusts what it read of a user,
	// a session or an API key (a change made on another process takes
	// effect within it). Default 5s.
	CacheTTL time.Duration
	// KeyRotation makes a new Ed25519 signing key when the newest is older
	// than this at start-up (0: never).
	KeyRotation time.Duration
	// SignatureWriters is how many signed-request signature writes may be
	// in flight at once: 1 for SQLite (one writer), more for PostgreSQL.
	SignatureWriters int
	// SignedRequireBinding makes signed requests with unsafe methods sign
	// the query variables method and bodyhash (Signed.RequireBinding).
	SignedRequireBinding bool

	// SigningKeyFile, when set, is the one Ed25519 private key (PKCS #8
	// PEM) that signs public-key tokens, instead of the rotating ring.
	SigningKeyFile string
	// VerifyOnly servers hold no signing key: they verify public-key
	// tokens with PublicKeyFile (PEM or JWKS) or JWKSURL, and do not offer
	// the token pair (its HMAC key is a signing key).
	VerifyOnly    bool
	PublicKeyFile string
	JWKSURL       string
	// JWKSCAFile is a PEM CA bundle to trust when fetching JWKSURL (for a
	// self-signed issuer).
	JWKSCAFile string

	Now func() time.Time
}

// Kit is the wired set of schemes and the services behind their endpoints.
type Kit struct {
	Chain    *Chain
	Basic    *Basic
	Digest   *Digest
	Sessions *Sessions
	Tokens   *Tokens // nil on a verify-only server
	PK       *PKTokens
	Signed   *Signed
	// OAuth1 is the OAuth 1.0a provider; nil when the store keeps no
	// OAuth state.
	OAuth1  *OAuth1
	Users   *UserCache
	Box     *SecretBox
	Limiter *LoginLimiter
	Store   Store
	Now     func() time.Time
	// SessionMax is the absolute session lifetime (for purging).
	SessionMax time.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// NewKit builds the schemes of cfg and the chain that runs them in the
// documented order (docs/auth.md): Authorization header (Basic, Digest, Bearer, and OAuth
// 1.0a when the store keeps OAuth state), then the signed-request query,
// then the session cookie.
func NewKit(ctx context.Context, cfg Config) (*Kit, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	cacheTTL := orDefault(cfg.CacheTTL, 5*time.Second)
	k := &Kit{Basic: cfg.Basic, Limiter: cfg.Limiter, Store: cfg.Store, Now: now,
		SessionMax: orDefault(cfg.SessionMax, 12*time.Hour)}
	k.Users = &UserCache{Users: cfg.Store, TTL: cacheTTL, Now: now}
	if cfg.Basic != nil {
		// A Basic verification is compared with the store as often as
		// everything else a process caches (docs/auth.md).
		cfg.Basic.CacheTTL = cacheTTL
	}

	nonceKey, err := LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "digest-nonce.key"), 32)
	if err != nil {
		return nil, fmt.Errorf("digest nonce key: %w", err)
	}
	k.Digest = &Digest{Users: cfg.Store, Counter: cfg.Store, Limiter: cfg.Limiter, Secret: nonceKey,
		NonceTTL: orDefault(cfg.NonceTTL, 5*time.Minute), Now: now, Opaque: "yard"}

	boxKey, err := LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "apikey-seal.key"), 32)
	if err != nil {
		return nil, fmt.Errorf("API key sealing key: %w", err)
	}
	if k.Box, err = NewSecretBox(boxKey); err != nil {
		return nil, err
	}
	k.Signed = &Signed{Keys: cfg.Store, Users: k.Users, Box: k.Box, Now: now, KeyCacheTTL: cacheTTL, Writers: cfg.SignatureWriters,
		RequireBinding: cfg.SignedRequireBinding}

	idle := orDefault(cfg.SessionIdle, 30*time.Minute)
	k.Sessions = &Sessions{Store: cfg.Store, Users: k.Users, Idle: idle,
		Max: k.SessionMax, TouchEvery: TouchInterval(idle), CacheTTL: cacheTTL, Now: now,
		CrossOrigin: http.NewCrossOriginProtection()}

	pkTTL := orDefault(cfg.PKTokenTTL, time.Hour)
	k.PK = &PKTokens{TTL: pkTTL, Users: k.Users, Limiter: cfg.Limiter, Now: now}
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
		k.PK.Keys = remote
	case cfg.VerifyOnly && cfg.PublicKeyFile != "":
		keys, err := LoadPublicKeys(cfg.PublicKeyFile)
		if err != nil {
			return nil, err
		}
		k.PK.Keys = keys
	case cfg.VerifyOnly:
		return nil, errors.New("a verify-only server needs --jwks URL or --public-key FILE")
	case cfg.SigningKeyFile != "":
		ring, err := LoadKeyFile(cfg.SigningKeyFile)
		if err != nil {
			return nil, err
		}
		k.PK.Ring, k.PK.Keys = ring, ring
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
		k.PK.Ring, k.PK.Keys = ring, ring
	}

	if !cfg.VerifyOnly {
		tokenKey, err := LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "token-hs256.key"), 32)
		if err != nil {
			return nil, fmt.Errorf("token key: %w", err)
		}
		k.Tokens = &Tokens{Key: tokenKey, Issuer: cfg.Issuer, AccessTTL: orDefault(cfg.AccessTTL, 30*time.Minute),
			RefreshTTL: orDefault(cfg.RefreshTTL, 24*time.Hour), Families: cfg.Store, Store: cfg.Store, Users: k.Users, Now: now}
	}

	header := []Scheme{}
	if cfg.Basic != nil {
		header = append(header, cfg.Basic)
	}
	header = append(header, k.Digest, &Bearer{Pair: k.Tokens, PK: k.PK})
	// OAuth 1.0a: one more Authorization-header scheme; its consumer and
	// token secrets are sealed with the API-key box.
	if os, ok := cfg.Store.(yard.OAuthService); ok {
		k.OAuth1 = &OAuth1{Store: os, Replay: cfg.Store, Users: k.Users, Box: k.Box, BaseURL: cfg.Issuer,
			Now: now, CacheTTL: cacheTTL, Writers: cfg.SignatureWriters}
		header = append(header, k.OAuth1)
	}
	k.Chain = &Chain{Header: header, Query: []Scheme{k.Signed}, Cookie: []Scheme{k.Sessions}}
	return k, nil
}

// Login checks a user name and password for a login endpoint (sessions,
// the token pair, public-key tokens, and the sign-in pages of OAuth 1.0a
// and OpenID). The attempt takes its place in the login limiter before the
// password is hashed (429 when the limit is reached) and gives it back when
// the password was right; the hash runs under the process-wide bound of
// Hashing (503 when the server is busy).
func (k *Kit) Login(r *http.Request, username, password string) (*yard.User, error) {
	if username == "" || password == "" {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "A user name and a password are required.")
	}
	ctx := r.Context()
	attempt, err := k.Limiter.Begin(ctx, Keys(r, username)...)
	if err != nil {
		return nil, err
	}
	p, err := VerifyUserPassword(ctx, k.Store, username, password)
	if yard.ErrorCode(err) != yard.EUNAUTHORIZED {
		// Right, or not checked at all (busy, store down): not a guess.
		attempt.Succeeded(ctx)
	}
	if err != nil {
		return nil, err
	}
	return k.Store.FindUserByID(ctx, p.UserID)
}

// ForgetUser drops what this process caches about a user (after the user
// was changed or deleted).
func (k *Kit) ForgetUser(id string) {
	k.Users.Forget(id)
	k.Sessions.ForgetUser(id)
	if k.Basic != nil {
		k.Basic.Invalidate(id)
	}
}

// Purge deletes expired shared state; call it now and then.
func (k *Kit) Purge(ctx context.Context) error {
	if err := k.Limiter.Purge(ctx); err != nil {
		return err
	}
	if k.OAuth1 != nil {
		if err := k.OAuth1.Store.PurgeOAuth(ctx, k.Now()); err != nil {
			return err
		}
	}
	return k.Store.PurgeAuthState(ctx, k.Now(), k.SessionMax)
}
