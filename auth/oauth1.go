package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/authparam"
	"github.com/yard-api/yard/internal/sigbase"
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
// against BaseURL (the public base address, not the Host header). Each
// (consumer, token, nonce, timestamp) is accepted once: it is recorded
// through the store's replay record of signed requests (UseSignatures),
// shared by every process on PostgreSQL.
//
// Consumers and access tokens are cached for CacheTTL: a revocation on
// another process takes effect there within it, and at once on the process
// that made it.
type OAuth1 struct {
	Store  yard.OAuthService
	Replay yard.AuthStateService
	Users  *UserCache
	Box    *SecretBox
	// BaseURL is the public base address the base string URI is built on.
	BaseURL    string
	Realm      string
	Now        func() time.Time
	CacheTTL   time.Duration
	RequestTTL time.Duration
	// Diagnostics adds to a refused signature the base string the server
	// signed and the timestamps it accepts (docs/auth.md, "Diagnostics of
	// a refused signature").
	Diagnostics bool

	base      *url.URL
	baseOnce  sync.Once
	mu        sync.Mutex
	consumers ttlCache[string, openedConsumer]
	tokens    ttlCache[string, openedToken]
	batcher   *signatureBatcher
}

// openedConsumer is a consumer with its opened secret, as cached.
type openedConsumer struct {
	c      *yard.OAuthConsumer
	secret string
}

// openedToken is an access token with its opened secret, as cached.
type openedToken struct {
	t      *yard.OAuthToken
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
	var e *OAuthError
	if errors.As(err, &e) {
		return e.Problem, e.Extra
	}
	return "", nil
}

func (o *OAuth1) realm() string {
	if o.Realm == "" {
		return "yard"
	}
	return o.Realm
}

// refuse returns a 401 (or, for code EINVALID, a 400 naming param) with
// the oauth_problem and a WWW-Authenticate challenge carrying it.
func (o *OAuth1) refuse(code, problem, param, format string, args ...any) error {
	e := yard.Errorf(code, format, args...)
	if code == yard.EINVALID && param != "" {
		e.Fields = []yard.FieldError{{Field: param, Message: problem}}
	}
	if code == yard.EUNAUTHORIZED {
		e.Challenge = []string{fmt.Sprintf(`OAuth realm=%q, oauth_problem=%q`, o.realm(), problem)}
	}
	oe := &OAuthError{Err: e, Problem: problem}
	if param != "" {
		oe.Extra = url.Values{}
		if problem == "parameter_absent" {
			oe.Extra.Set("oauth_parameters_absent", param)
		} else {
			oe.Extra.Set("oauth_parameters_rejected", param)
		}
	}
	return oe
}

// Name implements Scheme.
func (o *OAuth1) Name() string { return "oauth" }

// Match implements Scheme: the Authorization header is OAuth. Protocol
// parameters in the body or the query are the chain's query carrier's
// (oauthInRequest).
func (o *OAuth1) Match(r *http.Request) bool {
	s, _ := AuthScheme(r.Header.Get("Authorization"))
	return s == "oauth"
}

// Challenges implements Scheme (RFC 5849 §3.2).
func (o *OAuth1) Challenges(*http.Request) []string {
	return []string{fmt.Sprintf(`OAuth realm=%q`, o.realm())}
}

