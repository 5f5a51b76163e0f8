package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/pages"
)

// The OAuth 1.0a provider (RFC 5849; docs/auth.md, "OAuth 1.0a"):
// consumers registered by an administrator, the three endpoints of the
// flow, and the revocation of what a user allowed. Signed calls on the
// protected endpoints go through the authentication chain (auth/oauth1.go).

// oauth returns the provider (for any request: loaded's signature), or an
// error when the server runs without it.
func (s *Server) oauth(*http.Request) (*auth.OAuth1, error) {
	if s.deps.Kit == nil || s.deps.Kit.OAuth1 == nil {
		return nil, yard.Errorf(yard.EUNAVAILABLE, "This server does not offer OAuth 1.0a.")
	}
	return s.deps.Kit.OAuth1, nil
}

// oauthManager returns the provider for a management endpoint, which a
// consumer acting for a user is refused: an application may not register
// consumers or revoke other applications in the user's name.
func (s *Server) oauthManager(r *http.Request) (*auth.OAuth1, error) {
	o, err := s.oauth(r)
	if p := yard.PrincipalFromContext(r.Context()); err == nil && p != nil && p.Scheme == "oauth" {
		err = yard.Errorf(yard.EFORBIDDEN, "An OAuth consumer cannot manage OAuth consumers or authorizations; sign in as the user.")
	}
	return o, err
}

// consumerView is the representation of a consumer; Secret only in the
// answer to its creation.
type consumerView struct {
	Key         string  `json:"key"`
	Secret      string  `json:"secret,omitempty"`
	Name        string  `json:"name"`
	CallbackURL *string `json:"callbackUrl"`
	CreatedBy   string  `json:"createdBy,omitempty"`
	CreatedAt   string  `json:"createdAt"`
	Links       urlsMap `json:"_links"`
}

func (s *Server) newConsumerView(c *yard.OAuthConsumer) consumerView {
	return consumerView{Key: c.Key, Name: c.Name, CallbackURL: nonZero(c.CallbackURL), CreatedBy: c.CreatedBy, CreatedAt: Timestamp(c.CreatedAt),
		Links: urlsMap{"self": s.url("/oauth/consumers/" + c.Key)}}
}

// validName reports whether a display name is 1 to 100 characters of
// valid UTF-8 without control characters.
func validName(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= 100 && strings.TrimSpace(s) == s && !yard.HasControl(s)
}

// consumerWrite is the body of POST /oauth/consumers.
type consumerWrite struct {
	Name        *string `json:"name"`
	CallbackURL *string `json:"callbackUrl"`
}

// handleCreateConsumer is POST /oauth/consumers (admin).
func (s *Server) handleCreateConsumer(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	in, err := decode[consumerWrite](r)
	if err == nil {
		fields := fieldIf(nil, in.Name == nil || !validName(*in.Name), "name", "is required: 1 to 100 characters, no control characters")
		if in.CallbackURL != nil && *in.CallbackURL != "" {
			if e := auth.CheckCallbackURL(*in.CallbackURL); e != nil {
				fields = append(fields, yard.FieldError{Field: "callbackUrl", Message: e.Error()})
			}
		}
		if len(fields) > 0 {
			err = yard.Invalid("The consumer has bad fields.", fields...)
		}
	}
	var c *yard.OAuthConsumer
	var secret string
	if err == nil {
		c, secret, err = o.RegisterConsumer(r.Context(), *in.Name, deref(in.CallbackURL), yard.PrincipalFromContext(r.Context()).UserID)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	v := s.newConsumerView(c)
	v.Secret = secret
	noStore(w)
	w.Header().Set("Location", v.Links["self"])
	writeJSON(w, http.StatusCreated, v)
}

// handleListConsumers is GET /oauth/consumers (admin).
func (s *Server) handleListConsumers(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	writePagedList(s, w, r, o.Store.ListOAuthConsumers, s.newConsumerView)
}

// handleGetConsumer is GET /oauth/consumers/{key} (admin).
func (s *Server) handleGetConsumer(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	c, err := o.Store.FindOAuthConsumer(r.Context(), r.PathValue("key"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.newConsumerView(c))
}

// handleDeleteConsumer is DELETE /oauth/consumers/{key} (admin): the
// consumer and every token it holds are gone.
func (s *Server) handleDeleteConsumer(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	ok, err := o.DeleteConsumer(r.Context(), r.PathValue("key"))
	if err == nil && !ok {
		err = yard.Errorf(yard.ENOTFOUND, "No OAuth consumer has this key.")
	}
	s.writeNoContent(w, r, err)
}

// oauthFormError answers a refusal at request_token or access_token. The
// status and WWW-Authenticate are those of the one error table; the body is
// the form OAuth clients read (oauth_problem, oauth_problem_advice and the
// extension's parameters), unless the client asks for JSON, which gets the
// problem details.
func (s *Server) oauthFormError(w http.ResponseWriter, r *http.Request, err error) {
	problem, extra := auth.OAuthProblem(err)
	accept := r.Header.Get("Accept")
	code := yard.ErrorCode(err)
	if problem == "" && code == yard.EINVALID {
		problem = "parameter_rejected"
	}
	if problem == "" || strings.Contains(accept, "json") {
		s.error(w, r, err)
		return
	}
	kind := problemKinds[code]
	form := url.Values{"oauth_problem": {problem}, "oauth_problem_advice": {yard.ErrorMessage(err)}}
	for k, v := range extra {
		form[k] = v
	}
	if e, ok := errors.AsType[*yard.Error](err); ok {
		for _, c := range e.Challenge {
			w.Header().Add("WWW-Authenticate", c)
		}
	}
	if kind.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `OAuth realm="yard"`)
	}
	writeForm(w, kind.Status, form)
}

