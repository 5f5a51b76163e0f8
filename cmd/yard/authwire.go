package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/yard-api/yard/auth"
)

// authFlags are the flags of the Digest, session, token and signed-request
// schemes beyond those serve already has (lifetimes, login rate).
type authFlags struct {
	verifyOnly  bool
	jwksURL     string
	jwksCA      string
	publicKey   string
	signingKey  string
	pkTTL       time.Duration
	keyRotation time.Duration
	cacheTTL    time.Duration
	// Hardening (docs/auth.md, "Login rate limit", "Signed requests").
	hashConcurrency int
	hashQueue       int
	signedBinding   bool
}

func (f *authFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.verifyOnly, "verify-only", false, "hold no signing key: verify public-key tokens with --jwks or --public-key; no token pair or pk-token issuing")
	fs.StringVar(&f.jwksURL, "jwks", "", "JWKS URL of the issuing server (with --verify-only)")
	fs.StringVar(&f.jwksCA, "jwks-ca", "", "PEM CA certificate to trust when fetching --jwks (e.g. the issuer's self-signed DATA/tls/cert.pem)")
	fs.StringVar(&f.publicKey, "public-key", "", "Ed25519 public key file, PEM or JWKS (with --verify-only)")
	fs.StringVar(&f.signingKey, "signing-key", "", "Ed25519 private key file (PKCS #8 PEM) for public-key tokens, instead of the rotating keys in DATA/keys/ed25519")
	fs.DurationVar(&f.pkTTL, "pk-token-ttl", time.Hour, "lifetime of public-key tokens")
	fs.DurationVar(&f.keyRotation, "key-rotation", 30*24*time.Hour, "make a new token signing key at start when the newest is older than this (0: never)")
	fs.DurationVar(&f.cacheTTL, "auth-cache-ttl", 5*time.Second, "how long a process trusts what it read of a user, password, session or API key")
	fs.IntVar(&f.hashConcurrency, "hash-concurrency", 0, "password hashes (argon2id, 19 MiB each) run at once by this process (0: one fewer than the cores, at least 1)")
	fs.IntVar(&f.hashQueue, "hash-queue", -1, "password checks that may wait for a hashing slot; past it they answer 503 (-1: four per slot)")
	fs.BoolVar(&f.signedBinding, "signed-require-binding", false, "signed requests with unsafe methods must sign the query variables method and bodyhash")
}

func init() {
	wirings = append(wirings, wireAuth)
	extraCommands["keys"] = runKeys
}

// wireAuth puts every first-party scheme into the chain, after Basic.
func wireAuth(ctx context.Context, a *app) error {
	c := a.cfg
	// On SQLite, one process keeps the replay log of signed requests: a
	// second serve on the same file stops here, not at a signed request.
	if err := a.db.OpenSignatureLog(); err != nil {
		return err
	}
	if c.auth.hashConcurrency < 0 {
		return usageError("--hash-concurrency must be 0 or more")
	}
	// One bound on password hashing for the whole process, and login
	// attempts counted in the store, shared by every process on it.
	auth.Hashing = auth.NewHashGate(c.auth.hashConcurrency, c.auth.hashQueue, 0)
	a.api.Limiter.Store = a.db
	kit, err := auth.NewKit(ctx, auth.Config{
		Store: a.db, Limiter: a.api.Limiter, Basic: a.api.Basic,
		KeyDir: filepath.Join(c.data, "keys"), Issuer: c.baseURL,
		AccessTTL: c.accessTTL, RefreshTTL: c.refreshTTL, PKTokenTTL: c.auth.pkTTL,
		SessionIdle: c.sessionIdle, SessionMax: c.sessionMax, CacheTTL: c.auth.cacheTTL,
		KeyRotation: c.auth.keyRotation, SigningKeyFile: c.auth.signingKey,
		SignatureWriters: a.db.SignatureWriters(),
		VerifyOnly:       c.auth.verifyOnly, PublicKeyFile: c.auth.publicKey, JWKSURL: c.auth.jwksURL, JWKSCAFile: c.auth.jwksCA,
	})
	if err != nil {
		return fmt.Errorf("authentication: %w", err)
	}
	kit.Signed.RequireBinding = c.auth.signedBinding
	a.api.Auth, a.api.Kit = kit.Chain, kit
	a.background = append(a.background, func(ctx context.Context) {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := kit.Purge(ctx); err != nil && ctx.Err() == nil {
					a.logger.Warn("purging expired auth state", slog.String("error", err.Error()))
				}
			}
		}
	})
	return nil
}

// runKeys is "yard keys rotate|public [--data DIR]": make a new signing key
// for public-key tokens, or print the live public keys as PEM for
// verify-only servers.
func runKeys(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "rotate" && args[0] != "public") {
		return usageError("usage: yard keys rotate|public [--data DIR]")
	}
	var sf storeFlags
	fs := newFlagSet("keys", stderr)
	sf.register(fs)
	if err := parseFlags(fs, args[1:], getenv); err != nil {
		return err
	}
	ring, err := auth.OpenKeyRing(filepath.Join(sf.data, "keys", "ed25519"), 24*time.Hour, time.Now)
	if err != nil {
		return err
	}
	if args[0] == "rotate" {
		if err := ring.Rotate(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "new signing key", ring.Active().ID)
		return nil
	}
	pem, err := auth.PublicKeyPEM(ring.Active().Public)
	if err != nil {
		return err
	}
	_, err = stdout.Write(pem)
	return err
}