// Authenticate implements Scheme: a call signed with an access token.
func (o *OAuth1) Authenticate(r *http.Request) (*yard.Principal, error) {
	v, err := o.Verify(r, yard.OAuthAccessToken)
	if err != nil {
		return nil, err
	}
	p, err := o.Users.Principal(r.Context(), v.Token.UserID)
	if err != nil {
		return nil, err
	}
	p.Scheme = o.Name()
	return p, nil
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
	_, raw, ok, err := readForm(r)
	return ok && err == nil && carriesOAuth(raw)
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

// OAuthVerified is a request whose OAuth signature checked out.
type OAuthVerified struct {
	Consumer *yard.OAuthConsumer
	// Token is the request token (access_token endpoint) or the access
	// token (protected endpoints); nil at the request_token endpoint.
	Token *yard.OAuthToken
	// Params are the protocol parameters, from wherever they travelled.
	Params OAuthParams
}

// OAuthParams are the protocol parameters of a request (from the
// Authorization header, realm among them, the form body or the query),
// decoded, in their order; each name appears once.
type OAuthParams [][2]string

// Get returns the value of the parameter name and whether it is present.
func (p OAuthParams) Get(name string) (string, bool) {
	for _, kv := range p {
		if kv[0] == name {
			return kv[1], true
		}
	}
	return "", false
}

// Value returns the value of the parameter name, "" when absent.
func (p OAuthParams) Value(name string) string {
	v, _ := p.Get(name)
	return v
}

// maxOAuthParams bounds the protocol parameters of a request: the
// protocol has ten at most (realm included); a request with many more is
// refused before any work on it.
const maxOAuthParams = 32

// The places protocol parameters travel in (RFC 5849 §3.5), as refusals
// name them.
const (
	inAuthorization = "the Authorization header"
	inFormBody      = "the form body"
	inQueryString   = "the query string"
)

// oauthRequest is what Verify reads of a request: where the protocol
// parameters are, and the query, form body and header parameters the
// base string covers.
type oauthRequest struct {
	place  string
	proto  [][2]string
	query  [][2]string
	form   [][2]string
	header [][2]string
	// rawForm is the form body as received ("" without one).
	rawForm string
}

// signedParams returns the parameters of RFC 5849 §3.4.1.3.1, in a new
// slice: the query, the form body and the header's parameters but realm,
// without oauth_signature wherever it is.
func (q *oauthRequest) signedParams() [][2]string {
	all := make([][2]string, 0, len(q.query)+len(q.form)+len(q.header))
	for _, list := range [][][2]string{q.query, q.form} {
		for _, p := range list {
			if p[0] != "oauth_signature" {
				all = append(all, p)
			}
		}
	}
	for _, p := range q.header {
		if p[0] != "realm" && p[0] != "oauth_signature" {
			all = append(all, p)
		}
	}
	return all
}

// protocolParams returns the oauth_* pairs of a query or form body.
func protocolParams(pairs [][2]string) [][2]string {
	var out [][2]string
	for _, p := range pairs {
		if strings.HasPrefix(p[0], "oauth_") {
			out = append(out, p)
		}
	}
	return out
}

// readRequest finds the protocol parameters of r in exactly one of the
// places of RFC 5849 §3.5 and reads what the base string covers.
func (o *OAuth1) readRequest(r *http.Request) (*oauthRequest, error) {
	q := &oauthRequest{}
	var err error
	if q.query, err = sigbase.ParseRawQuery(r.URL.RawQuery); err != nil {
		return nil, yard.Errorf(yard.EMALFORMED, "The query string cannot be parsed.")
	}
	if q.form, q.rawForm, _, err = readForm(r); err != nil {
		return nil, err
	}
	hasHeader := false
	if hdr := r.Header.Values("Authorization"); len(hdr) > 0 {
		if len(hdr) != 1 || !o.Match(r) {
			return nil, o.refuse(yard.EUNAUTHORIZED, "parameter_absent", "oauth_signature",
				"The Authorization header is not OAuth: sign the request with \"Authorization: OAuth …\", or leave the header out and send the protocol parameters in the form body or the query (RFC 5849 §3.5).")
		}
		if q.header, err = ParseOAuthHeader(hdr[0]); err != nil {
			return nil, o.refuse(yard.EINVALID, "parameter_rejected", "Authorization", "The OAuth Authorization header cannot be parsed: %s.", strings.TrimPrefix(err.Error(), "oauth1: "))
		}
		hasHeader = true
	}
	// RFC 5849 §3.5: one place, in the RFC's order of preference.
	var places, rejected []string
	for _, c := range []struct {
		place  string
		params [][2]string
		ok     bool
	}{
		{inAuthorization, q.header, hasHeader},
		{inFormBody, protocolParams(q.form), false},
		{inQueryString, protocolParams(q.query), false},
	} {
		if !c.ok && len(c.params) == 0 {
			continue
		}
		places = append(places, c.place)
		if q.place == "" {
			q.place, q.proto = c.place, c.params
			continue
		}
		for _, p := range c.params {
			rejected = append(rejected, p[0])
		}
	}
	switch {
	case len(places) == 0:
		return nil, o.refuse(yard.EUNAUTHORIZED, "parameter_absent", "oauth_signature",
			"Sign the request with OAuth protocol parameters in an \"Authorization: OAuth …\" header, the form body or the query (RFC 5849 §3.5).")
	case len(places) > 1:
		fields := make([]yard.FieldError, 0, len(rejected))
		for _, name := range rejected {
			fields = append(fields, yard.FieldError{Field: name, Message: "parameter_rejected"})
		}
		return nil, &OAuthError{Err: yard.Invalid(fmt.Sprintf("OAuth protocol parameters are in %s; send them in one place only (RFC 5849 §3.5).",
			strings.Join(places, " and ")), fields...), Problem: "parameter_rejected",
			Extra: url.Values{"oauth_parameters_rejected": {strings.Join(rejected, "&")}}}
	}
	if len(q.proto) > maxOAuthParams {
		return nil, o.refuse(yard.EINVALID, "parameter_rejected", "Authorization", "The request has more than %d OAuth parameters.", maxOAuthParams)
	}
	for i, p := range q.proto {
		for _, prev := range q.proto[:i] {
			if prev[0] == p[0] {
				return nil, o.refuse(yard.EINVALID, "parameter_rejected", p[0], "The OAuth parameter %s appears twice.", p[0])
			}
		}
	}
	return q, nil
}

// readForm reads a single-part application/x-www-form-urlencoded body
// (RFC 5849 §3.4.1.3.1) and puts it back for the handler; the server's
// body limit bounds it (an *http.MaxBytesError is returned as it is, 413).
// ok is false when r has no such body.
func readForm(r *http.Request) (pairs [][2]string, raw string, ok bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, "", false, nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, "", false, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, "", false, err
		}
		return nil, "", false, yard.Errorf(yard.EMALFORMED, "The request body could not be read.")
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	if pairs, err = sigbase.ParseRawQuery(string(b)); err != nil {
		return nil, "", false, yard.Errorf(yard.EMALFORMED, "The form body cannot be parsed.")
	}
	return pairs, string(b), true, nil
}

