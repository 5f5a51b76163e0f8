package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/yard-api/yard"
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

// Tokens issues and checks the JWT token pair: HS256 with a server secret
// (alg pinned: a token with any other alg is refused). The access token
// carries the user's roles, fixed until the next refresh (spec: a change of
// access rights takes effect when the access token is renewed); whether the
// user may still use the API is checked through Users on every request.
type Tokens struct {
	Key        []byte
	Issuer     string
	AccessTTL  time.Duration
	RefreshTTL time.Duration
	Families   yard.AuthStateService
	// Store is read at refresh, uncached, for the user's current roles.
	Store Users
	// Users answers whether the user may use the API (cached).
	Users *UserCache
	Now   func() time.Time

	verified verifiedTokens
}

func newJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Issue logs a user in: a new refresh family and its first pair.
func (t *Tokens) Issue(ctx context.Context, u *yard.User) (*TokenPair, error) {
	f := &yard.RefreshFamily{ID: yard.NewID(), UserID: u.ID, Current: newJTI(), ExpiresAt: t.Now().Add(t.RefreshTTL)}
	if err := t.Families.CreateRefreshFamily(ctx, f); err != nil {
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
	a, err := signJWT(access, jwa.HS256(), t.Key, "")
	if err != nil {
		return nil, err
	}
	r, err := signJWT(refresh, jwa.HS256(), t.Key, "")
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
func (t *Tokens) checkRefresh(token string) (*Claims, error) {
	if h, err := peekHeader(token); err != nil || h.Alg != jwa.HS256().String() {
		return nil, refreshInvalid("The refresh token is malformed.")
	}
	c, err := verifyJWT(token, jwa.HS256(), t.Key)
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
	c, err := t.checkRefresh(token)
	if err != nil {
		return nil, err
	}
	u, err := t.Store.FindUserByID(ctx, c.Subject)
	if yard.ErrorCode(err) == yard.ENOTFOUND || (err == nil && u.Disabled) {
		_ = t.Families.RevokeRefreshFamily(ctx, c.Family)
		return nil, refreshInvalid("The account no longer exists or is disabled.")
	} else if err != nil {
		return nil, err
	}
	next := newJTI()
	switch res, err := t.Families.RotateRefresh(ctx, c.Family, c.ID, next, t.Now().Add(t.RefreshTTL)); {
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
	c, err := t.checkRefresh(token)
	if err != nil {
		return err
	}
	return t.Families.RevokeRefreshFamily(ctx, c.Family)
}

// VerifyAccess checks an HS256 access token: signature, use, expiry (an
// expired but genuine token is ETOKENEXPIRED, 400), then that the user may
// use the API. Verified tokens are remembered until they expire, so a
// request pays for the signature check once per token.
func (t *Tokens) VerifyAccess(ctx context.Context, token string) (*yard.Principal, error) {
	c, err := t.verified.verify(token, func() (*Claims, error) {
		c, err := verifyJWT(token, jwa.HS256(), t.Key)
		if err != nil {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not valid.")
		}
		if c.Use != UseAccess {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not an access token.")
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	if !t.Now().Before(time.Unix(c.Expires, 0)) {
		t.verified.forget(token)
		return nil, &yard.Error{Code: yard.ETOKENEXPIRED, Message: "The access token has expired; refresh it.",
			Challenge: InvalidTokenChallenge("The access token expired")}
	}
	if _, err := t.Users.Principal(ctx, c.Subject); err != nil {
		return nil, err
	}
	return &yard.Principal{UserID: c.Subject, Name: c.Name, Roles: c.Roles, Scheme: "bearer"}, nil
}

// Bearer is the Authorization: Bearer scheme (RFC 6750). It takes an access
// token of the pair (HS256) or a public-key token (EdDSA); the header's alg
// only chooses which verifier to try, and each verifier accepts exactly one
// algorithm with its own key, so no algorithm confusion is possible.
type Bearer struct {
	Pair *Tokens   // nil when the token pair is off (verify-only)
	PK   *PKTokens // nil when public-key tokens are off
}

// Name implements Scheme.
func (b *Bearer) Name() string { return "bearer" }

// Match implements Scheme.
func (b *Bearer) Match(r *http.Request) bool {
	s, _ := AuthScheme(r.Header.Get("Authorization"))
	return s == "bearer"
}

// Challenges implements Scheme (RFC 6750 §3).
func (b *Bearer) Challenges(*http.Request) []string {
	return []string{`Bearer realm="` + Realm + `"`}
}

// Authenticate implements Scheme.
func (b *Bearer) Authenticate(r *http.Request) (*yard.Principal, error) {
	_, token := AuthScheme(r.Header.Get("Authorization"))
	h, err := peekHeader(token)
	if err != nil {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is malformed.")
	}
	switch {
	case h.Alg == jwa.HS256().String() && b.Pair != nil:
		return b.Pair.VerifyAccess(r.Context(), token)
	case h.Alg == jwa.EdDSA().String() && b.PK != nil:
		return b.PK.Verify(r, token, h.Kid)
	}
	return nil, yard.Errorf(yard.EUNAUTHORIZED, "The bearer token is not valid.")
}

// buildBearer is the bearer tokens' entry in the chain's ordered list
// (kit.go): one scheme for both kinds of token, the token pair (not on a
// verify-only server, whose HMAC key would be a signing key) and
// public-key tokens (pktoken.go).
func buildBearer(ctx context.Context, cfg Config, k *Kit) (Scheme, error) {
	var err error
	if k.PK, err = newPKTokens(ctx, cfg, k); err != nil {
		return nil, err
	}
	if !cfg.VerifyOnly {
		tokenKey, err := LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "token-hs256.key"), 32)
		if err != nil {
			return nil, fmt.Errorf("token key: %w", err)
		}
		k.Tokens = &Tokens{Key: tokenKey, Issuer: cfg.Issuer, AccessTTL: orDefault(cfg.AccessTTL, 30*time.Minute),
			RefreshTTL: orDefault(cfg.RefreshTTL, 24*time.Hour), Families: cfg.Store, Store: cfg.Store, Users: k.Users, Now: k.Now}
	}
	return &Bearer{Pair: k.Tokens, PK: k.PK}, nil
}
