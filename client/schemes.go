package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yard-api/yard/internal/authparam"
	"github.com/yard-api/yard/internal/sigbase"
)

// Basic sends a user name and password on every request (RFC 7617).
type Basic struct{ Username, Password string }

// Apply implements Authenticator.
func (b *Basic) Apply(_ *Client, req *http.Request) error {
	req.SetBasicAuth(b.Username, b.Password)
	return nil
}

// Retry implements Authenticator: Basic has nothing to renew.
func (b *Basic) Retry(context.Context, *Client, *Response) (bool, error) { return false, nil }

// Digest is HTTP Digest authentication (RFC 7616) with qop=auth. The first
// request goes out without credentials; the 401's challenges are answered
// (SHA-256 preferred over MD5), and later requests reuse the nonce with a
// growing nonce count until the server says it is stale.
type Digest struct {
	Username, Password string
	// Algorithm forces "SHA-256" or "MD5"; empty prefers SHA-256.
	Algorithm string

	mu        sync.Mutex
	challenge map[string]string
	nc        uint32
}

// Apply implements Authenticator.
func (d *Digest) Apply(_ *Client, req *http.Request) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.challenge == nil {
		return nil
	}
	d.nc++
	var b [16]byte
	_, _ = rand.Read(b[:])
	alg := cmp.Or(d.challenge["algorithm"], "MD5")
	nc := fmt.Sprintf("%08x", d.nc)
	a := authparam.AnswerDigest(d.challenge, alg, d.Username, d.Password, req.Method, req.URL.RequestURI(), nc, hex.EncodeToString(b[:]))
	req.Header.Set("Authorization", a.Authorization)
	return nil
}

// Retry implements Authenticator: answer a fresh (or stale) challenge.
func (d *Digest) Retry(_ context.Context, _ *Client, resp *Response) (bool, error) {
	if resp.StatusCode != http.StatusUnauthorized {
		return false, nil
	}
	var chosen map[string]string
	for _, p := range authparam.DigestChallenges(resp.Header) {
		if p["nonce"] == "" || !strings.Contains(p["qop"], "auth") {
			continue
		}
		alg := p["algorithm"]
		if d.Algorithm != "" && !strings.EqualFold(alg, d.Algorithm) {
			continue
		}
		if chosen == nil || strings.EqualFold(alg, "SHA-256") && !strings.EqualFold(chosen["algorithm"], "SHA-256") {
			chosen = p
		}
	}
	if chosen == nil {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	hadOne := d.challenge != nil
	d.challenge, d.nc = chosen, 0
	// A refusal of credentials computed from a challenge means they are
	// wrong, unless the server says the nonce went stale (RFC 7616 §3.3).
	return !hadOne || strings.EqualFold(chosen["stale"], "true"), nil
}

// Session authenticates with the session cookie of POST /sessions. With
// Username and Password set it signs in again when the session has ended.
type Session struct {
	Username, Password string

	mu  sync.Mutex
	key string
}

// SessionCookie is the name of yard's session cookie.
const SessionCookie = "sessionToken"

// NewSession signs in and returns a session authenticator.
func NewSession(ctx context.Context, c *Client, username, password string) (*Session, error) {
	s := &Session{Username: username, Password: password}
	return s, s.login(ctx, c)
}

func (s *Session) login(ctx context.Context, c *Client) error {
	var out struct {
		Key string `json:"key"`
	}
	resp, err := c.post(ctx, "/sessions", map[string]string{"username": s.Username, "password": s.Password}, nil, &out)
	if err != nil {
		return err
	}
	key := out.Key
	for _, ck := range resp.Cookies() {
		if ck.Name == SessionCookie {
			key = ck.Value
		}
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	return nil
}

// Key returns the session key.
func (s *Session) Key() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

// Logout ends the session (DELETE /sessions/{key}).
func (s *Session) Logout(ctx context.Context, c *Client) error {
	if _, err := answer(c.send(ctx, http.MethodDelete, "/sessions/"+url.PathEscape(s.Key()), nil, nil, nil)); err != nil {
		return err
	}
	s.mu.Lock()
	s.key = ""
	s.mu.Unlock()
	return nil
}

// Apply implements Authenticator.
func (s *Session) Apply(c *Client, req *http.Request) error {
	if s.Key() == "" && s.Username != "" {
		if err := s.login(req.Context(), c); err != nil {
			return err
		}
	}
	if k := s.Key(); k != "" {
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: k})
	}
	return nil
}

