package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/pages"
)

// The endpoints of the first-party authentication schemes (docs/auth.md):
// cookie sessions, the token pair, public-key tokens and their JWKS, and
// API keys for signed requests. Every response that carries a secret is
// Cache-Control: no-store.

// kit returns the schemes (for any request: loaded's signature), or an
// error when the server runs without them.
func (s *Server) kit(*http.Request) (*auth.Kit, error) {
	if s.deps.Kit == nil {
		return nil, yard.Errorf(yard.EUNAVAILABLE, "This server does not offer this authentication scheme.")
	}
	return s.deps.Kit, nil
}

// noStore marks a response that carries a secret (RFC 9111 §5.2.2.5).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// overTLS is kit for a request that carries credentials: the schemes
// kit returns, refusing credentials that arrived over plain HTTP
// (docs/api.md, HTTP).
func overTLS(r *http.Request, kit func(*http.Request) (*auth.Kit, error)) (*auth.Kit, error) {
	k, err := kit(r)
	if err == nil && r.TLS == nil {
		err = yard.Errorf(yard.EUNAUTHORIZED, "Credentials are accepted over HTTPS only.")
	}
	return k, err
}

// signIn is what every sign-in endpoint does first: the schemes (kit,
// which refuses on a server without them), HTTPS only, the endpoint's own
// check (check may be nil), the sign-in body (allowPK admits the
// public-key token flags), then the password (Kit.Login).
func signIn(r *http.Request, kit func(*http.Request) (*auth.Kit, error), allowPK bool, check func(*auth.Kit) error) (*auth.Kit, *loginBody, *yard.User, error) {
	k, err := overTLS(r, kit)
	if err == nil && check != nil {
		err = check(k)
	}
	var in *loginBody
	if err == nil {
		in, err = decodeLogin(r, allowPK)
	}
	if err != nil {
		return k, nil, nil, err
	}
	u, err := k.Login(r, in.Username, in.Password)
	return k, in, u, err
}

// keyPaths are the paths whose last segment names a credential or a key:
// a session key, an API key, an OAuth consumer key.
var keyPaths = []string{"/sessions/", "/apikeys/", "/oauth/consumers/"}

// logPath is the path of r as logs may show it: a key in the path
// (keyPaths) is masked, as no credential, token or key is ever logged, and
// a long path is cut (pages.LogCut).
func logPath(r *http.Request) string {
	// The path as routed after the mux's cleaning: //sessions/KEY and
	// /x/../sessions/KEY name the key too.
	clean := path.Clean(r.URL.Path)
	for _, prefix := range keyPaths {
		if rest, ok := strings.CutPrefix(clean, prefix); ok && rest != "" {
			return prefix + "[redacted]"
		}
	}
	return pages.LogCut(r.URL.Path, pages.MaxLogPath)
}

// logMethod is the method of r as logs show it: cut when long (pages.LogCut).
func logMethod(r *http.Request) string { return pages.LogCut(r.Method, pages.MaxLogMethod) }

// loginBody is the body of POST /sessions, /auth/login and /auth/pk-token.
type loginBody struct {
	Username            string `json:"username"`
	Password            string `json:"password"`
	BindIP              *bool  `json:"bind_ip,omitempty"`
	IncludePasswordHash *bool  `json:"include_password_hash,omitempty"`
}

