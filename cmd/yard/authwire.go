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
}

func (f *authFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.verifyOnly, "verify-only", false, "hold no signing key: verify public-key tokens with --jwks or --public-key; no token pair or pk-token issuing")
	fs.StringVar(&f.jwksURL, "jwks", "", "JWKS URL of the issuing server (with --verify-only)")
	fs.StringVar(&f.jwksCA, "jwks-ca", "", "PEM CA certificate to trust when fetching --jwks (e.g. the issuer's self-signed DATA/tls/cert.pem)")
	fs.StringVar(&f.publicKey, "public-key", "", "Ed25519 public key file, PEM or JWKS (with --verify-only)")
	fs.StringVar(&f.signingKey, "signing-key", "", "Ed25519 private key file (PKCS #8 PEM) for public-key tokens, instead of the rotating keys in DATA/keys/ed25519")
	fs.DurationVar(&f.pkTTL, "pk-token-ttl", time.Hour, "lifetime of public-key tokens")
	fs.DurationVar(&f.keyRotation, "key-rotation", 30*24*time.Hour, "make a new token signing key at start when the newest is older than this (0: never)")
	fs.DurationVar(&f.cacheTTL, "auth-cache-ttl", 5*time.Second, "how long a process trusts what it read of a user, session or API key")
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
