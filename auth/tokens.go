package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// TokenPair is the body of a successful login or refresh (docs/auth.md).
type TokenPair struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	RefreshExpiresIn int    `json:"refresh_expires_in"`
}

// Token uses.
const (
	UseAccess  = "access"
	UseRefresh = "refresh"
)

// Tokens issues and checks the JWT token pair, signed with one algorithm
// (Alg), pinned: a token with any other alg is refused.
//
//   - HS256 (the default of ParseTokenAlg): an HMAC with the server secret Key,
//     so only the servers holding it can verify.
//   - EdDSA or ES256: the newest key of Ring signs, its key id in the kid
//     header; Keys finds the public key of a kid (the ring itself, or on a
//     verify-only server the issuer's JWKS or key file), and the public keys
//     are in the JWKS, so anyone can verify an access token.
//
// The access token carries the user's roles, fixed until the next refresh
// (spec: a change of access rights takes effect when the access token is
// renewed); whether the user may still use the API is checked through
// Users on every request.
type Tokens struct {
	Alg        jwa.SignatureAlgorithm
	Key        []byte
	Ring       *KeyRing
	Keys       KeySource
	Issuer     string
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	// Store keeps the refresh families, and is read at refresh, uncached,
	// for the user's current roles.
	Store Store
	// Users answers whether the user may use the API (cached).
	Users *UserCache
	Now   func() time.Time

	verified verifiedTokens
}

// ParseTokenAlg reads the name of a token pair algorithm: HS256 (also
// for ""), EdDSA or ES256.
func ParseTokenAlg(name string) (jwa.SignatureAlgorithm, error) {
	switch name {
	case "", "HS256":
		return jwa.HS256(), nil
	case "EdDSA":
		return jwa.EdDSA(), nil
	case "ES256":
		return jwa.ES256(), nil
	}
	return jwa.SignatureAlgorithm{}, fmt.Errorf("token algorithm %q: want HS256, EdDSA or ES256", name)
}

func (t *Tokens) symmetric() bool { return t.Alg.String() == jwa.HS256().String() }

// sign signs claims with the pair's algorithm and key.
func (t *Tokens) sign(c *Claims) (string, error) {
	if t.symmetric() {
		return signJWT(c, jwa.HS256(), t.Key, "")
	}
	sk := t.Ring.Active()
	if sk == nil {
		return "", yard.Errorf(yard.EUNAVAILABLE, "This server only verifies tokens; ask the issuing server.")
	}
	return signJWT(c, t.Alg, sk.Private, sk.ID)
}

var errUnknownKey = errors.New("unknown key id")

// verify checks a token of the pair: the header's alg must be the pair's,
// and the signature must verify with the pair's key (HS256) or with the
// public key its kid names. Claims are the caller's business.
func (t *Tokens) verify(ctx context.Context, token string) (*Claims, error) {
	h, err := peekHeader(token)
	if err != nil || h.Alg != t.Alg.String() {
		return nil, errMalformedJWT
	}
	if t.symmetric() {
		return verifyJWT(token, jwa.HS256(), t.Key)
	}
	pub, ok := t.Keys.PublicKey(ctx, h.Kid)
	if !ok {
		return nil, errUnknownKey
	}
	return verifyJWT(token, t.Alg, pub)
}

// newJTI returns a new token id (jti).
func newJTI() string { return randomString("", 16) }

// Issue logs a user in: a new refresh family and its first pair.
func (t *Tokens) Issue(ctx context.Context, u *yard.User) (*TokenPair, error) {
	f := &yard.RefreshFamily{ID: yard.NewID(), UserID: u.ID, Current: newJTI(), ExpiresAt: t.Now().Add(t.RefreshTTL)}
	if err := t.Store.CreateRefreshFamily(ctx, f); err != nil {
		return nil, err
	}
	return t.pair(u, f.ID, f.Current)
}