// decodeLogin reads a sign-in body: JSON (application/json or +json) or an
// HTML form (application/x-www-form-urlencoded). A body without a
// Content-Type, or a form-typed body that is a JSON object (what
// `curl -d '{...}'` sends), is read by its shape; anything else is 415.
// Unknown fields are refused either way. No problem it returns ever holds
// anything from the body but the names of the known fields (docs/auth.md,
// "Sign-in bodies"). allowPK admits the public-key token
// flags.
func decodeLogin(r *http.Request, allowPK bool) (*loginBody, error) {
	raw, err := readBody(r)
	if err != nil {
		return nil, err
	}
	unsupported := yard.Errorf(yard.EUNSUPPORTED, "Send the sign-in body as application/json or application/x-www-form-urlencoded (UTF-8).")
	// A JSON object is read as JSON without a type and as a form.
	asJSON := bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	cs, hasCharset := params["charset"]
	switch {
	case ct == "":
		if !asJSON && !bytes.Contains(raw, []byte("=")) {
			return nil, unsupported
		}
	case err != nil || hasCharset && !strings.EqualFold(cs, "utf-8"):
		return nil, unsupported
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		asJSON = true
	case mt != "application/x-www-form-urlencoded":
		return nil, unsupported
	}
	var in loginBody
	if asJSON {
		if in, err = unmarshalStrict[loginBody](raw); err != nil {
			return nil, loginDecodeError(err, allowPK)
		}
		if !allowPK && (in.BindIP != nil || in.IncludePasswordHash != nil) {
			return nil, yard.Invalid("The request body has an unknown field.", yard.FieldError{Field: "bind_ip", Message: "is not a field of this resource"})
		}
	} else {
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, yard.Errorf(yard.EMALFORMED, "The form body cannot be parsed.")
		}
		strs := map[string]*string{"username": &in.Username, "password": &in.Password}
		flags := map[string]**bool{"bind_ip": &in.BindIP, "include_password_hash": &in.IncludePasswordHash}
		for k, v := range form {
			str, flag := strs[k], flags[k]
			switch {
			case len(v) != 1 && (str != nil || flag != nil):
				return nil, yard.Invalid("A form field is repeated.", yard.FieldError{Field: k, Message: "must appear once"})
			case len(v) != 1:
				return nil, yard.Invalid("A form field is repeated.", unknownLoginField(allowPK))
			case str != nil:
				*str = v[0]
			case flag != nil && allowPK:
				b := v[0] == "true" || v[0] == "1" || v[0] == "on"
				*flag = &b
			case flag != nil:
				return nil, yard.Invalid("The request body has an unknown field.", yard.FieldError{Field: k, Message: "is not a field of this resource"})
			default:
				return nil, yard.Invalid("The request body has an unknown field.", unknownLoginField(allowPK))
			}
		}
	}
	// A body without a user name or a password is not a sign-in attempt
	// (it guesses nothing, and the limiter does not count it): 400 naming
	// what is missing, as for any body.
	missing := fieldIf(nil, in.Username == "", "username", "is required")
	missing = fieldIf(missing, in.Password == "", "password", "is required")
	if len(missing) > 0 {
		return nil, yard.Invalid("A user name and a password are required.", missing...)
	}
	return &in, nil
}

// unknownLoginField is the problem entry for a field a sign-in body must
// not have. Its name is not repeated: in a sign-in body anything may be a
// secret (a JSON document read as a form is one long "name").
func unknownLoginField(allowPK bool) yard.FieldError {
	msg := "the body has a field other than username and password"
	if allowPK {
		msg = "the body has a field other than username, password, bind_ip and include_password_hash"
	}
	return yard.FieldError{Field: "(body)", Message: msg}
}

var jsonPositionRe = regexp.MustCompile(`line \d+, column \d+`)

// loginDecodeError rewrites an error of the JSON decoder for a sign-in
// body (unmarshalStrict: EINVALID or EMALFORMED): the decoder's own text
// may quote the input, so the problem keeps only the code, the position
// and the names of known or name-like fields, with fixed messages.
func loginDecodeError(err error, allowPK bool) error {
	if e, ok := errors.AsType[*yard.Error](err); ok && e.Code == yard.EINVALID {
		out := &yard.Error{Code: yard.EINVALID, Message: "The sign-in body has a bad field."}
		for _, f := range e.Fields {
			switch f.Field {
			case "username", "password":
				out.Fields = append(out.Fields, yard.FieldError{Field: f.Field, Message: "must be a string, given once"})
			case "bind_ip", "include_password_hash":
				out.Fields = append(out.Fields, yard.FieldError{Field: f.Field, Message: "must be true or false, given once"})
			default:
				out.Fields = append(out.Fields, unknownLoginField(allowPK))
			}
		}
		return out
	}
	msg := "The sign-in body is not a JSON object with username and password"
	if pos := jsonPositionRe.FindString(yard.ErrorMessage(err)); pos != "" {
		msg += " (at " + pos + ")"
	}
	return yard.Errorf(yard.EMALFORMED, "%s.", msg)
}

// sessionView is the body of POST /sessions and GET /sessions/{key}.
type sessionView struct {
	Key          string  `json:"key,omitempty"`
	UserID       string  `json:"userId"`
	CreatedAt    string  `json:"createdAt"`
	LastActionAt string  `json:"lastActionAt"`
	IdleTimeout  int     `json:"idleTimeout"`
	ExpiresAt    string  `json:"expiresAt"`
	Links        urlsMap `json:"_links,omitempty"`
}

type urlsMap map[string]string

