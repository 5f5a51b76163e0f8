// Package pages serves yard's pages for people: the sign-in form, a
// generic consent page, message pages and HTML error pages. The delegated
// authorisation flows (OAuth 1.0a, OpenID 2.0) send a browser here; the JSON
// API never does.
//
// Every page is an html/template from the embedded templates/ directory,
// rendered inside one layout with one embedded stylesheet (served at
// StylePath). No page uses JavaScript; every form works with a plain
// browser, a terminal browser or an HTTP client with a cookie jar.
//
// # Use
//
//	p := pages.New(kit, baseURL, logger)
//	mux.Handle("GET /signin", p.Protect(http.HandlerFunc(p.HandleSignIn)))
//	mux.Handle("POST /signin", p.Protect(http.HandlerFunc(p.HandleSignIn)))
//	mux.HandleFunc("GET "+pages.StylePath, p.HandleStyle)
//	mux.Handle("GET /my/consent", p.Protect(myHandler))
//
// A page handler wrapped by Protect:
//
//   - asks User(r) who is signed in (the cookie session of docs/auth.md);
//     when nobody is, RedirectToSignIn(w, r) sends the browser to the
//     sign-in form with next set to the current URL, and the form sends it
//     back there after a successful sign-in;
//   - renders Consent (a party asks for something, Allow/Deny buttons named
//     "decision" with the values "allow" and "deny", optional checkboxes and
//     hidden fields), WrongUser (a party asked for another account than the
//     one signed in: buttons "decision" with the values "switch" and "deny"),
//     Message (a title, lines of text, an optional code to copy, an optional
//     link), SignIn, or Error (an HTML error page with a status);
//   - on POST reads r.PostForm: Protect has parsed it and checked its CSRF
//     token already.
//
// # Security
//
// Protect sets, on every response it wraps:
//
//   - Content-Security-Policy: default-src 'none'; style-src 'self';
//     img-src 'self'; form-action 'self' (plus the origins a page names,
//     see Consent.RedirectTo); frame-ancestors 'none'; base-uri 'none'. No
//     script runs, inline or not.
//   - X-Frame-Options: DENY, Referrer-Policy: no-referrer (page URLs carry
//     request tokens), Cache-Control: no-store.
//
// On POST it refuses with a 403 error page a request that fails
// http.CrossOriginProtection (Sec-Fetch-Site / Origin) or whose csrf_token
// form field does not equal the CSRF cookie (a double-submit token: the
// cookie __Host-yard_csrf is HttpOnly, Secure, SameSite=Lax, set by Protect
// on the first page a browser sees). Forms rendered here carry the token;
// a handler rendering its own form puts CSRFToken(r) in a hidden field named
// csrf_token.
//
// The sign-in form checks the name and password through auth.Kit.Login, so
// the login rate limit of docs/auth.md applies to it as to every login
// (429 with Retry-After past the limit), and starts the same cookie session
// as POST /sessions. The next parameter must be a local path (LocalPath);
// anything else is ignored and the browser lands on a "signed in" page. A
// username parameter fills in the name (SignInURLAs). SignOut ends the
// request's session (a page's "sign in as someone else").
package pages

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed style.css
var stylesheet []byte

// StylePath is the path at which HandleStyle serves the stylesheet.
const StylePath = "/pages/style.css"

// SignInPath is the path of the sign-in form (GET shows it, POST signs in).
const SignInPath = "/signin"

// CSRFCookie is the name of the cookie holding the CSRF token.
const CSRFCookie = "__Host-yard_csrf"

// CSRFField is the form field that must repeat the CSRF cookie on POST.
const CSRFField = "csrf_token"

var styleETag = func() string {
	sum := sha256.Sum256(stylesheet)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}()