func (t *Tokens) pair(u *yard.User, family, jti string) (*TokenPair, error) {
	now := t.Now()
	access := &Claims{Issuer: t.Issuer, Subject: u.ID, IssuedAt: now.Unix(), Expires: now.Add(t.AccessTTL).Unix(),
		ID: newJTI(), Name: u.Name, Roles: u.Roles, Use: UseAccess}
	refresh := &Claims{Issuer: t.Issuer, Subject: u.ID, IssuedAt: now.Unix(), Expires: now.Add(t.RefreshTTL).Unix(),
		ID: jti, Use: UseRefresh, Family: family}
	a, err := t.sign(access)
	if err != nil {
		return nil, err
	}
	r, err := t.sign(refresh)
	if err != nil {
		return nil, err
	}
	return &TokenPair{AccessToken: a, RefreshToken: r, TokenType: "Bearer",
		ExpiresIn: int(t.AccessTTL.Seconds()), RefreshExpiresIn: int(t.RefreshTTL.Seconds())}, nil
}

// InvalidTokenChallenge is the WWW-Authenticate value sent with a 400 for
// an expired access token or an invalid refresh token (RFC 6750 §3.1).
func InvalidTokenChallenge(desc string) []string {
	return []string{`Bearer realm="` + Realm + `", error="invalid_token", error_description="` + desc + `"`}
}

func refreshInvalid(msg string) error {
	return &yard.Error{Code: yard.EREFRESHINVALID, Message: msg, Challenge: InvalidTokenChallenge("The refresh token is not valid")}
}

// checkRefresh verifies a refresh token's signature, use and expiry.
func (t *Tokens) checkRefresh(ctx context.Context, token string) (*Claims, error) {
	c, err := t.verify(ctx, token)
	if errors.Is(err, errMalformedJWT) {
		return nil, refreshInvalid("The refresh token is malformed.")
	}
	if err != nil || c.Use != UseRefresh || c.Family == "" || c.ID == "" {
		return nil, refreshInvalid("The refresh token is not valid.")
	}
	if !t.Now().Before(time.Unix(c.Expires, 0)) {
		return nil, refreshInvalid("The refresh token has expired; sign in again.")
	}
	return c, nil
}

// Refresh exchanges a refresh token for a new pair, reloading the user's
// roles. A reused token revokes its family; a disabled user's family is
// revoked. Every refusal is EREFRESHINVALID (400).
func (t *Tokens) Refresh(ctx context.Context, token string) (*TokenPair, error) {
	c, err := t.checkRefresh(ctx, token)
	if err != nil {
		return nil, err
	}
	u, err := t.Store.FindUserByID(ctx, c.Subject)
	if yard.ErrorCode(err) == yard.ENOTFOUND || (err == nil && u.Disabled) {
		_ = t.Store.RevokeRefreshFamily(ctx, c.Family)
		return nil, refreshInvalid("The account no longer exists or is disabled.")
	} else if err != nil {
		return nil, err
	}
	next := newJTI()
	switch res, err := t.Store.RotateRefresh(ctx, c.Family, c.ID, next, t.Now().Add(t.RefreshTTL)); {
	case err != nil:
		return nil, err
	case res == yard.RotateReused:
		return nil, refreshInvalid("The refresh token was already used; its family is revoked. Sign in again.")
	case res != yard.RotateOK:
		return nil, refreshInvalid("The refresh token has been revoked. Sign in again.")
	}
	t.Users.Forget(u.ID)
	return t.pair(u, c.Family, next)
}

// Logout revokes the family of a refresh token.
func (t *Tokens) Logout(ctx context.Context, token string) error {
	c, err := t.checkRefresh(ctx, token)
	if err != nil {
		return err
	}
	return t.Store.RevokeRefreshFamily(ctx, c.Family)
}

// VerifyAccess checks an access token: signature, use, expiry (an
// expired but genuine token is ETOKENEXPIRED, 400), then that the user may
// use the API. Verified tokens are remembered until they expire, so a
// request pays for the signature check once per token.
func (t *Tokens) VerifyAccess(ctx context.Context, token string) (*yard.Principal, error) {
	c, err := t.verified.live(token, t.Now, func() (*Claims, error) {
		c, err := t.verify(ctx, token)
		if errors.Is(err, errUnknownKey) {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The token was signed with an unknown key.")
		}
		if err != nil {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not valid.")
		}
		if c.Use != UseAccess {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not an access token.")
		}
		return c, nil
	}, "The access token has expired; refresh it.", "The access token expired")
	if err != nil {
		return nil, err
	}
	if _, err := t.Users.Principal(ctx, c.Subject, "bearer"); err != nil {
		return nil, err
	}
	return &yard.Principal{UserID: c.Subject, Name: c.Name, Roles: c.Roles, Scheme: "bearer"}, nil
}