func writeForm(w http.ResponseWriter, status int, form url.Values) {
	noStore(w)
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(form.Encode()))
}

// handleRequestToken is POST /oauth/request_token: temporary credentials
// (RFC 5849 §2.1).
func (s *Server) handleRequestToken(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	s.issueOAuthToken(w, r, o, "", (*auth.OAuth1).IssueRequestToken, url.Values{"oauth_callback_confirmed": {"true"}})
}

// handleAccessToken is POST /oauth/access_token: token credentials (RFC
// 5849 §2.3) for an authorised request token and its verifier, once.
func (s *Server) handleAccessToken(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	s.issueOAuthToken(w, r, o, yard.OAuthRequestToken, (*auth.OAuth1).IssueAccessToken, url.Values{})
}

// issueOAuthToken verifies with o a signed request that carries a token of
// kind ("" for none) and answers the credentials issue makes, with the
// extra parameters, as a form.
func (s *Server) issueOAuthToken(w http.ResponseWriter, r *http.Request, o *auth.OAuth1, kind string,
	issue func(*auth.OAuth1, context.Context, *auth.OAuthVerified) (string, string, error), form url.Values) {
	v, err := o.Verify(r, kind)
	var token, secret string
	if err == nil {
		token, secret, err = issue(o, r.Context(), v)
	}
	if err != nil {
		s.oauthFormError(w, r, err)
		return
	}
	form.Set("oauth_token", token)
	form.Set("oauth_token_secret", secret)
	writeForm(w, http.StatusOK, form)
}

// authorizeTarget loads the request token of the authorisation page and
// its consumer; a token that cannot be authorised gets an error page.
func (s *Server) authorizeTarget(p *pages.Pages, w http.ResponseWriter, r *http.Request, o *auth.OAuth1, token string) (*yard.OAuthToken, *yard.OAuthConsumer, bool) {
	if token == "" {
		p.Error(w, r, http.StatusBadRequest, "Missing request token", "This address needs an oauth_token. Go back to the application and start again.")
		return nil, nil, false
	}
	t, err := o.Store.FindOAuthToken(r.Context(), token)
	var c *yard.OAuthConsumer
	if err == nil && t.Kind == yard.OAuthRequestToken {
		c, err = o.Store.FindOAuthConsumer(r.Context(), t.ConsumerKey)
	}
	switch {
	case yard.ErrorCode(err) == yard.ENOTFOUND || err == nil && t.Kind != yard.OAuthRequestToken:
		p.Error(w, r, http.StatusNotFound, "Unknown request", "This authorisation request is not known. Go back to the application and start again.")
	case err != nil:
		p.Internal(w, r, err)
	case t.State != yard.OAuthPending:
		p.Error(w, r, http.StatusGone, "Request already answered", "This authorisation request was already answered. Go back to the application and start again.")
	case !t.ExpiresAt.After(o.Now()):
		p.Error(w, r, http.StatusGone, "Request expired", "This authorisation request has expired. Go back to the application and start again.")
	default:
		return t, c, true
	}
	return nil, nil, false
}

