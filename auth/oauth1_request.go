package auth

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/authparam"
	"github.com/yard-api/yard/internal/sigbase"
)

// Reading an OAuth 1.0a request (oauth1.go): the one place of RFC 5849
// §3.5 its protocol parameters travel in, and the query, form body and
// header parameters its signature base string covers (§3.4.1).

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
	for i, list := range [][][2]string{q.query, q.form, q.header} {
		for _, p := range list {
			// realm is left out of the header's parameters only.
			if p[0] != "oauth_signature" && (i < 2 || p[0] != "realm") {
				all = append(all, p)
			}
		}
	}
	return all
}

// protocolParams returns the oauth_* pairs of a query or form body.
func protocolParams(pairs [][2]string) [][2]string {
	return slices.DeleteFunc(slices.Clone(pairs), func(p [2]string) bool { return !strings.HasPrefix(p[0], "oauth_") })
}

// readRequest finds the protocol parameters of r in exactly one of the
// places of RFC 5849 §3.5 and reads what the base string covers.
func (o *OAuth1) readRequest(r *http.Request) (*oauthRequest, error) {
	q := &oauthRequest{}
	var err error
	if q.query, err = sigbase.ParseRawQuery(r.URL.RawQuery); err != nil {
		return nil, yard.Errorf(yard.EMALFORMED, "The query string cannot be parsed.")
	}
	if q.form, q.rawForm, err = readForm(r); err != nil {
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
		if slices.ContainsFunc(q.proto[:i], func(prev [2]string) bool { return prev[0] == p[0] }) {
			return nil, o.refuse(yard.EINVALID, "parameter_rejected", p[0], "The OAuth parameter %s appears twice.", p[0])
		}
	}
	return q, nil
}

// readForm reads a single-part application/x-www-form-urlencoded body
// (RFC 5849 §3.4.1.3.1) and puts it back for the handler; the server's
// body limit bounds it (an *http.MaxBytesError is returned as it is, 413).
// Without such a body, or with an empty one, there are no pairs.
func readForm(r *http.Request) (pairs [][2]string, raw string, err error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, "", nil
	}
	b, err := readBody(r)
	if err != nil {
		return nil, "", err
	}
	if pairs, err = sigbase.ParseRawQuery(string(b)); err != nil {
		return nil, "", yard.Errorf(yard.EMALFORMED, "The form body cannot be parsed.")
	}
	return pairs, string(b), nil
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