// handleCreateSession is POST /sessions: sign in, set the session cookie.
func (s *Server) handleCreateSession(w http.ResponseWriter, r *http.Request) {
	k, _, u, err := signIn(r, s.kit, false, func(k *auth.Kit) error {
		// A login form posted from another site would sign the victim in
		// as the attacker (login CSRF).
		if k.Sessions.CrossOrigin != nil && k.Sessions.CrossOrigin.Check(r) != nil {
			return yard.Errorf(yard.EFORBIDDEN, "Cross-site sign-in refused.")
		}
		return nil
	})
	var key string
	var now time.Time
	if err == nil {
		key, now, err = k.Sessions.CreateAt(r.Context(), u.ID)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	http.SetCookie(w, k.Sessions.Cookie(key))
	noStore(w)
	loc := s.url("/sessions/" + key)
	w.Header().Set("Location", loc)
	writeJSON(w, http.StatusCreated, sessionView{Key: key, UserID: u.ID, CreatedAt: Timestamp(now), LastActionAt: Timestamp(now),
		IdleTimeout: int(k.Sessions.Idle.Seconds()), ExpiresAt: Timestamp(now.Add(k.Sessions.Max)), Links: urlsMap{"self": loc}})
}

// validSessionKey reports whether key has the form of a session key: 32
// bytes in unpadded base64url.
func validSessionKey(key string) bool {
	if len(key) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(key)
	return err == nil
}

// handleGetSession is GET /sessions/{key}: the session, if it is live.
// Knowing the key is the credential (so HTTPS only).
func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) {
	k, err := overTLS(r, s.kit)
	key := r.PathValue("key")
	if err == nil && !validSessionKey(key) {
		err = yard.Errorf(yard.ENOTFOUND, "No such session.")
	}
	var sess *yard.Session
	if err == nil {
		sess, err = k.Store.FindSession(r.Context(), auth.HashKey(key))
	}
	if err == nil {
		if now := k.Now(); now.Sub(sess.LastSeen) >= k.Sessions.Idle || now.Sub(sess.CreatedAt) >= k.Sessions.Max {
			err = yard.Errorf(yard.ENOTFOUND, "The session has expired.")
		}
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	noStore(w)
	writeJSON(w, http.StatusOK, sessionView{UserID: sess.UserID, CreatedAt: Timestamp(sess.CreatedAt), LastActionAt: Timestamp(sess.LastSeen),
		IdleTimeout: int(k.Sessions.Idle.Seconds()), ExpiresAt: Timestamp(sess.CreatedAt.Add(k.Sessions.Max))})
}

// handleDeleteSession is DELETE /sessions/{key}: sign out (204 and an
// expired cookie).
func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	k, err := overTLS(r, s.kit)
	existed := false
	if key := r.PathValue("key"); err == nil && validSessionKey(key) {
		existed, err = k.Sessions.Delete(r.Context(), key)
	}
	if err == nil && !existed {
		err = yard.Errorf(yard.ENOTFOUND, "No such session.")
	}
	if err == nil {
		http.SetCookie(w, k.Sessions.ExpiredCookie())
	}
	s.writeNoContent(w, r, err)
}

// tokens returns the token pair service, or an error on a verify-only server.
func (s *Server) tokens(r *http.Request) (*auth.Kit, error) {
	k, err := s.kit(r)
	if err == nil && k.Tokens == nil {
		err = yard.Errorf(yard.EUNAVAILABLE, "This server only verifies tokens; sign in at the issuing server.")
	}
	return k, err
}

// handleLogin is POST /auth/login: a new token pair.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	k, _, u, err := signIn(r, s.tokens, false, nil)
	var pair *auth.TokenPair
	if err == nil {
		pair, err = k.Tokens.Issue(r.Context(), u)
	}
	s.writePair(w, r, pair, err)
}

// writePair answers a new token pair (not to be stored by caches), or the
// error of making it.
func (s *Server) writePair(w http.ResponseWriter, r *http.Request, pair *auth.TokenPair, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	noStore(w)
	writeJSON(w, http.StatusOK, pair)
}

// refreshToken returns the token pair service and the refresh token of a
// request (over TLS, as a bearer token), or why there are none: without
// an Authorization: Bearer header, 401 (missing credentials).
func (s *Server) refreshToken(r *http.Request) (*auth.Kit, string, error) {
	k, err := overTLS(r, s.tokens)
	scheme, tok := auth.AuthScheme(r.Header.Get("Authorization"))
	if err == nil && (scheme != "bearer" || tok == "") {
		err = yard.Errorf(yard.EUNAUTHORIZED, "Send the refresh token as Authorization: Bearer <refresh_token>.")
	}
	return k, tok, err
}

// handleRefresh is POST /auth/refresh: a refresh token for a new pair.
func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) {
	k, tok, err := s.refreshToken(r)
	var pair *auth.TokenPair
	if err == nil {
		pair, err = k.Tokens.Refresh(r.Context(), tok)
	}
	s.writePair(w, r, pair, err)
}

// handleLogout is POST /auth/logout: revoke the refresh token's family.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	k, tok, err := s.refreshToken(r)
	if err == nil {
		err = k.Tokens.Logout(r.Context(), tok)
	}
	s.writeNoContent(w, r, err)
}