// Retry implements Authenticator: sign in again after a 401.
func (s *Session) Retry(ctx context.Context, c *Client, resp *Response) (bool, error) {
	if resp.StatusCode != http.StatusUnauthorized || s.Username == "" {
		return false, nil
	}
	return true, s.login(ctx, c)
}

// Tokens is the body of /auth/login and /auth/refresh.
type Tokens struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	RefreshExpiresIn int    `json:"refresh_expires_in"`
}

// TokenPair authenticates with the access token of the token pair. On a
// 401, or a 400 saying the access token expired, it calls /auth/refresh
// with the refresh token and retries (spec: Token pair rules 4); when the
// refresh token is refused too, it signs in again with Username and
// Password if it has them.
type TokenPair struct {
	Username, Password string

	mu     sync.Mutex
	tokens Tokens
	// Refreshes and Logins count the renewals (for tests and metrics).
	Refreshes, Logins int
}

// Tokens returns the current pair.
func (t *TokenPair) Tokens() Tokens {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tokens
}

// SetTokens replaces the pair (for a client that stored it).
func (t *TokenPair) SetTokens(p Tokens) {
	t.mu.Lock()
	t.tokens = p
	t.mu.Unlock()
}

// Login signs in with Username and Password.
func (t *TokenPair) Login(ctx context.Context, c *Client) error {
	return t.obtain(ctx, c, "/auth/login", map[string]string{"username": t.Username, "password": t.Password}, nil, &t.Logins)
}

// Refresh exchanges the refresh token for a new pair.
func (t *TokenPair) Refresh(ctx context.Context, c *Client) error {
	h := http.Header{"Authorization": {"Bearer " + t.Tokens().RefreshToken}}
	return t.obtain(ctx, c, "/auth/refresh", nil, h, &t.Refreshes)
}

// obtain posts to an endpoint that answers a new pair, keeps the pair and
// counts it in *count.
func (t *TokenPair) obtain(ctx context.Context, c *Client, path string, body any, h http.Header, count *int) error {
	var p Tokens
	if _, err := c.post(ctx, path, body, h, &p); err != nil {
		return err
	}
	t.mu.Lock()
	t.tokens = p
	*count++
	t.mu.Unlock()
	return nil
}

// Logout revokes the refresh token's family and forgets the pair (spec:
// Token pair rules 5).
func (t *TokenPair) Logout(ctx context.Context, c *Client) error {
	h := http.Header{"Authorization": {"Bearer " + t.Tokens().RefreshToken}}
	if _, err := c.post(ctx, "/auth/logout", nil, h, nil); err != nil {
		return err
	}
	t.SetTokens(Tokens{})
	return nil
}

// Apply implements Authenticator.
func (t *TokenPair) Apply(c *Client, req *http.Request) error {
	if t.Tokens().AccessToken == "" && t.Username != "" {
		if err := t.Login(req.Context(), c); err != nil {
			return err
		}
	}
	if a := t.Tokens().AccessToken; a != "" {
		req.Header.Set("Authorization", "Bearer "+a)
	}
	return nil
}

// Retry implements Authenticator.
func (t *TokenPair) Retry(ctx context.Context, c *Client, resp *Response) (bool, error) {
	if resp.StatusCode == http.StatusBadRequest {
		p := problemOf(resp)
		if p.Slug() != "token-expired" && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
			return false, nil // an ordinary bad request
		}
	}
	err := t.Refresh(ctx, c)
	if err == nil {
		return true, nil
	}
	if (StatusOf(err) == http.StatusBadRequest || StatusOf(err) == http.StatusUnauthorized) && t.Username != "" {
		return true, t.Login(ctx, c)
	}
	return false, err
}

// PKToken authenticates with a public-key token; when the token holds a
// password hash, Password is sent as X-Password.
type PKToken struct {
	Token    string
	Password string
}

// PKTokenOptions are the optional claims asked of POST /auth/pk-token.
type PKTokenOptions struct {
	BindIP              bool
	IncludePasswordHash bool
}

// NewPKToken asks the server for a public-key token.
func NewPKToken(ctx context.Context, c *Client, username, password string, opt PKTokenOptions) (*PKToken, error) {
	var out struct {
		Token string `json:"token"`
	}
	body := map[string]any{"username": username, "password": password, "bind_ip": opt.BindIP, "include_password_hash": opt.IncludePasswordHash}
	if _, err := c.post(ctx, "/auth/pk-token", body, nil, &out); err != nil {
		return nil, err
	}
	p := &PKToken{Token: out.Token}
	if opt.IncludePasswordHash {
		p.Password = password
	}
	return p, nil
}

