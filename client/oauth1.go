package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/yard-api/yard/internal/sigbase"
)

// OAuth1 signs each request as an OAuth 1.0a consumer acting for a user
// (RFC 5849, docs/auth.md "OAuth 1.0a"): an "Authorization: OAuth …"
// header with a fresh nonce, signed with the consumer's and the access
// token's secrets. Method is HMAC-SHA1 (the default), HMAC-SHA256 or
// PLAINTEXT.
//
// The flow that yields the access token:
//
//	o := &client.OAuth1{ConsumerKey: key, ConsumerSecret: secret}
//	rt, rs, _ := o.RequestToken(ctx, anon, "oob")          // or a callback URL
//	// the user opens c.BaseURL + client.OAuthAuthorizePath(rt), allows, gets a verifier
//	_ = o.AccessToken(ctx, anon, rt, rs, verifier)          // sets o.Token, o.TokenSecret
//	c := client.New(url, hc, o)
type OAuth1 struct {
	ConsumerKey, ConsumerSecret string
	Token, TokenSecret          string
	Method                      string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// OAuthAuthorizePath returns the path of the authorisation page for a
// request token.
func OAuthAuthorizePath(requestToken string) string {
	return "/oauth/authorize?oauth_token=" + url.QueryEscape(requestToken)
}

// Apply implements Authenticator.
func (o *OAuth1) Apply(_ *Client, req *http.Request) error {
	return o.sign(req, o.Token, o.TokenSecret, nil)
}

// Header returns the Authorization header that signs req with o's
// credentials and the extra protocol parameters (oauth_callback,
// oauth_verifier), without changing req.
func (o *OAuth1) Header(req *http.Request, extra map[string]string) (string, error) {
	r := req.Clone(req.Context())
	if err := o.sign(r, o.Token, o.TokenSecret, extra); err != nil {
		return "", err
	}
	return r.Header.Get("Authorization"), nil
}

// Retry implements Authenticator: a refused signature is not retried.
func (o *OAuth1) Retry(context.Context, *Client, *Response) (bool, error) { return false, nil }

// sign adds the Authorization header to req (RFC 5849 §3.1), with extra
// protocol parameters (oauth_callback, oauth_verifier).
func (o *OAuth1) sign(req *http.Request, token, tokenSecret string, extra map[string]string) error {
	method := cmp.Or(o.Method, sigbase.OAuthHMACSHA1)
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	var nb [16]byte
	_, _ = rand.Read(nb[:])
	// The protocol parameters, oauth_signature last (it is not signed).
	var pb [10][2]string
	proto := append(pb[:0],
		[2]string{"oauth_consumer_key", o.ConsumerKey},
		[2]string{"oauth_nonce", base64.RawURLEncoding.EncodeToString(nb[:])},
		[2]string{"oauth_signature_method", method},
		[2]string{"oauth_timestamp", strconv.FormatInt(now().Unix(), 10)},
		[2]string{"oauth_version", "1.0"},
	)
	if token != "" {
		proto = append(proto, [2]string{"oauth_token", token})
	}
	for k, v := range extra {
		proto = append(proto, [2]string{k, v})
	}
	// RFC 5849 §3.4.1.3.1: the query's pairs and a form body's, split on
	// '&' only (a ';' is part of a value, as the car search grammar uses
	// it), decoded as a form.
	params, err := sigbase.ParseRawQuery(req.URL.RawQuery)
	if err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		form, err := sigbase.ParseRawQuery(string(raw))
		if err != nil {
			return err
		}
		params = append(params, form...)
	}
	params = append(params, proto...)
	sig, err := sigbase.OAuthSignature(method, req.Method, sigbase.OAuthBaseURI(req.URL), params, o.ConsumerSecret, tokenSecret)
	if err != nil {
		return fmt.Errorf("client: unknown OAuth signature method %q", method)
	}
	proto = append(proto, [2]string{"oauth_signature", sig})
	req.Header["Authorization"] = []string{sigbase.OAuthAuthorization("yard", proto)}
	return nil
}

// oauthPost sends a signed POST with no body to an OAuth endpoint and
// parses its form answer.
func (o *OAuth1) oauthPost(ctx context.Context, c *Client, path, token, tokenSecret string, extra map[string]string) (url.Values, error) {
	signer := authFunc(func(req *http.Request) error { return o.sign(req, token, tokenSecret, extra) })
	resp, err := answer(c.send(ctx, http.MethodPost, path, nil, nil, signer))
	if err != nil {
		return nil, err
	}
	return url.ParseQuery(string(resp.Body))
}

// authFunc adapts a signing function to Authenticator.
type authFunc func(*http.Request) error

func (f authFunc) Apply(_ *Client, req *http.Request) error                { return f(req) }
func (f authFunc) Retry(context.Context, *Client, *Response) (bool, error) { return false, nil }

// RequestToken asks for temporary credentials (POST /oauth/request_token)
// with a callback URL or "oob".
func (o *OAuth1) RequestToken(ctx context.Context, c *Client, callback string) (token, secret string, err error) {
	v, err := o.oauthPost(ctx, c, "/oauth/request_token", "", "", map[string]string{"oauth_callback": callback})
	if err != nil {
		return "", "", err
	}
	if v.Get("oauth_callback_confirmed") != "true" || v.Get("oauth_token") == "" {
		return "", "", fmt.Errorf("client: unexpected request_token answer")
	}
	return v.Get("oauth_token"), v.Get("oauth_token_secret"), nil
}

// AccessToken exchanges an authorised request token and its verifier
// (POST /oauth/access_token) and keeps the access token in o.
func (o *OAuth1) AccessToken(ctx context.Context, c *Client, requestToken, requestSecret, verifier string) error {
	v, err := o.oauthPost(ctx, c, "/oauth/access_token", requestToken, requestSecret, map[string]string{"oauth_verifier": verifier})
	if err != nil {
		return err
	}
	if v.Get("oauth_token") == "" {
		return fmt.Errorf("client: unexpected access_token answer")
	}
	o.Token, o.TokenSecret = v.Get("oauth_token"), v.Get("oauth_token_secret")
	return nil
}
