package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// OAuthWindow is how far oauth_timestamp may be from the server's clock,
// either way.
const OAuthWindow = 300 * time.Second

// OAuthRequestTTL is how long a request token (temporary credentials)
// lives before it is authorised and exchanged.
const OAuthRequestTTL = 10 * time.Minute

// OAuth1 is the OAuth 1.0a provider (RFC 5849) and its scheme: protected
// endpoints accept requests signed with a consumer's and an access token's
// credentials, acting as the user who allowed the consumer.
//
// Protocol parameters travel in one of the three places of RFC 5849 §3.5:
// the Authorization header (§3.5.1), a single-part
// application/x-www-form-urlencoded body (§3.5.2) or the query (§3.5.3);
// a request using two places is refused (400). The signature base string
// (§3.4.1) covers the query, such a form body and the header's parameters,
// against the public base address (Config.Issuer, not the Host header). Each
// (consumer, token, nonce, timestamp) is accepted once: it is recorded
// through the store's replay record of signed requests (UseSignatures),
// shared by every process on PostgreSQL.
//
// Consumers and access tokens are cached for CacheTTL: a revocation on
// another process takes effect there within it, and at once on the process
// that made it.
type OAuth1 struct {
	Store    yard.OAuthService
	Replay   yard.AuthStateService
	Users    *UserCache
	Box      *SecretBox
	Now      func() time.Time
	CacheTTL time.Duration
	// Diagnostics adds to a refused signature the base string the server
	// signed and the timestamps it accepts (docs/auth.md, "Diagnostics of
	// a refused signature").
	Diagnostics bool

	// base is the public base address the base string URI is built on
	// (Config.Issuer); nil when it names no host.
	base      *url.URL
	consumers ttlCache[string, opened[yard.OAuthConsumer]]
	tokens    ttlCache[string, opened[yard.OAuthToken]]
	batcher   signatureBatcher
}

// opened is a consumer or an access token with its opened secret, as
// cached.
type opened[T any] struct {
	v      *T
	secret string
}

// OAuthError is a refusal of an OAuth 1.0a request. It wraps the
// *yard.Error that says the status and carries Problem, the oauth_problem
// value of the OAuth Problem Reporting extension ("signature_invalid",
// "nonce_used", …), and Extra parameters to report with it.
type OAuthError struct {
	Err     *yard.Error
	Problem string
	Extra   url.Values
}

func (e *OAuthError) Error() string { return e.Err.Error() + " oauth_problem=" + e.Problem }
func (e *OAuthError) Unwrap() error { return e.Err }

// OAuthProblem returns the oauth_problem of err and its extra parameters,
// or "" when err is not an OAuth refusal.
func OAuthProblem(err error) (string, url.Values) {
	if e, ok := errors.AsType[*OAuthError](err); ok {
		return e.Problem, e.Extra
	}
	return "", nil
}

// refuse returns a 401 (or, for code EINVALID, a 400 naming param) with
// the oauth_problem and a WWW-Authenticate challenge carrying it.
func (o *OAuth1) refuse(code, problem, param, format string, args ...any) error {
	e := yard.Errorf(code, format, args...)
	if code == yard.EINVALID && param != "" {
		e.Fields = []yard.FieldError{{Field: param, Message: problem}}
	}
	if code == yard.EUNAUTHORIZED {
		e.Challenge = []string{fmt.Sprintf(`OAuth realm=%q, oauth_problem=%q`, Realm, problem)}
	}
	oe := &OAuthError{Err: e, Problem: problem}
	if param != "" {
		key := "oauth_parameters_rejected"
		if problem == "parameter_absent" {
			key = "oauth_parameters_absent"
		}
		oe.Extra = url.Values{key: {param}}
	}
	return oe
}

// Name implements Scheme.
func (o *OAuth1) Name() string { return "oauth" }

// Match implements Scheme: the Authorization header is OAuth. Protocol
// parameters in the body or the query are the chain's query carrier's
// (oauthInRequest).
func (o *OAuth1) Match(r *http.Request) bool { return hasScheme(r, o.Name()) }

// Challenges implements Scheme (RFC 5849 §3.2).
func (o *OAuth1) Challenges(*http.Request) []string {
	return []string{`OAuth realm="` + Realm + `"`}
}