// stripFormProtocolParams leaves the handler the form body without its
// protocol parameters (they were the credentials, as the header's are),
// and no body at all when nothing else was in it.
func stripFormProtocolParams(r *http.Request, raw string) {
	var kept []string
	for piece := range strings.SplitSeq(raw, "&") {
		name, _, _ := strings.Cut(piece, "=")
		if n, err := url.QueryUnescape(name); piece == "" || err == nil && strings.HasPrefix(n, "oauth_") {
			continue
		}
		kept = append(kept, piece)
	}
	body := strings.Join(kept, "&")
	r.Header.Del("Content-Length")
	r.ContentLength = int64(len(body))
	if body == "" {
		r.Body = http.NoBody
		return
	}
	r.Body = io.NopCloser(strings.NewReader(body))
}

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
	for _, name := range []string{"oauth_consumer_key", "oauth_signature_method", "oauth_signature"} {
		if params.Value(name) == "" {
			return nil, o.refuse(yard.EINVALID, "parameter_absent", name, "The OAuth parameter %s is missing.", name)
		}
	}
	switch method {
	case sigbase.OAuthHMACSHA1, sigbase.OAuthHMACSHA256, sigbase.OAuthPlaintext:
	default:
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
		for _, name := range []string{"oauth_timestamp", "oauth_nonce"} {
			if params.Value(name) == "" {
				return nil, o.refuse(yard.EINVALID, "parameter_absent", name, "The OAuth parameter %s is missing.", name)
			}
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
	token, hasToken := params.Get("oauth_token")
	switch {
	case tokenKind == "" && token != "":
		return nil, o.refuse(yard.EINVALID, "parameter_rejected", "oauth_token", "A temporary credential request carries no oauth_token.")
	case tokenKind != "" && !hasToken || tokenKind != "" && token == "":
		return nil, o.refuse(yard.EINVALID, "parameter_absent", "oauth_token", "The OAuth parameter oauth_token is missing.")
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
		if err := o.requestTokenUsable(tok, now); err != nil {
			return nil, err
		}
		verifier := params.Value("oauth_verifier")
		if verifier == "" {
			return nil, o.refuse(yard.EINVALID, "parameter_absent", "oauth_verifier", "The OAuth parameter oauth_verifier is missing.")
		}
		if subtle.ConstantTimeCompare([]byte(HashVerifier(verifier)), []byte(tok.VerifierHash)) != 1 {
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

func (o *OAuth1) requestTokenUsable(t *yard.OAuthToken, now time.Time) error {
	switch {
	case t.State == yard.OAuthUsed:
		return o.refuse(yard.EUNAUTHORIZED, "token_used", "", "The request token was already exchanged.")
	case !t.ExpiresAt.After(now):
		return o.refuse(yard.EUNAUTHORIZED, "token_expired", "", "The request token has expired; ask for a new one.")
	case t.State == yard.OAuthDenied:
		return o.refuse(yard.EUNAUTHORIZED, "permission_denied", "", "The user denied this request token.")
	case t.State != yard.OAuthAuthorized:
		return o.refuse(yard.EUNAUTHORIZED, "permission_unknown", "", "The user has not authorised this request token yet.")
	}
	return nil
}

// useNonce records (consumer, token, nonce, timestamp) once.
func (o *OAuth1) useNonce(ctx context.Context, consumer, token, nonce, ts string, stamp time.Time) error {
	h := sha256.New()
	for _, s := range []string{consumer, token, nonce, ts} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	key := "oauth1:" + hex.EncodeToString(h.Sum(nil))
	o.mu.Lock()
	if o.batcher == nil {
		o.batcher = newSignatureBatcher(o.Replay)
	}
	b := o.batcher
	o.mu.Unlock()
	fresh, err := b.use(ctx, key, stamp.Add(OAuthWindow))
	if err != nil {
		return err
	}
	if !fresh {
		return o.refuse(yard.EUNAUTHORIZED, "nonce_used", "", "This nonce and timestamp were already used (replay).")
	}
	return nil
}

// baseURI is the base string URI of r, built on BaseURL.
func (o *OAuth1) baseURI(r *http.Request) string {
	o.baseOnce.Do(func() {
		o.base, _ = url.Parse(strings.TrimRight(o.BaseURL, "/"))
		if o.base == nil || o.base.Host == "" {
			o.base = nil
		}
	})
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

func (o *OAuth1) cacheTTL() time.Duration {
	if o.CacheTTL > 0 {
		return o.CacheTTL
	}
	return 5 * time.Second
}

// consumer returns a consumer and its opened secret, through the cache.
func (o *OAuth1) consumer(ctx context.Context, key string, now time.Time) (*yard.OAuthConsumer, string, error) {
	if e, ok := o.consumers.get(key, now, o.cacheTTL()); ok {
		return e.c, e.secret, nil
	}
	c, err := o.Store.FindOAuthConsumer(ctx, key)
	if yard.ErrorCode(err) == yard.ENOTFOUND {
		return nil, "", o.refuse(yard.EUNAUTHORIZED, "consumer_key_unknown", "", "The consumer key is not known.")
	} else if err != nil {
		return nil, "", err
	}
	secret, err := o.Box.Open(c.SealedSecret, consumerSealID(c.Key))
	if err != nil {
		return nil, "", err
	}
	o.consumers.put(key, openedConsumer{c: c, secret: string(secret)}, now, 10000)
	return c, string(secret), nil
}

// token returns a token of the given kind and its opened secret. Access
// tokens are cached; request tokens change state and are always read.
func (o *OAuth1) token(ctx context.Context, value, kind string, now time.Time) (*yard.OAuthToken, string, error) {
	if kind == yard.OAuthAccessToken {
		if e, ok := o.tokens.get(value, now, o.cacheTTL()); ok {
			return e.t, e.secret, nil
		}
	}
	t, err := o.Store.FindOAuthToken(ctx, value)
	if yard.ErrorCode(err) == yard.ENOTFOUND || err == nil && t.Kind != kind {
		return nil, "", o.refuse(yard.EUNAUTHORIZED, "token_rejected", "", "The %s token is not known or was revoked.", kind)
	} else if err != nil {
		return nil, "", err
	}
	secret, err := o.Box.Open(t.SealedSecret, tokenSealID(t.Token))
	if err != nil {
		return nil, "", err
	}
	if kind == yard.OAuthAccessToken {
		o.tokens.put(value, openedToken{t: t, secret: string(secret)}, now, 100000)
	}
	return t, string(secret), nil
}

func consumerSealID(key string) string { return "oauth-consumer:" + key }
func tokenSealID(token string) string  { return "oauth-token:" + token }

// randomString returns n random bytes, base64url-encoded, after prefix.
func randomString(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashVerifier returns the stored form of an oauth_verifier.
func HashVerifier(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

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
	o.tokens.clear() // its tokens, wherever they are in the cache
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
		ConsumerKey: v.Consumer.Key, Callback: cb, CreatedAt: now, ExpiresAt: now.Add(o.requestTTL())}
	secret = randomString("", 24)
	t.SealedSecret = o.Box.Seal([]byte(secret), tokenSealID(t.Token))
	if err := o.Store.CreateOAuthToken(ctx, t); err != nil {
		return "", "", err
	}
	return t.Token, secret, nil
}

func (o *OAuth1) requestTTL() time.Duration {
	if o.RequestTTL > 0 {
		return o.RequestTTL
	}
	return OAuthRequestTTL
}

// Decide records the resource owner's decision on a request token. With
// allow it returns the new oauth_verifier. ok is false when the token was
// no longer pending (decided, expired or gone).
func (o *OAuth1) Decide(ctx context.Context, token, userID string, allow bool) (verifier string, ok bool, err error) {
	state, hash := yard.OAuthDenied, ""
	if allow {
		verifier = randomString("", 16)
		state, hash = yard.OAuthAuthorized, HashVerifier(verifier)
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

// ParseOAuthHeader parses the parameters of an "Authorization: OAuth …"
// header (RFC 5849 §3.5.1): comma-separated name="value" pairs, each name
// and value percent-encoded, read by the one auth-param parser
// (internal/authparam) with no empty list element. It returns the decoded
// pairs in order; realm is among them.
func ParseOAuthHeader(h string) ([][2]string, error) {
	scheme, rest := AuthScheme(h)
	if scheme != "oauth" {
		return nil, errors.New("oauth1: not an OAuth Authorization header")
	}
	ps, err := authparam.Parse(rest, true)
	if err != nil {
		return nil, fmt.Errorf("oauth1: %w", err)
	}
	out := make([][2]string, 0, len(ps))
	for _, p := range ps {
		if !p.Quoted {
			return nil, errors.New("oauth1: a parameter value is not quoted")
		}
		n, err := url.PathUnescape(p.Name)
		if err != nil {
			return nil, err
		}
		v, err := url.PathUnescape(p.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{n, v})
	}
	return out, nil
}

// buildOAuth1 is OAuth 1.0a's entry in the chain's ordered list (kit.go):
// offered when the store keeps OAuth state; consumer and token secrets are
// sealed with the kit's box.
func buildOAuth1(_ context.Context, cfg Config, k *Kit) (Scheme, error) {
	store, ok := cfg.Store.(yard.OAuthService)
	if !ok {
		return nil, nil
	}
	k.OAuth1 = &OAuth1{Store: store, Replay: cfg.Store, Users: k.Users, Box: k.Box, BaseURL: cfg.Issuer,
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