var templates = func() map[string]*template.Template {
	m := map[string]*template.Template{}
	for _, name := range []string{"signin", "consent", "wronguser", "message", "error"} {
		m[name] = template.Must(template.ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return m
}()

// Pages renders the pages and runs the sign-in form.
type Pages struct {
	// Kit checks passwords (Kit.Login, under the login rate limit) and
	// keeps the cookie sessions.
	Kit *auth.Kit
	// BaseURL is the public base address without a trailing slash; the
	// redirects of the sign-in form are built from it.
	BaseURL string
	Logger  *slog.Logger

	cross *http.CrossOriginProtection
}

// New returns the pages over kit.
func New(kit *auth.Kit, baseURL string, logger *slog.Logger) *Pages {
	if logger == nil {
		logger = slog.Default()
	}
	return &Pages{Kit: kit, BaseURL: strings.TrimRight(baseURL, "/"), Logger: logger,
		cross: http.NewCrossOriginProtection()}
}

type csrfKey struct{}

// CSRFToken returns the CSRF token of a request that went through Protect.
func CSRFToken(r *http.Request) string {
	t, _ := r.Context().Value(csrfKey{}).(string)
	return t
}

// policy is the Content-Security-Policy of a page whose forms may lead to
// the given extra origins (form-action also covers redirects after a form
// submission).
func policy(formOrigins ...string) string {
	return "default-src 'none'; style-src 'self'; img-src 'self'; form-action " +
		strings.Join(append([]string{"'self'"}, formOrigins...), " ") +
		"; frame-ancestors 'none'; base-uri 'none'"
}

// Protect wraps a page handler with the security headers, the CSRF cookie
// and, on POST, the cross-origin and CSRF checks (see the package comment).
func (p *Pages) Protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy())
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")

		token := ""
		if c, err := r.Cookie(CSRFCookie); err == nil && validToken(c.Value) {
			token = c.Value
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodDelete {
			if err := p.cross.Check(r); err != nil {
				p.Error(w, r, http.StatusForbidden, "Request refused", "This form was sent from another site. Go back to the page that asked for it and try again.")
				return
			}
			if err := r.ParseForm(); err != nil {
				p.Error(w, r, http.StatusBadRequest, "Bad request", "The form could not be read.")
				return
			}
			sent := r.PostForm.Get(CSRFField)
			if token == "" || len(r.PostForm[CSRFField]) != 1 || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
				p.Error(w, r, http.StatusForbidden, "Request refused", "The form has expired or did not come from this site. Reload the page and try again.")
				return
			}
		} else if token == "" {
			token = newToken()
			http.SetCookie(w, &http.Cookie{Name: CSRFCookie, Value: token, Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), csrfKey{}, token)))
	})
}

func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func validToken(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// HandleStyle serves the stylesheet.
func (p *Pages) HandleStyle(w http.ResponseWriter, r *http.Request) {
	const css = "text/css; charset=utf-8"
	h := w.Header()
	h.Set("Content-Type", css)
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("ETag", styleETag)
	if r.Header.Get("If-None-Match") == styleETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	WriteBody(w, r, http.StatusOK, css, stylesheet)
}

// view is what the layout sees.
type view struct {
	Title     string
	Site      string // the product name shown in the header
	StylePath string
	CSRF      string
	Page      any
}

// render writes a whole page or, if the template fails, a plain 500.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name, title string, page any) {
	var buf bytes.Buffer
	err := templates[name].ExecuteTemplate(&buf, "layout", view{Title: title, Site: "yard", StylePath: StylePath, CSRF: CSRFToken(r), Page: page})
	if err != nil {
		p.Logger.ErrorContext(r.Context(), "page template", slog.String("page", name), slog.String("error", err.Error()))
		WriteBody(w, r, http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("Internal server error\n"))
		return
	}
	WriteBody(w, r, status, "text/html; charset=utf-8", buf.Bytes())
}

// WriteBody answers status with body of type contentType, its length
// declared, and without the body to HEAD.
func WriteBody(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// Error renders an HTML error page with status.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	p.render(w, r, status, "error", title, struct {
		Status int
		Detail string
	}{status, detail})
}

// Message is a page of information: a title, lines of text, an optional
// code for the person to copy (shown in a box with id "code"), an optional
// link.
type Message struct {
	Title     string
	Lines     []string
	Code      string
	Link      string
	LinkLabel string
}

// Message renders m with status.
func (p *Pages) Message(w http.ResponseWriter, r *http.Request, status int, m Message) {
	p.render(w, r, status, "message", m.Title, m)
}

// Field is a hidden form field.
type Field struct{ Name, Value string }

// Checkbox is an optional choice on the consent page ("remember this
// decision", a field to share). Value defaults to "on".
type Checkbox struct {
	Name, Value, Label string
	Checked            bool
}

