package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/sigbase"
)

// Checking an OAuth 1.0a request (oauth1.go): its signature, timestamp
// and nonce, and its consumer's and token's credentials, opened from the
// store through the caches.

// Verify checks the OAuth signature of r (RFC 5849 §3.2). tokenKind is ""
// for the temporary credential request (no token), yard.OAuthRequestToken
// for the token request, yard.OAuthAccessToken for protected endpoints.
// The nonce is recorded only when everything else checked out, so a
// refused request changes nothing. When the protocol parameters came in
// the form body, the handler then reads the body without them.
func (o *OAuth1) Verify(r *http.Request, tokenKind string) (*OAuthVerified, error) {
	if r.TLS == nil {
		return nil, o.refuse(yard.EUNAUTHORIZED, "parameter_rejected", "", "OAuth requests are accepted over HTTPS only.")
	}
	req, err := o.readRequest(r)
	if err != nil {
		return nil, err
	}
	params := OAuthParams(req.proto)
	method := params.Value("oauth_signature_method")
	if err := o.absent(params, "oauth_consumer_key", "oauth_signature_method", "oauth_signature"); err != nil {
		return nil, err
	}
	if !slices.Contains([]string{sigbase.OAuthHMACSHA1, sigbase.OAuthHMACSHA256, sigbase.OAuthPlaintext}, method) {
		return nil, o.refuse(yard.EINVALID, "signature_method_rejected", "oauth_signature_method",
			"The signature method %q is not supported; use HMAC-SHA1, HMAC-SHA256 or PLAINTEXT.", method)
	}
	if v, ok := params.Get("oauth_version"); ok && v != "1.0" {
		return nil, o.refuse(yard.EINVALID, "version_rejected", "oauth_version", "Only OAuth version 1.0 is supported.")
	}
	// RFC 5849 §3.1: timestamp and nonce may be omitted with PLAINTEXT.
	ts, hasTS := params.Get("oauth_timestamp")
	nonce, hasNonce := params.Get("oauth_nonce")
	if method != sigbase.OAuthPlaintext || hasTS || hasNonce {
		if err := o.absent(params, "oauth_timestamp", "oauth_nonce"); err != nil {
			return nil, err
		}
		if len(nonce) > 255 {
			return nil, o.refuse(yard.EINVALID, "parameter_rejected", "oauth_nonce", "The nonce is longer than 255 characters.")
		}
	}
	now := o.Now()
	// diagnose adds what the server computed to a refused signature
	// (docs/auth.md, "Diagnostics of a refused signature"): the timestamps
	// it accepts and, but with PLAINTEXT, which signs no base string, the
	// base string it signed.
	diagnose := func(err error) error {
		oe := err.(*OAuthError)
		if oe.Extra == nil {
			oe.Extra = url.Values{}
		}
		oe.Extra.Set("oauth_acceptable_timestamps", acceptableTimestamps(now, OAuthWindow))
		if o.Diagnostics && method != sigbase.OAuthPlaintext {
			oe.Extra.Set("oauth_signature_base_string", sigbase.OAuthBaseString(r.Method, o.baseURI(r), req.signedParams()))
		}
		return err
	}
	var stamp time.Time
	if hasTS {
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || sec < 0 {
			return nil, o.refuse(yard.EINVALID, "parameter_rejected", "oauth_timestamp", "oauth_timestamp must be a number of Unix seconds.")
		}
		stamp = time.Unix(sec, 0)
		if d := now.Sub(stamp); d > OAuthWindow || d < -OAuthWindow {
			// The extension's oauth_acceptable_timestamps is part of this
			// refusal with or without diagnostics.
			return nil, diagnose(o.refuse(yard.EUNAUTHORIZED, "timestamp_refused", "", "oauth_timestamp is more than %d s from the server's clock.", int(OAuthWindow.Seconds())))
		}
	}
	token := params.Value("oauth_token")
	if tokenKind == "" && token != "" {
		return nil, o.refuse(yard.EINVALID, "parameter_rejected", "oauth_token", "A temporary credential request carries no oauth_token.")
	} else if tokenKind != "" {
		if err := o.absent(params, "oauth_token"); err != nil {
			return nil, err
		}
	}

	ctx := r.Context()
	consumer, consumerSecret, err := o.consumer(ctx, params.Value("oauth_consumer_key"), now)
	if err != nil {
		return nil, err
	}
	var tok *yard.OAuthToken
	tokenSecret := ""
	if tokenKind != "" {
		if tok, tokenSecret, err = o.token(ctx, token, tokenKind, now); err != nil {
			return nil, err
		}
		if tok.ConsumerKey != consumer.Key {
			return nil, o.refuse(yard.EUNAUTHORIZED, "token_rejected", "", "The token was not issued to this consumer.")
		}
	}

	want, _ := sigbase.OAuthSignature(method, r.Method, o.baseURI(r), req.signedParams(), consumerSecret, tokenSecret)
	if subtle.ConstantTimeCompare([]byte(want), []byte(params.Value("oauth_signature"))) != 1 {
		err := o.refuse(yard.EUNAUTHORIZED, "signature_invalid", "", "The OAuth signature does not match the request.")
		if o.Diagnostics {
			err = diagnose(err)
		}
		return nil, err
	}
	if tokenKind == yard.OAuthRequestToken {
		// Checked after the signature, so that only the consumer learns
		// the state of its request token.
		switch {
		case tok.State == yard.OAuthUsed:
			return nil, o.refuse(yard.EUNAUTHORIZED, "token_used", "", "The request token was already exchanged.")
		case !tok.ExpiresAt.After(now):
			return nil, o.refuse(yard.EUNAUTHORIZED, "token_expired", "", "The request token has expired; ask for a new one.")
		case tok.State == yard.OAuthDenied:
			return nil, o.refuse(yard.EUNAUTHORIZED, "permission_denied", "", "The user denied this request token.")
		case tok.State != yard.OAuthAuthorized:
			return nil, o.refuse(yard.EUNAUTHORIZED, "permission_unknown", "", "The user has not authorised this request token yet.")
		}
		if err := o.absent(params, "oauth_verifier"); err != nil {
			return nil, err
		}
		if subtle.ConstantTimeCompare([]byte(HashKey(params.Value("oauth_verifier"))), []byte(tok.VerifierHash)) != 1 {
			return nil, o.refuse(yard.EUNAUTHORIZED, "verifier_invalid", "", "The oauth_verifier is not the one given to the user.")
		}
	}
	if hasNonce {
		if err := o.useNonce(ctx, consumer.Key, token, nonce, ts, stamp); err != nil {
			return nil, err
		}
	}
	if req.place == inFormBody {
		stripFormProtocolParams(r, req.rawForm)
	}
	return &OAuthVerified{Consumer: consumer, Token: tok, Params: params}, nil
}