// Apply implements Authenticator.
func (p *PKToken) Apply(_ *Client, req *http.Request) error {
	req.Header.Set("Authorization", "Bearer "+p.Token)
	if p.Password != "" {
		req.Header.Set("X-Password", p.Password)
	}
	return nil
}

// Retry implements Authenticator: a public-key token is not renewed here.
func (p *PKToken) Retry(context.Context, *Client, *Response) (bool, error) { return false, nil }

// Signed signs each request with an API key (yard's signed-request scheme,
// docs/auth.md): it adds the query variables timestamp, apiKey, method (the
// HTTP method), bodyhash (lower-case hex SHA-256 of the body) and
// signature = hex(HMAC-SHA256(secret, canonical string)). Signing method
// and bodyhash binds the signature to this method and body: the server
// refuses it with any other.
//
// The server accepts a signature once. Two identical requests in the same
// second would carry the same signature, so Signed waits for the next
// second before repeating one; add a distinguishing query variable where an
// endpoint allows it to avoid the wait.
type Signed struct {
	APIKey, Secret string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu     sync.Mutex
	used   map[string]int64
	pruned int64
}

// Apply implements Authenticator.
func (s *Signed) Apply(_ *Client, req *http.Request) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	var pairs [][2]string
	var kept []string
	for piece := range strings.SplitSeq(req.URL.RawQuery, "&") {
		if piece == "" {
			continue
		}
		n, v, _ := strings.Cut(piece, "=")
		name, err := url.QueryUnescape(n)
		if err != nil {
			return err
		}
		switch strings.ToLower(name) {
		case "timestamp", "apikey", "signature", "method", "bodyhash":
			continue // replaced below
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return err
		}
		pairs = append(pairs, [2]string{name, val})
		kept = append(kept, piece)
	}
	bodyHash, err := requestBodyHash(req)
	if err != nil {
		return err
	}
	pairs = append(pairs, [2]string{"method", req.Method}, [2]string{"bodyhash", bodyHash})
	kept = append(kept, "method="+url.QueryEscape(req.Method), "bodyhash="+bodyHash)
	base := req.URL.Path + "?" + strings.Join(kept, "&")
	ts := now().Unix()
	s.mu.Lock()
	if s.used == nil {
		s.used = map[string]int64{}
	}
	if last, ok := s.used[base]; ok && ts <= last {
		wait := time.Until(time.Unix(last+1, 0))
		s.mu.Unlock()
		if s.Now == nil && wait > 0 {
			time.Sleep(wait)
		}
		s.mu.Lock()
		ts = max(now().Unix(), last+1)
	}
	if ts != s.pruned { // forget signatures of past seconds, once a second
		maps.DeleteFunc(s.used, func(_ string, v int64) bool { return v < ts })
		s.pruned = ts
	}
	s.used[base] = ts
	s.mu.Unlock()
	pairs = append(pairs, [2]string{"timestamp", strconv.FormatInt(ts, 10)}, [2]string{"apiKey", s.APIKey})
	sig := sigbase.Sign([]byte(s.Secret), sigbase.CanonicalString(req.URL.Path, pairs))
	kept = append(kept, "timestamp="+strconv.FormatInt(ts, 10), "apiKey="+url.QueryEscape(s.APIKey), "signature="+sig)
	req.URL.RawQuery = strings.Join(kept, "&")
	return nil
}

// requestBodyHash returns the lower-case hex SHA-256 of req's body (of the
// empty string when there is none), leaving the body to be sent.
func requestBodyHash(req *http.Request) (string, error) {
	var body []byte
	switch {
	case req.GetBody != nil:
		rc, err := req.GetBody()
		if err != nil {
			return "", err
		}
		body, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return "", err
		}
	case req.Body != nil && req.Body != http.NoBody:
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return "", err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]), nil
}

// Retry implements Authenticator: a refused signature is not retried.
func (s *Signed) Retry(context.Context, *Client, *Response) (bool, error) { return false, nil }

// APIKey is the answer to POST /apikeys.
type APIKey struct {
	APIKey string `json:"apiKey"`
	Secret string `json:"secret"`
}

// CreateAPIKey makes a new API key for the client's principal and returns
// a Signed authenticator for it.
func (c *Client) CreateAPIKey(ctx context.Context) (*Signed, error) {
	var k APIKey
	if err := c.JSON(ctx, http.MethodPost, "/apikeys", nil, &k); err != nil {
		return nil, err
	}
	if k.APIKey == "" || k.Secret == "" {
		return nil, errors.New("yard: the API key answer lacks apiKey or secret")
	}
	return &Signed{APIKey: k.APIKey, Secret: k.Secret}, nil
}
