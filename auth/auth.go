// Package auth turns a request into a yard.Principal or a refusal. Each
// scheme lives in its own file and implements Scheme; a Chain tries them in
// the order docs/auth.md gives: the Authorization header first,
// then signed-request query variables, then the session cookie. Credentials
// that are present but wrong are refused; the chain never falls back to the
// next kind.
package auth

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/yard-api/yard"
)

// Scheme is one authentication scheme.
type Scheme interface {
	// Name is the scheme's name as it appears in a Principal ("basic", ...).
	Name() string
	// Match reports whether r carries credentials of this scheme.
	Match(r *http.Request) bool
	// Authenticate checks the credentials of a request for which Match
	// returned true. A refusal is a *yard.Error (EUNAUTHORIZED, ERATELIMIT,
	// ETOKENEXPIRED, ...); any other error is internal.
	Authenticate(r *http.Request) (*yard.Principal, error)
	// Challenges returns the WWW-Authenticate values this scheme sends with
	// a 401, or nil when it has none.
	Challenges(r *http.Request) []string
}

// QueryCredentials is implemented by a scheme whose credentials travel in
// query variables. QueryVars names them (matched without regard to case);
// the server takes them out of the query before an endpoint's own query
// grammar reads it (Chain.QueryVars), so no grammar needs to know them,
// while the scheme itself still sees, and verifies, the query as sent.
type QueryCredentials interface {
	QueryVars() []string
}

// Chain authenticates a request with the first scheme that matches it.
type Chain struct {
	// Header schemes are matched on the Authorization header, in order.
	Header []Scheme
	// Query schemes are matched on query variables (signed requests).
	Query []Scheme
	// Cookie schemes are matched on cookies (sessions).
	Cookie []Scheme
}

// Authenticate returns the principal of r, nil when r carries no
// credentials at all, or a refusal.
func (c *Chain) Authenticate(r *http.Request) (*yard.Principal, error) {
	if err := SingleAuthorization(r); err != nil {
		return nil, err
	}
	if r.TLS == nil {
		// docs/api.md, HTTP: credentials arriving over plain HTTP are refused, never checked.
		if hasCredentials(r) {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "Credentials are accepted over HTTPS only.")
		}
		return nil, nil
	}
	// A header that is there counts, even empty: credentials that are
	// present but wrong never fall back to the next kind.
	if vs := r.Header.Values("Authorization"); len(vs) > 0 {
		h := vs[0]
		if strings.TrimSpace(h) == "" {
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The Authorization header is empty.")
		}
		for _, s := range c.Header {
			if s.Match(r) {
				return s.Authenticate(r)
			}
		}
		w, _, _ := strings.Cut(h, " ")
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The Authorization scheme %q is not supported.", w[:min(len(w), 32)])
	}
	for _, group := range [][]Scheme{c.Query, c.Cookie} {
		for _, s := range group {
			if s.Match(r) {
				return s.Authenticate(r)
			}
		}
	}
	return nil, nil
}

// Basic returns the chain's Basic scheme (the first of its header
// schemes), or nil.
func (c *Chain) Basic() *Basic {
	if c == nil {
		return nil
	}
	for _, s := range c.Header {
		if b, ok := s.(*Basic); ok {
			return b
		}
	}
	return nil
}

// QueryVars returns the query variables every scheme of the chain
// consumes (QueryCredentials); nil for a nil chain.
func (c *Chain) QueryVars() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range slices.Concat(c.Header, c.Query, c.Cookie) {
		if qc, ok := s.(QueryCredentials); ok {
			out = append(out, qc.QueryVars()...)
		}
	}
	return out
}

// Challenges returns the WWW-Authenticate values of every scheme in the chain.
func (c *Chain) Challenges(r *http.Request) []string {
	var out []string
	for _, s := range slices.Concat(c.Header, c.Query, c.Cookie) {
		out = append(out, s.Challenges(r)...)
	}
	return out
}

func hasCredentials(r *http.Request) bool {
	q := r.URL.Query()
	_, err := r.Cookie(SessionCookie)
	return len(r.Header.Values("Authorization")) > 0 || q.Has("signature") || q.Has("apiKey") || q.Has("oauth_signature") || err == nil
}

// SingleAuthorization refuses a request with more than one Authorization
// header (400): which one would count is ambiguous, and a proxy and the
// server could pick differently (RFC 9110 §5.3: the field is not a list).
func SingleAuthorization(r *http.Request) error {
	if len(r.Header.Values("Authorization")) > 1 {
		return yard.Errorf(yard.EMALFORMED, "The request carries more than one Authorization header; send one.")
	}
	return nil
}

// SessionCookie is the name of the cookie carrying a session key.
const SessionCookie = "sessionToken"

// AuthScheme returns the scheme word of an Authorization header value,
// lower-cased, and the rest.
func AuthScheme(h string) (scheme, rest string) {
	w, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	return strings.ToLower(w), strings.TrimSpace(rest)
}

// hasScheme reports whether the Authorization header of r is of the
// scheme word, given in lower case (a header scheme's Name).
func hasScheme(r *http.Request, word string) bool {
	s, _ := AuthScheme(r.Header.Get("Authorization"))
	return s == word
}

// detach returns a context for work shared by several requests (one
// password check for concurrent requests with the same credentials): one
// caller going away does not cancel it, but it keeps the caller's deadline,
// so shared work waiting for an unreachable store ends when the request's
// bound on the store does (httpapi.Server.StoreWait) and answers 503.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	shared := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(shared, deadline)
	}
	return shared, func() {}
}