// Consent is a page on which a person signed in as User allows or denies
// Party something. The form posts to Action (a local path) with the hidden
// fields, the checked checkboxes and decision=allow or decision=deny.
type Consent struct {
	Title       string // "Allow access?"
	Party       string // the asking party's name (element id "party")
	PartyDetail string // optional: its address or realm, shown beside it
	Question    string // the rest of the sentence: "wants to act for you on yard."
	User        string // the signed-in person's name (element id "user")
	Details     []string
	Action      string
	Hidden      []Field
	Checkboxes  []Checkbox
	AllowLabel  string // "Allow"
	DenyLabel   string // "Deny"
	// SwitchUser is a link to sign in as someone else (optional).
	SwitchUser string
	// RedirectTo lists the URLs the answer to this form may redirect to
	// (the party's callback); their origins join the page's form-action.
	RedirectTo []string
}

// Consent renders c with status 200.
func (p *Pages) Consent(w http.ResponseWriter, r *http.Request, c Consent) {
	c.AllowLabel = cmp.Or(c.AllowLabel, "Allow")
	c.DenyLabel = cmp.Or(c.DenyLabel, "Deny")
	c.Title = cmp.Or(c.Title, "Allow access?")
	allowRedirects(w, c.RedirectTo)
	p.render(w, r, http.StatusOK, "consent", c.Title, c)
}

// allowRedirects adds the origins of the URLs a page's form may redirect
// to (a party's callback) to the page's form-action.
func allowRedirects(w http.ResponseWriter, to []string) {
	var origins []string
	for _, u := range to {
		if o := origin(u); o != "" {
			origins = append(origins, o)
		}
	}
	w.Header().Set("Content-Security-Policy", policy(origins...))
}

// WrongUser is a page for a person signed in as User when Party asked to
// sign in as another account, Wanted. One form posts to Action with the
// hidden fields and decision=switch ("Sign in as someone else": the
// handler signs the session out and sends the browser to the sign-in
// form, which comes back to the party's request) or decision=deny
// (cancel: the handler tells the party no).
type WrongUser struct {
	Title        string // "Signed in as someone else"
	Party        string // the asking party (element id "party")
	PartyDetail  string // optional: its address, shown beside it
	Wanted       string // the account asked for (element id "wanted")
	WantedDetail string // optional: its identifier, shown beside it
	User         string // the signed-in person's name (element id "user")
	Action       string
	Hidden       []Field
	SwitchLabel  string // "Sign in as someone else" (element id "switch")
	CancelLabel  string // "Cancel" (element id "cancel")
	// RedirectTo lists the URLs the answer to this form may redirect to
	// (the party's return address); their origins join the page's
	// form-action.
	RedirectTo []string
}

// WrongUser renders u with status 200.
func (p *Pages) WrongUser(w http.ResponseWriter, r *http.Request, u WrongUser) {
	u.Title = cmp.Or(u.Title, "Signed in as someone else")
	u.SwitchLabel = cmp.Or(u.SwitchLabel, "Sign in as someone else")
	u.CancelLabel = cmp.Or(u.CancelLabel, "Cancel")
	allowRedirects(w, u.RedirectTo)
	p.render(w, r, http.StatusOK, "wronguser", u.Title, u)
}

