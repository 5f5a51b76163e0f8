package auth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
	"golang.org/x/sync/singleflight"
)

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
	// passwords remembers (token, X-Password) pairs that matched pwh.
	passwords ttlCache[[32]byte, struct{}]
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
	sk := p.Ring.Active()
	if sk == nil {
		return "", time.Time{}, yard.Errorf(yard.EUNAVAILABLE, "This server only verifies public-key tokens; ask the issuing server.")
	}
	now := p.Now()
	expires = now.Add(p.TTL)
	c := &Claims{Subject: u.ID, Name: u.Name, IssuedAt: now.Unix(), Expires: expires.Unix(), IP: opt.BindIP}
	if opt.IncludePasswordHash {
		// A fresh, salted slow hash: never the stored credential hash.
		if c.PasswordHash, err = p.Hashing.Hash(cmp.Or(opt.Context, context.Background()), opt.Password); err != nil {
			return "", time.Time{}, err
		}
	}
	token, err = signJWT(c, jwa.EdDSA(), sk.Private, sk.ID)
	return token, expires, err
}

// Verify checks a public-key token on request r: key id, EdDSA signature,
// exp, ip binding, the X-Password header against pwh, and that the user may
// use the API.
func (p *PKTokens) Verify(r *http.Request, token, kid string) (*yard.Principal, error) {
	ctx := r.Context()
	c, err := p.verified.live(token, p.Now, func() (*Claims, error) {
		pub, ok := p.Keys.PublicKey(ctx, kid)
		if !ok {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The token was signed with an unknown key.")
		}
		c, err := verifyJWT(token, jwa.EdDSA(), pub)
		if err != nil || c.Use != "" {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not valid.")
		}
		return c, nil
	}, "The public-key token has expired; get a new one.", "The token expired")
	if err != nil {
		return nil, err
	}
	if c.IP != "" && c.IP != ClientIP(r) {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The token is bound to another address.")
	}
	pr, err := p.Users.Principal(ctx, c.Subject, "pk-token")
	if err != nil {
		return nil, err
	}
	if c.PasswordHash != "" {
		pw := r.Header.Get("X-Password")
		if pw == "" {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "This token needs the X-Password header.")
		}
		if err := p.checkPassword(r, pr.Name, token, c.PasswordHash, pw, p.Now()); err != nil {
			return nil, err
		}
	}
	return pr, nil
}

// checkPassword compares X-Password with the token's pwh claim. A pair
// that matched is remembered for a minute; any other check is a password
// check like a sign-in: it takes a place in the login limiter (per client
// address and user name) before the slow hash and gives it back when the
// password was right.
func (p *PKTokens) checkPassword(r *http.Request, username, token, pwh, pw string, now time.Time) error {
	key := sha256.Sum256([]byte(token + "\x00" + pw))
	if _, ok := p.passwords.get(key, now, time.Minute); ok {
		return nil
	}
	keys := Keys(r, username)
	_, err, _ := p.flights.Do(string(key[:]), func() (any, error) {
		ctx, cancel := detach(r.Context())
		defer cancel()
		return nil, p.Limiter.guard(ctx, keys, func() error {
			match, err := p.Hashing.Check(ctx, pwh, pw)
			if err == nil && !match {
				return yard.Errorf(yard.EUNAUTHORIZED, "The X-Password does not match the token.")
			}
			return err
		})
	})
	if err != nil {
		return err
	}
	p.passwords.put(key, struct{}{}, now, 100000)
	return nil
}

// newPKTokens makes the public-key token service of cfg: a verify-only
// server verifies with a JWKS URL or a public key file; a signing server
// signs with one key file or the rotating ring in KeyDir.
func newPKTokens(ctx context.Context, cfg Config, k *Kit) (*PKTokens, error) {
	now := k.Now
	pkTTL := defaults.Positive(cfg.PKTokenTTL, time.Hour)
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
		ring, err := LoadKeyFile(cfg.SigningKeyFile, jwa.EdDSA())
		if err != nil {
			return nil, err
		}
		pk.Ring, pk.Keys = ring, ring
	default:
		ring, err := openRotatingRing(filepath.Join(cfg.KeyDir, PKTokenKeyDir), jwa.EdDSA(), pkTTL, cfg.KeyRotation, now)
		if err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		pk.Ring, pk.Keys = ring, ring
	}
	return pk, nil
}
