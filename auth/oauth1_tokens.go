package auth

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/yard-api/yard"
)

// What the OAuth 1.0a provider (oauth1.go) issues and takes back:
// consumers, request tokens and their verifiers, access tokens (RFC 5849
// §2).

// CheckCallbackURL reports whether raw may be a consumer's callback: an
// absolute http or https URL without a fragment or user information.
func CheckCallbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" ||
		strings.ContainsFunc(raw, func(c rune) bool { return c < 0x21 || c == 0x7f }) || len(raw) > 2048 {
		return errors.New("must be an absolute http or https URL without user information or fragment")
	}
	return nil
}

// callbackAllowed reports whether a request token's callback fits the
// consumer's registered callback URL: the same scheme, host, port and
// path; the query may differ. "oob" is always allowed.
func callbackAllowed(registered, cb string) bool {
	if registered == "" || cb == "oob" {
		return true
	}
	r, err1 := url.Parse(registered)
	c, err2 := url.Parse(cb)
	path := func(u *url.URL) string {
		if p := u.EscapedPath(); p != "" {
			return p
		}
		return "/"
	}
	return err1 == nil && err2 == nil && strings.EqualFold(r.Scheme, c.Scheme) && strings.EqualFold(r.Host, c.Host) &&
		path(r) == path(c)
}

// RegisterConsumer creates a consumer and returns it with its secret,
// which is shown once and stored sealed.
func (o *OAuth1) RegisterConsumer(ctx context.Context, name, callback, createdBy string) (*yard.OAuthConsumer, string, error) {
	c := &yard.OAuthConsumer{Key: randomString("ck_", 18), Name: name, CallbackURL: callback, CreatedBy: createdBy, CreatedAt: o.Now()}
	secret := randomString("cs_", 32)
	c.SealedSecret = o.Box.Seal([]byte(secret), consumerSealID(c.Key))
	if err := o.Store.CreateOAuthConsumer(ctx, c); err != nil {
		return nil, "", err
	}
	return c, secret, nil
}

// DeleteConsumer deletes a consumer and every token it holds.
func (o *OAuth1) DeleteConsumer(ctx context.Context, key string) (bool, error) {
	ok, err := o.Store.DeleteOAuthConsumer(ctx, key)
	o.consumers.drop(key)
	o.tokens.dropFunc(func(t opened[yard.OAuthToken]) bool { return t.v.ConsumerKey == key })
	return ok, err
}

// Revoke deletes an access token by id.
func (o *OAuth1) Revoke(ctx context.Context, t *yard.OAuthToken) (bool, error) {
	ok, err := o.Store.DeleteOAuthToken(ctx, t.ID)
	o.tokens.drop(t.Token)
	return ok, err
}

// IssueRequestToken answers a verified temporary credential request (RFC
// 5849 §2.1) with a new request token and its secret.
func (o *OAuth1) IssueRequestToken(ctx context.Context, v *OAuthVerified) (token, secret string, err error) {
	cb, ok := v.Params.Get("oauth_callback")
	if !ok || cb == "" {
		return "", "", o.refuse(yard.EINVALID, "parameter_absent", "oauth_callback", "oauth_callback is required: a URL, or \"oob\" to show the verifier to the user.")
	}
	if cb != "oob" {
		if err := CheckCallbackURL(cb); err != nil {
			return "", "", o.refuse(yard.EINVALID, "parameter_rejected", "oauth_callback", "oauth_callback %s, or \"oob\".", err)
		}
	}
	if !callbackAllowed(v.Consumer.CallbackURL, cb) {
		return "", "", o.refuse(yard.EINVALID, "parameter_rejected", "oauth_callback", "oauth_callback does not match the consumer's registered callback URL.")
	}
	now := o.Now()
	t := &yard.OAuthToken{ID: yard.NewID(), Token: randomString("rt_", 18), Kind: yard.OAuthRequestToken, State: yard.OAuthPending,
		ConsumerKey: v.Consumer.Key, Callback: cb, CreatedAt: now, ExpiresAt: now.Add(OAuthRequestTTL)}
	secret = randomString("", 24)
	t.SealedSecret = o.Box.Seal([]byte(secret), tokenSealID(t.Token))
	if err := o.Store.CreateOAuthToken(ctx, t); err != nil {
		return "", "", err
	}
	return t.Token, secret, nil
}

// Decide records the resource owner's decision on a request token. With
// allow it returns the new oauth_verifier. ok is false when the token was
// no longer pending (decided, expired or gone).
func (o *OAuth1) Decide(ctx context.Context, token, userID string, allow bool) (verifier string, ok bool, err error) {
	state, hash := yard.OAuthDenied, ""
	if allow {
		verifier = randomString("", 16)
		state, hash = yard.OAuthAuthorized, HashKey(verifier)
	}
	ok, err = o.Store.DecideOAuthToken(ctx, token, state, userID, hash, o.Now())
	if !ok || !allow {
		verifier = ""
	}
	return verifier, ok, err
}

// IssueAccessToken exchanges a request token that Verify accepted (an
// authorised one, with the right oauth_verifier) for an access token (RFC
// 5849 §2.3), once: of two exchanges racing, one wins.
func (o *OAuth1) IssueAccessToken(ctx context.Context, v *OAuthVerified) (token, secret string, err error) {
	rt := v.Token // Verify checked its state and the verifier
	now := o.Now()
	at := &yard.OAuthToken{ID: yard.NewID(), Token: randomString("at_", 18), Kind: yard.OAuthAccessToken, State: yard.OAuthActive,
		ConsumerKey: rt.ConsumerKey, UserID: rt.UserID, CreatedAt: now}
	secret = randomString("", 24)
	at.SealedSecret = o.Box.Seal([]byte(secret), tokenSealID(at.Token))
	ok, err := o.Store.ExchangeOAuthToken(ctx, rt.Token, rt.VerifierHash, now, at)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", o.refuse(yard.EUNAUTHORIZED, "token_used", "", "The request token was already exchanged or has expired.")
	}
	return at.Token, secret, nil
}