// origin returns the scheme://host[:port] of an absolute http(s) URL, or "".
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		strings.ContainsAny(u.Host, " ;,'\"") {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// SignIn is the sign-in form.
type SignIn struct {
	Intro    string
	Error    string
	Username string
	Next     string
	Action   string
}

// SignIn renders the sign-in form with status.
func (p *Pages) SignIn(w http.ResponseWriter, r *http.Request, status int, s SignIn) {
	s.Action = cmp.Or(s.Action, SignInPath)
	p.render(w, r, status, "signin", "Sign in", s)
}

// MaxNext is the longest way back (a local path with its query) the
// sign-in form carries.
const MaxNext = 8192

// LocalPath returns next when it is a path on this site ("/x?y"), and ""
// otherwise: absolute URLs, scheme-relative "//host" forms, backslashes
// (which browsers read as slashes) and control characters are refused, so
// the sign-in form never redirects to another site.
func LocalPath(next string) string {
	if len(next) == 0 || len(next) > MaxNext || next[0] != '/' || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(c rune) bool { return c == '\\' || c < 0x21 || c == 0x7f }) {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	return next
}

// User returns the person signed in by the request's session cookie, or
// nil when there is none or it is no longer valid. Other errors are
// internal.
func (p *Pages) User(r *http.Request) (*yard.Principal, error) {
	if !p.Kit.Sessions.Match(r) || r.TLS == nil {
		return nil, nil
	}
	pr, err := p.Kit.Sessions.Authenticate(r)
	if c := yard.ErrorCode(err); c == yard.EUNAUTHORIZED || c == yard.EFORBIDDEN {
		return nil, nil
	}
	return pr, err
}

// SignInURL returns the path of the sign-in form that comes back to next.
func SignInURL(next string) string { return SignInURLAs(next, "") }

// SignInURLAs returns the path of the sign-in form that comes back to next
// with the user name filled in ("" for none).
func SignInURLAs(next, username string) string {
	q := url.Values{}
	if LocalPath(next) != "" {
		q.Set("next", next)
	}
	if username != "" {
		q.Set("username", username)
	}
	if len(q) == 0 {
		return SignInPath
	}
	return SignInPath + "?" + q.Encode()
}

// SignOut ends the session of the request's cookie, if any, and tells the
// browser to drop the cookie.
func (p *Pages) SignOut(w http.ResponseWriter, r *http.Request) error {
	if c, err := r.Cookie(auth.SessionCookie); err == nil && c.Value != "" {
		if _, err := p.Kit.Sessions.Delete(r.Context(), c.Value); err != nil {
			return err
		}
	}
	http.SetCookie(w, p.Kit.Sessions.ExpiredCookie())
	return nil
}

// RedirectToSignIn sends the browser to the sign-in form (303), which
// brings it back to the current URL once signed in.
func (p *Pages) RedirectToSignIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", p.BaseURL+SignInURL(r.URL.RequestURI()))
	w.WriteHeader(http.StatusSeeOther)
}

// HandleSignIn is the sign-in form: GET shows it, POST checks the name and
// password with Kit.Login, starts a cookie session and redirects (303) to
// next. Wrap it in Protect.
func (p *Pages) HandleSignIn(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		q := r.URL.Query()
		name := strings.TrimSpace(q.Get("username"))
		if len(name) > 200 {
			name = ""
		}
		p.SignIn(w, r, http.StatusOK, SignIn{Next: LocalPath(q.Get("next")), Username: name})
		return
	}
	if r.TLS == nil {
		p.Error(w, r, http.StatusForbidden, "HTTPS required", "Passwords are accepted over HTTPS only.")
		return
	}
	form := r.PostForm
	next := LocalPath(form.Get("next"))
	name := strings.TrimSpace(form.Get("username"))
	u, err := p.Kit.Login(r, name, form.Get("password"))
	if err != nil {
		page := SignIn{Username: name, Next: next}
		switch yard.ErrorCode(err) {
		case yard.EUNAUTHORIZED:
			page.Error = "The user name or the password is wrong."
			p.SignIn(w, r, http.StatusUnauthorized, page)
		case yard.ERATELIMIT:
			retry := 60
			if e, ok := err.(*yard.Error); ok && e.RetryAfter > 0 {
				retry = e.RetryAfter
			}
			w.Header().Set("Retry-After", strconv.Itoa(retry))
			page.Error = fmt.Sprintf("Too many failed attempts. Try again in %d seconds.", retry)
			p.SignIn(w, r, http.StatusTooManyRequests, page)
		default:
			p.Internal(w, r, err)
		}
		return
	}
	key, _, err := p.Kit.Sessions.CreateAt(r.Context(), u.ID)
	if err != nil {
		p.Internal(w, r, err)
		return
	}
	http.SetCookie(w, p.Kit.Sessions.Cookie(key))
	if next == "" {
		p.Message(w, r, http.StatusOK, Message{Title: "Signed in", Lines: []string{"You are signed in as " + u.Name + "."}})
		return
	}
	w.Header().Set("Location", p.BaseURL+next)
	w.WriteHeader(http.StatusSeeOther)
}

// Internal logs err and renders a 500 page that does not show it.
func (p *Pages) Internal(w http.ResponseWriter, r *http.Request, err error) {
	p.Logger.ErrorContext(r.Context(), "internal error", slog.String("request_id", w.Header().Get("X-Request-Id")),
		slog.String("path", LogCut(r.URL.Path, MaxLogPath)), slog.String("error", err.Error()))
	p.Error(w, r, http.StatusInternalServerError, "Something went wrong", "The server could not answer this page. Try again later.")
}
