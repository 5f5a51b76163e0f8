// Package console serves the console for people at /console/: HTML pages,
// rendered on the server and working without JavaScript, through which a
// signed-in person uses the public API (docs/console.md).
//
// The console holds no data and no authority of its own. Each page calls
// the public API in-process: it builds the request a client would send
// (GET /v1/dogs?max=20), carrying the person's own session cookie, serves
// it through the API's http.Handler into a recorder, and renders the
// answer. The API decides what the person may see and do, exactly as for
// any client; the page lists every such call (method, URL, status, time)
// with a curl command that repeats it.
//
// The pages' security comes from package pages: Protect sets the framing
// and caching headers and the CSRF cookie and, on POST, refuses cross-site
// forms (http.CrossOriginProtection and the double-submit token); User
// finds the signed-in person; RedirectToSignIn sends anybody else to
// /signin with next set. The console widens the Content-Security-Policy by
// exactly its own script file (script-src 'self', connect-src 'self' for
// the event stream); no inline script or style is ever allowed.
package console

import (
	"bytes"
	"embed"
	"hash/fnv"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/pages"
)

// Prefix is the path under which the console answers.
const Prefix = "/console/"

// policy is the console's Content-Security-Policy: the pages' policy
// (pages.Protect) plus the console's own script and its event stream.
const policy = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/console.css assets/console.js assets/favicon.svg
var assetFS embed.FS

// Config is what a Console is built from.
type Config struct {
	// API is the public API's handler; every page calls it in-process.
	API http.Handler
	// Pages gives the sign-in redirect, the session's person and the
	// pages' security middleware (CSRF, cross-origin check, headers).
	Pages *pages.Pages
	// BaseURL is the public base address (no trailing slash): the API
	// requests are addressed to it and the curl commands name it.
	BaseURL string
	// Logger receives template failures; nil discards them.
	Logger *slog.Logger
}

// Console serves the pages under Prefix. Build it with New.
type Console struct {
	cfg       Config
	mux       *http.ServeMux
	templates map[string]*template.Template
	assets    map[string]asset
	patterns  []string // the paths of the routes, for Patterns
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// New returns the console over cfg.
func New(cfg Config) *Console {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), templates: parseTemplates(), assets: loadAssets()}
	c.routes()
	return c
}

// routes registers every console page.
func (c *Console) routes() {
	c.handle("GET /console/assets/{name}", http.HandlerFunc(c.handleAsset))
	c.page("GET /console/{$}", "home", false, c.handleHome)
	c.form("/console/dogs", "dogs", false, c.handleDogs)
	c.form("/console/dogs/{dog_id}/{$}", "dogs", false, c.handleDog)
	c.form("/console/cars", "cars", false, c.handleCars)
	c.page("GET /console/cars/{car_id}", "cars", false, c.handleCar)
	c.page("GET /console/garages", "garages", false, c.handleGarages)
	c.page("GET /console/garages/{garage_id}", "garages", false, c.handleGarage)
	c.page("GET /console/searches", "searches", true, c.handleSearches)
	c.form("/console/searches/{search_id}", "cars", false, c.handleSearch)
	c.form("/console/orders", "orders", false, c.handleOrders)
	c.form("/console/orders/{order_id}", "orders", false, c.handleOrder)
	c.page("GET /console/events", "events", false, c.handleEvents)
	c.form("/console/webhooks", "webhooks", false, c.handleWebhooks)
	c.form("/console/webhooks/{webhook_id}", "webhooks", false, c.handleWebhook)
	c.form("/console/lab", "lab", false, c.handleLab)
	c.page("POST /console/signout", "", false, c.handleSignOut)
	c.form("/console/admin/people", "people", true, c.handlePeople)
	c.form("/console/admin/server", "ops", true, c.handleOps)
	c.form("/console/admin/oauth", "oauth", true, c.handleConsumers)
}

// form registers a page that shows a form (GET) and takes it (POST).
func (c *Console) form(path, section string, admin bool, h func(*call, http.ResponseWriter, *http.Request)) {
	c.page("GET "+path, section, admin, h)
	c.page("POST "+path, section, admin, h)
}

// handle registers h for pattern ("METHOD /path") and remembers the path.
func (c *Console) handle(pattern string, h http.Handler) {
	c.mux.Handle(pattern, h)
	_, path, _ := strings.Cut(pattern, " ")
	if !slices.Contains(c.patterns, path) {
		c.patterns = append(c.patterns, path)
	}
}

// Patterns returns the path patterns (without methods) the console
// answers, for the server that mounts it: each one is routed to
// ServeHTTP, which answers the methods the page takes.
func (c *Console) Patterns() []string { return slices.Clone(c.patterns) }

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// page registers a page handler behind the pages' middleware and the
// sign-in check; admin pages answer 403 to people. section is the
// navigation entry the page marks as current.
func (c *Console) page(pattern, section string, admin bool, h func(*call, http.ResponseWriter, *http.Request)) {
	c.handle(pattern, c.cfg.Pages.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", policy)
		user, err := c.cfg.Pages.User(r)
		if err != nil {
			c.cfg.Pages.Internal(w, r, err)
			return
		}
		if user == nil {
			c.cfg.Pages.RedirectToSignIn(w, r)
			return
		}
		cl := &call{c: c, r: r, user: user, status: http.StatusOK}
		if admin && !user.IsAdmin() {
			c.render(w, r, cl, http.StatusForbidden, "error", "Administrators only",
				errorPage{Detail: "This page is for administrators."})
			return
		}
		cl.section = section
		h(cl, w, r)
	})))
}

// notFound answers a path under the console that is no page.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.cfg.Pages.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.cfg.Pages.Error(w, r, http.StatusNotFound, "Not found", "There is no console page here.")
	})).ServeHTTP(w, r)
}