// Bearer is the Authorization: Bearer scheme (RFC 6750). It takes an access
// token of the pair or a public-key token. The header's alg only chooses
// which verifier to try, and each verifier accepts exactly one algorithm
// with its own keys, so no algorithm confusion is possible. When both kinds
// are EdDSA (--token-alg EdDSA), the token_use claim, read before
// verifying, chooses: "access" is the pair's, no token_use a public-key
// token's; the verifier chosen then checks everything, that claim
// included.
type Bearer struct {
	// Pair verifies access tokens of the pair: nil when it is off (a
	// verify-only server of an HS256 pair, whose key would be a signing
	// key); a verify-only server of an EdDSA or ES256 pair verifies with the
	// issuer's public keys.
	Pair *Tokens
	PK   *PKTokens // nil when public-key tokens are off
}

// Name implements Scheme.
func (b *Bearer) Name() string { return "bearer" }

// Match implements Scheme.
func (b *Bearer) Match(r *http.Request) bool { return hasScheme(r, b.Name()) }

// Challenges implements Scheme (RFC 6750 §3).
// A request that presented a bearer token and is refused gets
// error="invalid_token" (RFC 6750 §3.1): the token is malformed, badly
// signed, or its user may not use the API.
func (b *Bearer) Challenges(r *http.Request) []string {
	if r != nil && b.Match(r) {
		return []string{`Bearer realm="` + Realm + `", error="invalid_token"`}
	}
	return []string{`Bearer realm="` + Realm + `"`}
}

// Authenticate implements Scheme.
func (b *Bearer) Authenticate(r *http.Request) (*yard.Principal, error) {
	_, token := AuthScheme(r.Header.Get("Authorization"))
	h, err := peekHeader(token)
	if err != nil {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is malformed.")
	}
	pk := b.PK != nil && h.Alg == jwa.EdDSA().String()
	// When both kinds take the alg, token_use chooses.
	pair := b.Pair != nil && h.Alg == b.Pair.Alg.String() && (!pk || peekUse(token) == UseAccess)
	switch {
	case pair:
		return b.Pair.VerifyAccess(r.Context(), token)
	case pk:
		return b.PK.Verify(r, token, h.Kid)
	}
	return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not valid.")
}

// buildBearer is the bearer tokens' entry in the chain's ordered list
// (kit.go): one scheme for both kinds of token, the token pair and
// public-key tokens (pktoken.go). The pair is signed with HS256 and the
// secret DATA/keys/token-hs256.key, or with EdDSA or ES256 and the
// rotating keys of DATA/keys/token-eddsa or token-es256 (TokenPairKeyDir),
// kept in the JWKS for the longest token lifetime after they are replaced.
// A verify-only server issues no pair; it verifies access tokens of an
// EdDSA or ES256 pair with the issuer's public keys (the JWKS URL or key
// file it verifies public-key tokens with).
func buildBearer(ctx context.Context, cfg Config, k *Kit) (Scheme, error) {
	var err error
	if k.PK, err = newPKTokens(ctx, cfg, k); err != nil {
		return nil, err
	}
	alg, err := ParseTokenAlg(cfg.TokenAlg)
	if err != nil {
		return nil, err
	}
	accessTTL, refreshTTL := defaults.Positive(cfg.AccessTTL, 30*time.Minute), defaults.Positive(cfg.RefreshTTL, 24*time.Hour)
	pair := &Tokens{Alg: alg, Issuer: cfg.Issuer, AccessTTL: accessTTL, RefreshTTL: refreshTTL,
		Store: cfg.Store, Users: k.Users, Now: k.Now}
	switch {
	case cfg.VerifyOnly && pair.symmetric():
		pair = nil
	case cfg.VerifyOnly:
		pair.Keys = k.PK.Keys
	case pair.symmetric():
		if pair.Key, err = LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "token-hs256.key"), 32); err != nil {
			return nil, fmt.Errorf("token key: %w", err)
		}
		k.Tokens = pair
	default:
		ring, err := openRotatingRing(filepath.Join(cfg.KeyDir, TokenPairKeyDir(alg)), alg, max(accessTTL, refreshTTL), cfg.KeyRotation, k.Now)
		if err != nil {
			return nil, fmt.Errorf("token pair keys: %w", err)
		}
		pair.Ring, pair.Keys = ring, ring
		k.Tokens = pair
	}
	return &Bearer{Pair: pair, PK: k.PK}, nil
}