// pkTokenView is the body of POST /auth/pk-token.
type pkTokenView struct {
	Token     string `json:"token"`
	TokenType string `json:"token_type"`
	ExpiresIn int    `json:"expires_in"`
	ExpiresAt string `json:"expires_at"`
}

// handlePKToken is POST /auth/pk-token: a public-key token.
func (s *Server) handlePKToken(w http.ResponseWriter, r *http.Request) {
	k, in, u, err := signIn(r, s.kit, true, func(k *auth.Kit) error {
		if k.PK.Ring == nil || k.PK.Ring.Active() == nil {
			return yard.Errorf(yard.EUNAVAILABLE, "This server only verifies public-key tokens; ask the issuing server.")
		}
		return nil
	})
	var tok string
	var exp time.Time
	if err == nil {
		opt := auth.PKOptions{Context: r.Context()}
		if in.BindIP != nil && *in.BindIP {
			opt.BindIP = auth.ClientIP(r)
		}
		if in.IncludePasswordHash != nil && *in.IncludePasswordHash {
			opt.IncludePasswordHash, opt.Password = true, in.Password
		}
		tok, exp, err = k.PK.Issue(u, opt)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	noStore(w)
	writeJSON(w, http.StatusOK, pkTokenView{Token: tok, TokenType: "Bearer", ExpiresIn: int(k.PK.TTL.Seconds()), ExpiresAt: Timestamp(exp)})
}

// handleJWKS is GET /.well-known/jwks.json: the public keys that verify
// public-key tokens and, when the token pair is EdDSA or ES256, its tokens
// (RFC 7517 §5), including a rotated-out key until the tokens it signed
// have expired.
func (s *Server) handleJWKS(w http.ResponseWriter, r *http.Request, k *auth.Kit) {
	body, err := k.JWKS()
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(body)
}

// apiKeyView is the representation of an API key; Secret only in the
// answer to its creation.
type apiKeyView struct {
	APIKey    string `json:"apiKey"`
	Secret    string `json:"secret,omitempty"`
	UserID    string `json:"userId"`
	CreatedAt string `json:"createdAt"`
}

// handleCreateAPIKey is POST /apikeys: a new key for the caller; the
// secret is shown once.
func (s *Server) handleCreateAPIKey(w http.ResponseWriter, r *http.Request, k *auth.Kit) {
	// The body may be left out; when sent it is an empty object.
	if _, err := decodeOptional[struct{}](r); err != nil {
		s.error(w, r, err)
		return
	}
	p := yard.PrincipalFromContext(r.Context())
	var idb, secret [24]byte
	_, _ = rand.Read(idb[:])
	_, _ = rand.Read(secret[:])
	key := &yard.APIKey{ID: "ak_" + base64.RawURLEncoding.EncodeToString(idb[:16]), UserID: p.UserID, CreatedAt: k.Now()}
	plain := "sk_" + base64.RawURLEncoding.EncodeToString(secret[:])
	key.SealedSecret = k.Box.Seal([]byte(plain), key.ID)
	if err := k.Store.CreateAPIKey(r.Context(), key); err != nil {
		s.error(w, r, err)
		return
	}
	noStore(w)
	w.Header().Set("Location", s.url("/apikeys/"+key.ID))
	writeJSON(w, http.StatusCreated, apiKeyView{APIKey: key.ID, Secret: plain, UserID: key.UserID, CreatedAt: Timestamp(key.CreatedAt)})
}

// ownAPIKey finds the API key of the path if the caller owns it (or any,
// for an admin).
func ownAPIKey(r *http.Request, k *auth.Kit) (*yard.APIKey, error) {
	key, err := k.Store.FindAPIKey(r.Context(), r.PathValue("apiKey"))
	if p := yard.PrincipalFromContext(r.Context()); err == nil && p.UserID != key.UserID && !p.IsAdmin() {
		err = yard.Errorf(yard.EFORBIDDEN, "This API key belongs to another person.")
	}
	return key, err
}

// handleGetAPIKey is GET /apikeys/{apiKey}: the key without its secret.
func (s *Server) handleGetAPIKey(w http.ResponseWriter, r *http.Request, k *auth.Kit) {
	key, err := ownAPIKey(r, k)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiKeyView{APIKey: key.ID, UserID: key.UserID, CreatedAt: Timestamp(key.CreatedAt)})
}

// handleDeleteAPIKey is DELETE /apikeys/{apiKey}.
func (s *Server) handleDeleteAPIKey(w http.ResponseWriter, r *http.Request, k *auth.Kit) {
	key, err := ownAPIKey(r, k)
	if err == nil {
		_, err = k.Store.DeleteAPIKey(r.Context(), key.ID)
	}
	if err == nil {
		k.Signed.Forget(key.ID)
	}
	s.writeNoContent(w, r, err)
}
