package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/store"
)

// authFlags are the flags of the Digest, session, token and signed-request
// schemes beyond those serve already has (lifetimes, login rate).
type authFlags struct {
	verifyOnly  bool
	jwksURL     string
	jwksCA      string
	publicKey   string
	signingKey  string
	tokenAlg    string
	pkTTL       time.Duration
	keyRotation time.Duration
	cacheTTL    time.Duration
	// Hardening (docs/auth.md, "Login rate limit", "Signed requests").
	hashConcurrency int
	hashQueue       int
	signedBinding   bool
	// Client developers (docs/auth.md, "Digest", "Diagnostics of a
	// refused signature").
	digestNonceTTL time.Duration
	diagnostics    bool
}

func (f *authFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.verifyOnly, "verify-only", false, "hold no signing key: verify public-key tokens with --jwks or --public-key; no token pair or pk-token issuing")
	fs.StringVar(&f.jwksURL, "jwks", "", "JWKS URL of the issuing server (with --verify-only)")
	fs.StringVar(&f.jwksCA, "jwks-ca", "", "PEM CA certificate to trust when fetching --jwks (e.g. the issuer's self-signed DATA/tls/cert.pem)")
	fs.StringVar(&f.publicKey, "public-key", "", "Ed25519 public key file, PEM or JWKS (with --verify-only)")
	fs.StringVar(&f.signingKey, "signing-key", "", "Ed25519 private key file (PKCS #8 PEM) for public-key tokens, instead of the rotating keys in DATA/keys/ed25519")
	fs.StringVar(&f.tokenAlg, "token-alg", "HS256", "signing algorithm of the token pair: HS256 (a server secret), EdDSA or ES256 (keys in DATA/keys/token-eddsa or token-es256, published in the JWKS); a verify-only server given EdDSA or ES256 verifies access tokens with the issuer's keys")
	fs.DurationVar(&f.pkTTL, "pk-token-ttl", time.Hour, "lifetime of public-key tokens")
	fs.DurationVar(&f.keyRotation, "key-rotation", 30*24*time.Hour, "make new token signing keys at start when the newest is older than this (0: never)")
	fs.DurationVar(&f.cacheTTL, "auth-cache-ttl", 0, "how long a process trusts what it read of a user, password, session or API key (0: 5s on SQLite, none on PostgreSQL, where other processes make changes too; negative: none)")
	fs.IntVar(&f.hashConcurrency, "hash-concurrency", 0, "password hashes (argon2id, 19 MiB each) run at once by this process (0: one fewer than the cores, at least 1)")
	fs.IntVar(&f.hashQueue, "hash-queue", -1, "password checks that may wait for a hashing slot; past it they answer 503 (-1: four per slot)")
	fs.BoolVar(&f.signedBinding, "signed-require-binding", false, "signed requests with unsafe methods must sign the query variables method and bodyhash")
	fs.DurationVar(&f.digestNonceTTL, "digest-nonce-ttl", 5*time.Minute, "lifetime of a Digest nonce; a right response with an older one gets a new challenge with stale=true")
	fs.BoolVar(&f.diagnostics, "auth-diagnostics", true, "signature refusals (OAuth 1.0a, signed requests, Digest) say what the server computed: base string, canonical string, time window, refused Digest field")
}

// check refuses flag values serve cannot start with, before it writes
// anything.
func (f *authFlags) check() error {
	if _, err := auth.ParseTokenAlg(f.tokenAlg); err != nil {
		return usageError("--token-alg takes HS256, EdDSA or ES256")
	}
	return nil
}

// newAuthKit builds every first-party scheme beside Basic (Digest,
// sessions, the token pair, public-key tokens, signed requests, OAuth
// 1.0a) and the chain that runs them in order, Basic first.
func newAuthKit(ctx context.Context, c *serveConfig, db *store.DB, limiter *auth.LoginLimiter, basic *auth.Basic) (*auth.Kit, error) {
	if c.auth.digestNonceTTL <= 0 {
		return nil, usageError("--digest-nonce-ttl must be positive")
	}
	cacheTTL := c.auth.cacheTTL
	if cacheTTL == 0 && db.Engine() == store.Postgres {
		// Several processes: a logout, a deleted key or a disabled user
		// on one holds on every other at once.
		cacheTTL = -1
	}
	kit, err := auth.NewKit(ctx, auth.Config{
		Store: db, Limiter: limiter, Hashing: basic.Hashing, Basic: basic,
		KeyDir: filepath.Join(c.data, "keys"), Issuer: c.baseURL, TokenAlg: c.auth.tokenAlg,
		AccessTTL: c.accessTTL, RefreshTTL: c.refreshTTL, PKTokenTTL: c.auth.pkTTL,
		SessionIdle: c.sessionIdle, SessionMax: c.sessionMax, CacheTTL: cacheTTL,
		KeyRotation: c.auth.keyRotation, SigningKeyFile: c.auth.signingKey,
		NonceTTL: c.auth.digestNonceTTL, HideDiagnostics: !c.auth.diagnostics,
		SignedRequireBinding: c.auth.signedBinding,
		VerifyOnly:           c.auth.verifyOnly, PublicKeyFile: c.auth.publicKey, JWKSURL: c.auth.jwksURL, JWKSCAFile: c.auth.jwksCA,
	})
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	return kit, nil
}

// eachKeyRing opens the rotating token signing keys of "yard keys" and
// then does f with each: public-key tokens' (made when missing), then the
// token pair's EdDSA and ES256 keys when DATA/keys holds them.
func eachKeyRing(fs *flag.FlagSet, args []string, getenv func(string) string, f func(*auth.KeyRing) error) error {
	data := fs.String("data", "./data", "data directory (its keys/ holds the token signing keys)")
	if err := parseNoArgs(fs, args, getenv); err != nil {
		return err
	}
	dir := filepath.Join(*data, "keys")
	pk, err := auth.OpenKeyRing(filepath.Join(dir, auth.PKTokenKeyDir), jwa.EdDSA(), 24*time.Hour, time.Now)
	if err != nil {
		return err
	}
	rings := []*auth.KeyRing{pk}
	for _, alg := range []jwa.SignatureAlgorithm{jwa.EdDSA(), jwa.ES256()} {
		pairDir := filepath.Join(dir, auth.TokenPairKeyDir(alg))
		if _, err := os.Stat(pairDir); err != nil {
			continue
		}
		ring, err := auth.OpenKeyRing(pairDir, alg, 24*time.Hour, time.Now)
		if err != nil {
			return err
		}
		rings = append(rings, ring)
	}
	for _, ring := range rings {
		if err := f(ring); err != nil {
			return err
		}
	}
	return nil
}

// runKeysRotate is "yard keys rotate": make a new signing key for
// public-key tokens and, when the token pair has keys, for the pair.
func runKeysRotate(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return eachKeyRing(newFlagSet("keys rotate", stderr), args, getenv, func(ring *auth.KeyRing) error {
		if err := ring.Rotate(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "new signing key", ring.Active().ID, "in", ring.Dir)
		return nil
	})
}

// runKeysPublic is "yard keys public": print the signing public keys as
// PEM (public-key tokens', then the token pair's), for verify-only
// servers (--public-key).
func runKeysPublic(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return eachKeyRing(newFlagSet("keys public", stderr), args, getenv, func(ring *auth.KeyRing) error {
		pem, err := auth.PublicKeyPEM(ring.Active().Public)
		if err == nil {
			_, err = stdout.Write(pem)
		}
		return err
	})
}