// Authenticate implements Scheme: a call signed with an access token.
func (o *OAuth1) Authenticate(r *http.Request) (*yard.Principal, error) {
	v, err := o.Verify(r, yard.OAuthAccessToken)
	if err != nil {
		return nil, err
	}
	return o.Users.Principal(r.Context(), v.Token.UserID, o.Name())
}

// oauthProtocolParams are the protocol parameters of RFC 5849 (§2, §3.1).
// In the query they are the scheme's own variables, taken out before an
// endpoint's query grammar reads it (QueryCredentials).
var oauthProtocolParams = []string{"oauth_consumer_key", "oauth_token", "oauth_signature_method", "oauth_signature",
	"oauth_timestamp", "oauth_nonce", "oauth_version", "oauth_callback", "oauth_verifier"}

// oauthInRequest is OAuth 1.0a with its protocol parameters in the form
// body or the query (RFC 5849 §3.5.2, §3.5.3). The chain tries it with the
// credentials carried in the query, before signed requests, so for a
// request without an Authorization header; the header's own scheme is
// OAuth1.
type oauthInRequest struct{ o *OAuth1 }

// InRequest returns the scheme of o's protocol parameters carried in the
// form body or the query, for the chain's query carrier (the header's
// scheme is o itself).
func (o *OAuth1) InRequest() Scheme { return oauthInRequest{o} }

// Name implements Scheme.
func (s oauthInRequest) Name() string { return s.o.Name() }

// Match implements Scheme: the query or a form body carries
// oauth_consumer_key and oauth_signature.
func (s oauthInRequest) Match(r *http.Request) bool {
	if carriesOAuth(r.URL.RawQuery) {
		return true
	}
	_, raw, err := readForm(r)
	return err == nil && carriesOAuth(raw)
}

// Challenges implements Scheme: OAuth1 sends OAuth's challenge.
func (s oauthInRequest) Challenges(*http.Request) []string { return nil }

// QueryVars implements QueryCredentials.
func (s oauthInRequest) QueryVars() []string { return oauthProtocolParams }

// Authenticate implements Scheme. A query that also carries a signed
// request's variables is ambiguous: which scheme counts would depend on
// the order of the chain, so it is refused (400).
func (s oauthInRequest) Authenticate(r *http.Request) (*yard.Principal, error) {
	if signedQuery(r.URL.RawQuery) {
		return nil, s.o.refuse(yard.EINVALID, "parameter_rejected", "apiKey",
			"The request carries both OAuth 1.0a protocol parameters and a signed request's apiKey or signature; send one kind of credentials.")
	}
	return s.o.Authenticate(r)
}

// carriesOAuth reports whether a raw query or form body holds both
// oauth_consumer_key and oauth_signature.
func carriesOAuth(raw string) bool {
	key, sig := false, false
	for piece := range strings.SplitSeq(raw, "&") {
		name, _, _ := strings.Cut(piece, "=")
		if strings.Contains(name, "%") {
			name, _ = url.QueryUnescape(name)
		}
		key = key || name == "oauth_consumer_key"
		sig = sig || name == "oauth_signature"
	}
	return key && sig
}

// buildOAuth1 is OAuth 1.0a's entry in the chain's ordered list (kit.go):
// offered when the store keeps OAuth state; consumer and token secrets are
// sealed with the kit's box.
func buildOAuth1(_ context.Context, cfg Config, k *Kit) (Scheme, error) {
	store, ok := cfg.Store.(yard.OAuthService)
	if !ok {
		return nil, nil
	}
	base, _ := url.Parse(strings.TrimRight(cfg.Issuer, "/"))
	if base != nil && base.Host == "" {
		base = nil
	}
	k.OAuth1 = &OAuth1{Store: store, Replay: cfg.Store, Users: k.Users, Box: k.Box, base: base,
		Now: k.Now, CacheTTL: k.cacheTTL, Diagnostics: !cfg.HideDiagnostics}
	return k.OAuth1, nil
}

// buildOAuth1InRequest is the entry in the chain's ordered list (kit.go)
// of OAuth 1.0a protocol parameters carried in the form body or the query:
// present with the OAuth 1.0a provider.
func buildOAuth1InRequest(_ context.Context, _ Config, k *Kit) (Scheme, error) {
	if k.OAuth1 == nil {
		return nil, nil
	}
	return k.OAuth1.InRequest(), nil
}
