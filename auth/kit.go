package auth

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
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
	// Hashing bounds every password hash of the process (nil: none).
	Hashing *HashGate
	// Basic is the lead's Basic scheme; it is put first in the chain.
	Basic *Basic
	// KeyDir holds the server's secret files and Ed25519 keys
	// (DATA/keys); processes sharing it share every key.
	KeyDir string
	// Issuer is the iss claim of the token pair (the public base URL).
	Issuer string
	// TokenAlg signs the token pair: "HS256" (the default, also ""),
	// "EdDSA" or "ES256" (tokens.go, buildBearer).
	TokenAlg string

	AccessTTL   time.Duration // 30m
	RefreshTTL  time.Duration // 24h
	PKTokenTTL  time.Duration // 1h
	SessionIdle time.Duration // 30m
	SessionMax  time.Duration // 12h
	NonceTTL    time.Duration // 5m, of Digest nonces (serve --digest-nonce-ttl)
	// CacheTTL bounds how long a process trusts what it read of a user,
	// a session or an API key (a change made on another process takes
	// effect within it). 0 is 5s; a negative value is none: every request
	// reads the store (a Basic check's remembered hash is compared with
	// it, never computed again).
	CacheTTL time.Duration
	// KeyRotation makes a new signing key (public-key tokens', and the
	// token pair's when it is EdDSA or ES256) when the newest is older than
	// this at start-up (0: never).
	KeyRotation time.Duration
	// SignedRequireBinding makes signed requests with unsafe methods sign
	// the query variables method and bodyhash (Signed.RequireBinding).
	SignedRequireBinding bool
	// HideDiagnostics leaves out of signature refusals (OAuth 1.0a, signed
	// requests, Digest) what the server computed and which part it refused
	// (Diagnostics; docs/auth.md, "Diagnostics of a refused signature"):
	// serve --auth-diagnostics=false.
	HideDiagnostics bool

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
	Hashing *HashGate
	Store   Store
	Now     func() time.Time
	// cacheTTL is Config.CacheTTL with its default, for the schemes.
	cacheTTL time.Duration
}

// carrier is where a scheme's credentials travel; the chain tries the
// carriers in the order of docs/auth.md: the Authorization header, then
// query variables, then the session cookie.
type carrier int

const (
	inHeader carrier = iota
	inQuery
	inCookie
)

// chainOrder is the chain's ordered list: every first-party scheme, in the
// order the chain tries it within its carrier. Each entry's build function
// lives in the scheme's own file; it makes the scheme from the
// configuration and the kit's shared services (Users, Box, Limiter, Now),
// sets the kit's field for it when endpoints need one, and returns nil
// when this server does not offer the scheme. Adding a scheme is one file
// and one entry here (docs/architecture.md, "How to add an authentication scheme").
var chainOrder = []struct {
	carrier carrier
	build   func(context.Context, Config, *Kit) (Scheme, error)
}{
	{inHeader, buildBasic},          // basic.go (the server's own, put first)
	{inHeader, buildDigest},         // digest.go
	{inHeader, buildBearer},         // tokens.go: the token pair and public-key tokens (pktoken.go)
	{inHeader, buildOAuth1},         // oauth1.go, when the store keeps OAuth state
	{inQuery, buildOAuth1InRequest}, // oauth1.go: OAuth 1.0a parameters in the form body or the query
	{inQuery, buildSigned},          // signed.go
	{inCookie, buildSessions},       // session.go
}

// NewKit builds the schemes of cfg and the chain that runs them in the
// documented order (docs/auth.md): Authorization header (Basic, Digest, Bearer, and OAuth
// 1.0a when the store keeps OAuth state), then the query (OAuth 1.0a
// parameters in the query or a form body, signed requests), then the
// session cookie.
func NewKit(ctx context.Context, cfg Config) (*Kit, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	cacheTTL := defaults.Positive(cfg.CacheTTL, 5*time.Second)
	if cfg.CacheTTL < 0 {
		cacheTTL = 0
	}
	k := &Kit{Basic: cfg.Basic, Limiter: cfg.Limiter, Hashing: cfg.Hashing, Store: cfg.Store, Now: now, cacheTTL: cacheTTL}
	k.Users = &UserCache{Users: cfg.Store, TTL: cacheTTL, Now: now}

	boxKey, err := LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "apikey-seal.key"), 32)
	if err != nil {
		return nil, fmt.Errorf("API key sealing key: %w", err)
	}
	if k.Box, err = NewSecretBox(boxKey); err != nil {
		return nil, err
	}

	k.Chain = &Chain{}
	for _, entry := range chainOrder {
		scheme, err := entry.build(ctx, cfg, k)
		if err != nil {
			return nil, err
		}
		if scheme == nil {
			continue // not offered by this server
		}
		group := [...]*[]Scheme{inHeader: &k.Chain.Header, inQuery: &k.Chain.Query, inCookie: &k.Chain.Cookie}[entry.carrier]
		*group = append(*group, scheme)
	}
	return k, nil
}

// Login checks a user name and password for a login endpoint (sessions,
// the token pair, public-key tokens, and the sign-in pages of OAuth 1.0a
// and OpenID). The attempt takes its place in the login limiter before the
// password is hashed (429 when the limit is reached) and gives it back when
// the password was right; the hash runs through the kit's gate (503 when
// the server is busy).
func (k *Kit) Login(r *http.Request, username, password string) (*yard.User, error) {
	if username == "" || password == "" {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "A user name and a password are required.")
	}
	ctx := r.Context()
	var p *yard.Principal
	err := k.Limiter.guard(ctx, Keys(r, username), func() (err error) {
		p, err = VerifyUserPassword(ctx, k.Hashing, k.Store, username, password)
		return err
	})
	if err != nil {
		return nil, err
	}
	return k.Store.FindUserByID(ctx, p.UserID)
}

// JWKS returns the JSON Web Key Set of the keys this server signs with:
// public-key tokens' and, when the token pair is EdDSA or ES256, the
// pair's. A verify-only server signs nothing: ENOTFOUND.
func (k *Kit) JWKS() ([]byte, error) {
	if k.PK == nil || k.PK.Ring == nil {
		return nil, yard.Errorf(yard.ENOTFOUND, "This server does not sign tokens; its keys are published by the issuing server.")
	}
	// A server that signs has the pair too; its Ring is nil with HS256.
	return JWKS(k.PK.Ring, k.Tokens.Ring)
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
	return k.Store.PurgeAuthState(ctx, k.Now(), k.Sessions.Max)
}