func parseTemplates() map[string]*template.Template {
	funcs := template.FuncMap{
		"ms": func(d time.Duration) string {
			return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
		},
		"add":  func(a, b int) int { return a + b },
		"list": func(s ...string) []string { return s },
		"min":  func(a, b int) int { return min(a, b) },
		"short": func(id string) string {
			if len(id) > 12 {
				return "…" + id[len(id)-12:]
			}
			return id
		},
		"form": func(d dog) dogForm {
			return dogForm{Name: d.Name, Email: d.Email, BarkEffect: d.BarkEffect, CodeURL: d.CodeURL}
		},
		"dict":    func(f dogForm, prefix string) dogFields { return dogFields{Form: f, Prefix: prefix} },
		"effects": func() []string { return effects },
	}
	m := map[string]*template.Template{}
	for _, name := range []string{"home", "dogs", "dog", "people", "error", "message",
		"cars", "car", "garages", "garage", "searches", "search", "orders", "order", "events", "webhooks", "webhook", "ops", "consumers", "lab"} {
		m[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return m
}

// view is what the layout sees.
type view struct {
	Title   string
	User    *yard.Principal
	CSRF    string
	Section string
	Calls   []apiCall
	Notice  string
	Problem string
	Secret  *secret
	Page    any
}

// secret is a value the API shows once (a new person's password), shown
// once on the page too.
type secret struct{ Label, Value string }

// dogFields is what the dog form's fields show.
type dogFields struct {
	Form   dogForm
	Prefix string // the fields' id prefix
}

// errorPage is the body of a page that could not be shown.
type errorPage struct{ Detail string }

// message is a page of text with a link onwards.
type message struct{ Text, Link, LinkLabel string }

// render writes a whole page: the layout around template name, with the
// API calls the request made.
func (c *Console) render(w http.ResponseWriter, r *http.Request, cl *call, status int, name, title string, v any) {
	page := view{Title: title, Page: v, Calls: cl.calls, Notice: cl.notice, Problem: cl.problem, Secret: cl.secret,
		Section: cl.section, User: cl.user, CSRF: pages.CSRFToken(r)}
	var buf bytes.Buffer
	if err := c.templates[name].ExecuteTemplate(&buf, "layout", page); err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console template", slog.String("page", name), slog.String("error", err.Error()))
		c.cfg.Pages.Error(w, r, http.StatusInternalServerError, "Something went wrong", "The console could not show this page.")
		return
	}
	pages.WriteBody(w, r, status, "text/html; charset=utf-8", buf.Bytes())
}

// failPage renders the error page for the API's refusal res.
func (c *Console) failPage(w http.ResponseWriter, r *http.Request, cl *call, res result, title, detail string) {
	cl.problemOf(res)
	c.render(w, r, cl, res.Status, "error", title, errorPage{Detail: detail})
}

// read reads the API resource at path into v for a page of one thing
// (what names it: "dog"); when the API refuses, it renders the error page
// and reports false.
func (c *Console) read(w http.ResponseWriter, r *http.Request, cl *call, path string, v any, what string) (result, bool) {
	res := cl.do("GET", path, nil, nil)
	if res.decode(v) {
		return res, true
	}
	c.failPage(w, r, cl, res, strings.ToUpper(what[:1])+what[1:]+" not shown", "The "+what+" could not be read.")
	return res, false
}

// deleted renders the page that says the thing (what: "dog") is deleted,
// with a link back to its list, the console page list.
func (c *Console) deleted(w http.ResponseWriter, r *http.Request, cl *call, what, list string) {
	c.render(w, r, cl, http.StatusOK, "message", strings.ToUpper(what[:1])+what[1:]+" deleted",
		message{Text: "The " + what + " is deleted.", Link: Prefix + list, LinkLabel: "Back to the " + list})
}

func loadAssets() map[string]asset {
	m := map[string]asset{}
	for name, ct := range map[string]string{"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8",
		"favicon.svg": "image/svg+xml"} {
		b, err := assetFS.ReadFile("assets/" + name)
		if err != nil {
			panic(err) // embedded above: cannot happen
		}
		h := fnv.New64a() // the validator: FNV-1a of the body
		h.Write(b)
		m[name] = asset{body: b, contentType: ct, etag: `"` + strconv.FormatUint(h.Sum64(), 16) + `"`}
	}
	return m
}

// handleAsset serves the console's stylesheet and script (public: they
// hold nothing of anybody's).
func (c *Console) handleAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := c.assets[r.PathValue("name")]
	if !ok {
		c.notFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("ETag", a.etag)
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	pages.WriteBody(w, r, http.StatusOK, a.contentType, a.body)
}

// handleSignOut ends the person's session (the pages' SignOut, as
// DELETE /sessions/{key} does) and sends the browser to the sign-in form.
func (c *Console) handleSignOut(cl *call, w http.ResponseWriter, r *http.Request) {
	if err := c.cfg.Pages.SignOut(w, r); err != nil {
		c.cfg.Pages.Internal(w, r, err)
		return
	}
	w.Header().Set("Location", c.cfg.BaseURL+pages.SignInURL(Prefix))
	w.WriteHeader(http.StatusSeeOther)
}

// handleHome is the console's first page: who is signed in, and where to
// go.
func (c *Console) handleHome(cl *call, w http.ResponseWriter, r *http.Request) {
	var me person
	if res := cl.do("GET", "/v1/people/"+seg(cl.user.UserID), nil, nil); !res.decode(&me) {
		cl.problemOf(res)
	}
	c.render(w, r, cl, http.StatusOK, "home", "Console", me)
}