// absent refuses the first of names that params lack or leave empty.
func (o *OAuth1) absent(params OAuthParams, names ...string) error {
	for _, name := range names {
		if params.Value(name) == "" {
			return o.refuse(yard.EINVALID, "parameter_absent", name, "The OAuth parameter %s is missing.", name)
		}
	}
	return nil
}

// useNonce records (consumer, token, nonce, timestamp) once.
func (o *OAuth1) useNonce(ctx context.Context, consumer, token, nonce, ts string, stamp time.Time) error {
	sum := sha256.Sum256([]byte(consumer + "\x00" + token + "\x00" + nonce + "\x00" + ts + "\x00"))
	key := "oauth1:" + hex.EncodeToString(sum[:])
	fresh, err := o.batcher.use(ctx, o.Replay, key, stamp.Add(OAuthWindow))
	if err != nil {
		return err
	}
	if !fresh {
		return o.refuse(yard.EUNAUTHORIZED, "nonce_used", "", "This nonce and timestamp were already used (replay).")
	}
	return nil
}

// baseURI is the base string URI of r, built on base (on the request's
// Host without one).
func (o *OAuth1) baseURI(r *http.Request) string {
	u := &url.URL{Scheme: "https", Host: r.Host}
	if o.base != nil {
		u.Scheme, u.Host = o.base.Scheme, o.base.Host
		u.Path = strings.TrimRight(o.base.Path, "/") + r.URL.Path
		u.RawPath = strings.TrimRight(o.base.EscapedPath(), "/") + r.URL.EscapedPath()
	} else {
		u.Path, u.RawPath = r.URL.Path, r.URL.RawPath
	}
	return sigbase.OAuthBaseURI(u)
}

// consumer returns a consumer and its opened secret, through the cache.
func (o *OAuth1) consumer(ctx context.Context, key string, now time.Time) (*yard.OAuthConsumer, string, error) {
	e, err := o.consumers.getOrLoad(key, now, o.CacheTTL, 10000, func() (opened[yard.OAuthConsumer], error) {
		c, err := o.Store.FindOAuthConsumer(ctx, key)
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			return opened[yard.OAuthConsumer]{}, o.refuse(yard.EUNAUTHORIZED, "consumer_key_unknown", "", "The consumer key is not known.")
		} else if err != nil {
			return opened[yard.OAuthConsumer]{}, err
		}
		secret, err := o.Box.Open(c.SealedSecret, consumerSealID(c.Key))
		return opened[yard.OAuthConsumer]{v: c, secret: string(secret)}, err
	})
	return e.v, e.secret, err
}

// token returns a token of the given kind and its opened secret. Access
// tokens are cached; request tokens change state and are always read.
func (o *OAuth1) token(ctx context.Context, value, kind string, now time.Time) (*yard.OAuthToken, string, error) {
	load := func() (opened[yard.OAuthToken], error) {
		t, err := o.Store.FindOAuthToken(ctx, value)
		if yard.ErrorCode(err) == yard.ENOTFOUND || err == nil && t.Kind != kind {
			return opened[yard.OAuthToken]{}, o.refuse(yard.EUNAUTHORIZED, "token_rejected", "", "The %s token is not known or was revoked.", kind)
		} else if err != nil {
			return opened[yard.OAuthToken]{}, err
		}
		secret, err := o.Box.Open(t.SealedSecret, tokenSealID(t.Token))
		return opened[yard.OAuthToken]{v: t, secret: string(secret)}, err
	}
	if kind != yard.OAuthAccessToken {
		e, err := load()
		return e.v, e.secret, err
	}
	e, err := o.tokens.getOrLoad(value, now, o.CacheTTL, 100000, load)
	return e.v, e.secret, err
}

func consumerSealID(key string) string { return "oauth-consumer:" + key }
func tokenSealID(token string) string  { return "oauth-token:" + token }