// handleAuthorize is GET and POST /oauth/authorize: the resource owner
// signs in if needed, then allows or denies the consumer (RFC 5849 §2.2).
func (s *Server) handleAuthorize(p *pages.Pages, w http.ResponseWriter, r *http.Request) {
	o, err := s.oauth(r)
	if err != nil {
		p.Error(w, r, http.StatusServiceUnavailable, "Not available", "This server does not offer OAuth 1.0a.")
		return
	}
	token := r.URL.Query().Get("oauth_token")
	if r.Method == http.MethodPost {
		token = r.PostForm.Get("oauth_token")
	}
	t, c, ok := s.authorizeTarget(p, w, r, o, token)
	if !ok {
		return
	}
	user, err := p.User(r)
	if err != nil {
		p.Internal(w, r, err)
		return
	}
	here := "/oauth/authorize?oauth_token=" + url.QueryEscape(token)
	if user == nil {
		w.Header().Set("Location", s.url(pages.SignInURL(here)))
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if r.Method != http.MethodPost {
		detail := "it will get a code to give you"
		var redirect []string
		if t.Callback != "oob" {
			cb, _ := url.Parse(t.Callback)
			detail = cb.Host
			redirect = []string{t.Callback}
		}
		p.Consent(w, r, pages.Consent{
			Title: "Allow access?", Party: c.Name, PartyDetail: detail,
			Question: "wants to use your yard account: it could read and change your dogs and everything else you can, until you revoke it.",
			User:     user.Name, Action: "/oauth/authorize", Hidden: []pages.Field{{Name: "oauth_token", Value: token}},
			SwitchUser: pages.SignInURL(here), RedirectTo: redirect,
		})
		return
	}
	decision := r.PostForm.Get("decision")
	if decision != "allow" && decision != "deny" {
		p.Error(w, r, http.StatusBadRequest, "Bad request", "Choose Allow or Deny.")
		return
	}
	allow := decision == "allow"
	verifier, ok, err := o.Decide(r.Context(), token, user.UserID, allow)
	if err != nil {
		p.Internal(w, r, err)
		return
	}
	if !ok {
		p.Error(w, r, http.StatusGone, "Request already answered", "This authorisation request was already answered or has expired.")
		return
	}
	if t.Callback == "oob" {
		if allow {
			p.Message(w, r, http.StatusOK, pages.Message{Title: "Access allowed",
				Lines: []string{"You allowed " + c.Name + " to use your account. Give it this code to finish:"}, Code: verifier})
		} else {
			p.Message(w, r, http.StatusOK, pages.Message{Title: "Access denied",
				Lines: []string{"You denied " + c.Name + " access to your account. You can close this page."}})
		}
		return
	}
	q := url.Values{"oauth_token": {token}}
	if allow {
		q.Set("oauth_verifier", verifier)
	} else {
		q.Set("oauth_problem", "user_refused")
	}
	sep := "?"
	if strings.Contains(t.Callback, "?") {
		sep = "&"
	}
	w.Header().Set("Location", t.Callback+sep+q.Encode())
	w.WriteHeader(http.StatusSeeOther)
}

// authorizationView is one application a user allowed (an access token,
// never its secret).
type authorizationView struct {
	ID           string  `json:"id"`
	ConsumerKey  string  `json:"consumerKey"`
	ConsumerName string  `json:"consumerName"`
	UserID       string  `json:"userId"`
	CreatedAt    string  `json:"createdAt"`
	Links        urlsMap `json:"_links"`
}

// handleListAuthorizations is GET /oauth/authorizations: the applications
// the caller allowed; an administrator sees everyone's, or one user's with
// ?userId=.
func (s *Server) handleListAuthorizations(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	page, params, err := yard.ReadParams(s.grammarQuery(r), yard.Paging{}, "userId")
	p := yard.PrincipalFromContext(r.Context())
	user := p.UserID
	if p.IsAdmin() {
		user = params["userId"]
	}
	var list []*yard.OAuthToken
	if err == nil {
		list, err = o.Store.ListOAuthAccess(r.Context(), user)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	names := map[string]string{}
	items := pageViews(window(list, page), page, func(t *yard.OAuthToken) authorizationView {
		name, ok := names[t.ConsumerKey]
		if !ok {
			if c, err := o.Store.FindOAuthConsumer(r.Context(), t.ConsumerKey); err == nil {
				name = c.Name
			}
			names[t.ConsumerKey] = name
		}
		return authorizationView{ID: t.ID, ConsumerKey: t.ConsumerKey, ConsumerName: name, UserID: t.UserID,
			CreatedAt: Timestamp(t.CreatedAt), Links: urlsMap{"self": s.url("/oauth/authorizations/" + t.ID)}}
	})
	s.writePage(w, r, items, len(list), page)
}

// handleRevokeAuthorization is DELETE /oauth/authorizations/{id}: the user
// who allowed it, or an administrator, revokes an access token.
func (s *Server) handleRevokeAuthorization(w http.ResponseWriter, r *http.Request, o *auth.OAuth1) {
	t, err := o.Store.FindOAuthAccess(r.Context(), r.PathValue("id"))
	p := yard.PrincipalFromContext(r.Context())
	if err == nil && t.UserID != p.UserID && !p.IsAdmin() {
		// Someone else's authorization does not exist for this caller.
		err = yard.Errorf(yard.ENOTFOUND, "OAuth authorization not found.")
	}
	if err == nil {
		_, err = o.Revoke(r.Context(), t)
	}
	s.writeNoContent(w, r, err)
}
