// Package httpapi is yard's HTTP interface: one Server, every endpoint
// registered in routes.go, one error rendering path (RFC 9457 problem
// details), content negotiation, paging links and conditional requests.
package httpapi

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/console"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/internal/fairgate"
	"github.com/yard-api/yard/internal/outage"
	"github.com/yard-api/yard/internal/tracing"
	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/pages"
	"github.com/yard-api/yard/webhooks"
)

// MaxBodyBytes is the largest request body accepted (docs/api.md, HTTP).
const MaxBodyBytes = 1 << 20

// DefaultStoreWait is the store wait cmd/yard serves with unless
// --store-wait says otherwise (Deps.StoreWait).
const DefaultStoreWait = 30 * time.Second

// Store is the store the API is given (Deps.DB): every interface a group
// of endpoints declares where it uses it, and nothing else. New hands each
// group the store as its own interface (stores); no handler reaches it as
// a Store.
type Store interface {
	dogStore
	barkStore
	carStore
	eventStore
	openidStore
	opsStore
	outageStore
	orderStore
	personStore
	webhookStore
}

// stores are the one store of Deps.DB as each group of endpoints sees it,
// through the interface declared in its file: a handler reaches the
// methods its group asks for, and no other.
type stores struct {
	dogs     dogStore     // dogs.go, dogs_v2.go
	barks    barkStore    // barks.go
	cars     carStore     // cars, garages and searches
	events   eventStore   // events.go
	openid   openidStore  // openid.go, openid_pages.go
	ops      opsStore     // ops.go
	outage   outageStore  // errors.go, outage.go
	orders   orderStore   // orders.go
	people   personStore  // people.go
	webhooks webhookStore // webhooks.go
}

// Deps are the collaborators of a Server. They are all given to New and
// never changed afterwards: reading the Deps a server was built with tells
// everything it is made of.
type Deps struct {
	// DB is the store; required. *store.DB is one.
	DB Store
	// Auth is the authentication chain every authenticated endpoint runs
	// (with a Kit, the kit's Chain); nil is no scheme at all, so every
	// authenticated endpoint answers 401. Its Basic scheme
	// (auth.Chain.Basic) is told when a person's password changes or the
	// person is deleted.
	Auth *auth.Chain
	// Kit holds the other first-party schemes (Digest, sessions, tokens,
	// signed requests, OAuth 1.0a) behind the /sessions, /auth and
	// /apikeys endpoints and the pages for people; nil serves those
	// endpoints as 503.
	Kit *auth.Kit
	// OpenID is the OpenID 2.0 provider behind /openid (openid.go); nil
	// serves those endpoints as 503.
	OpenID *openid.Provider
	// BaseURL is the public base address; every Location header and link
	// is built from it (a trailing slash is dropped).
	BaseURL string
	// Logger receives the request log; nil discards it.
	Logger *slog.Logger
	// Registry receives the server's Prometheus metrics; nil makes a new
	// one.
	Registry *prometheus.Registry
	// Version is reported by the index and the OpenAPI document; empty is
	// "dev".
	Version string
	// Barks runs bark tasks; nil answers the bark endpoints with 503.
	Barks BarkRunner
	// Cars answers every car list; nil lets the store's SQL path answer.
	// cmd/yard gives the search index (package search). When it has a
	// Ready() bool method, /readyz reports which path answers.
	Cars yard.CarLister
	// StoreWait bounds how long a request may wait for the store: for a
	// free pooled connection and for the store's answers. Past it the
	// request's context ends and the answer is 503 with Retry-After, as
	// for any unreachable store (docs/api.md, "The store cannot be
	// reached"). 0 waits as long as the client does; cmd/yard's default
	// is DefaultStoreWait. The car reads an index (Cars, with a
	// FindCarByID method) answers are left to bound their own reads of
	// the store: cmd/yard gives its index search.WithStoreWait.
	StoreWait time.Duration
	// Events hands the store's new events to streams and to Prefer: wait
	// (docs/events.md); nil answers streams with 503 and ignores waits.
	Events *events.Hub
	// Webhooks checks the URL of a webhook subscription being written
	// against the delivery policy (package webhooks' *Service); nil
	// applies the default policy (https:// to public addresses only).
	Webhooks WebhookChecker
	// Lists bounds the car lists and searches this process computes at
	// once, and shares the waiting among client addresses in turn
	// (docs/operations.md, "Fair shares"); nil takes a gate with
	// fairgate's defaults.
	Lists *fairgate.Gate
	// Backups is the store's backups directory behind /v1/backups
	// (backups.go; cmd/yard gives *store.BackupDir over DATA/backups); nil
	// serves those endpoints as 503.
	Backups Backups
	// Tracing, when set, traces every request (trace.go): a span named by
	// its route, the child of the request's traceparent, with the store's
	// and the car search's spans below it. nil traces nothing and costs
	// nothing.
	Tracing trace.TracerProvider
}

// Server serves the yard API. Build it with New.
type Server struct {
	// deps are the server's collaborators, fixed by New; nothing outside
	// the package can change them.
	deps Deps
	// db is deps.DB as each group of endpoints sees it.
	db stores
	// streams counts the HTTP/1.1 event streams that left net/http
	// (streamEvents), for WaitStreams.
	streams sync.WaitGroup
	// basic is the chain's Basic scheme, or nil.
	basic *auth.Basic

	mux *http.ServeMux
	// xmlPaths holds, without their methods, the patterns of the routes
	// that have an XML representation (handleXML, problemXML).
	xmlPaths *http.ServeMux
	routes   []route
	// literals maps each path a route names without a wildcard to its
	// routes' methods: a wildcard route never answers such a path for
	// another method (/cars/search is not the car "search"), literalRoute.
	literals map[string][]string
	// indexReads holds the patterns of handleIndexRead's routes when
	// there is an index (serve arms no store wait for them).
	indexReads map[string]bool
	metrics    *metrics
	// openapi builds the OpenAPI document once, on first use.
	openapi func() ([]byte, error)
	// outage is set while the store cannot be reached, and storeDown
	// wakes the store watcher when it begins (outage.go).
	outage    outage.Tracker
	storeDown chan struct{}
	// pages is the pages for people (pages.go), built from Kit; nil
	// without a Kit.
	pages *pages.Pages
	// console is the console for people (package console) over this
	// API; nil without a Kit.
	console *console.Console
	// tracer starts request spans; nil without Deps.Tracing.
	tracer trace.Tracer
	// queryVars holds the query variables of the chain's schemes
	// (grammarQuery), asked of the chain once, by New.
	queryVars *queryVarSet
}

type route struct {
	Method, Pattern string
}

// New returns a server over its collaborators with its routes registered.
func New(d Deps) *Server {
	d.BaseURL = strings.TrimRight(d.BaseURL, "/")
	d.Auth = cmp.Or(d.Auth, &auth.Chain{})
	d.Logger = cmp.Or(d.Logger, slog.New(slog.DiscardHandler))
	d.Registry = cmp.Or(d.Registry, prometheus.NewRegistry())
	d.Version = cmp.Or(d.Version, "dev")
	d.Lists = cmp.Or(d.Lists, fairgate.New(fairgate.Config{}))
	d.Webhooks = cmp.Or[WebhookChecker](d.Webhooks, webhooks.PolicyChecker{}) // the default policy
	s := &Server{deps: d, basic: d.Auth.Basic(), mux: http.NewServeMux(), xmlPaths: http.NewServeMux(), literals: map[string][]string{},
		indexReads: map[string]bool{}, storeDown: make(chan struct{}, 1), queryVars: newQueryVarSet(d.Auth.QueryVars()),
		db: stores{dogs: d.DB, barks: d.DB, cars: d.DB, events: d.DB, openid: d.DB, ops: d.DB, outage: d.DB, orders: d.DB, people: d.DB, webhooks: d.DB}}
	s.metrics = newMetrics(s.deps.Registry)
	s.openapi = sync.OnceValues(s.buildOpenAPI)
	registerGateMetrics(s.deps.Registry, "yard_car_lists", "car lists and searches", s.deps.Lists)
	if s.deps.Tracing != nil {
		s.tracer = s.deps.Tracing.Tracer(tracing.Scope)
	}
	if s.deps.Kit != nil {
		s.pages = pages.New(s.deps.Kit, s.deps.BaseURL, s.deps.Logger)
		s.console = console.New(console.Config{API: s.Handler(), Pages: s.pages, BaseURL: s.deps.BaseURL, Logger: s.deps.Logger})
	}
	s.registerRoutes()
	return s
}

// handleXML is handle for a route whose resource has an XML
// representation: its errors are problem+xml when the request sent or
// prefers XML (problemXML), whatever the method or the failure. Every
// route of such a pattern is registered with handleXML.
func (s *Server) handleXML(method, pattern string, h http.HandlerFunc) {
	if !slices.ContainsFunc(s.routes, func(r route) bool { return r.Pattern == pattern }) {
		s.xmlPaths.HandleFunc(pattern, http.NotFound) // once per pattern
	}
	s.handle(method, pattern, h)
}

// handle registers an endpoint; the empty method is every method.
func (s *Server) handle(method, pattern string, h http.HandlerFunc) {
	s.routes = append(s.routes, route{Method: method, Pattern: pattern})
	if path := strings.TrimSuffix(pattern, "{$}"); method != "" && !strings.Contains(path, "{") {
		s.literals[path] = append(s.literals[path], method)
	}
	s.mux.HandleFunc(muxPattern(method, pattern), h)
}

// muxPattern is the ServeMux pattern of a route: "METHOD /path", or the
// path alone for every method.
func muxPattern(method, pattern string) string {
	return strings.TrimPrefix(method+" "+pattern, " ")
}

// Handler returns the server's root handler with its middleware.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

type ctxKey int

const routeKey ctxKey = iota

// routeInfo is filled in as a request is routed, for logs and metrics.
type routeInfo struct {
	pattern string
	// base is the request's context before the store wait's deadline
	// (streamContext).
	base context.Context
}

// The values of the headers every answer carries, shared by all answers
// (an allocation each a request less; nothing changes a value in place,
// and an Add appends to a copy since each is at its capacity).
var (
	hstsValue    = []string{"max-age=63072000; includeSubDomains"}
	nosniffValue = []string{"nosniff"}
	jsonValue    = []string{"application/json"}
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := RequestID(r)
	hdr := w.Header()
	hdr["X-Request-Id"] = []string{id}
	if r.TLS != nil {
		hdr["Strict-Transport-Security"] = hstsValue
	}
	hdr["X-Content-Type-Options"] = nosniffValue
	base, span := s.startSpan(r) // nil without tracing (trace.go)
	info := &routeInfo{base: base}
	ctx := context.WithValue(base, routeKey, info)
	r = r.WithContext(ctx)
	sw := &statusWriter{ResponseWriter: w, status: 200}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.deps.Logger.Error("panic", slog.String("request_id", id), slog.Any("panic", v))
			if !sw.wrote {
				s.error(sw, r, yard.Errorf(yard.EINTERNAL, "panic"))
			}
		}
		s.observe(r, info.pattern, sw.status, time.Since(start), id)
		if span != nil {
			endSpan(span, r, info.pattern, sw.status)
		}
	}()

	if len(r.TransferEncoding) > 0 || !r.ProtoAtLeast(1, 1) {
		// RFC 9112 §6.1: a request framed by Transfer-Encoding may also
		// have carried a Content-Length (which Go's server drops), and an
		// HTTP/1.0 one's Transfer-Encoding is ignored; the connection
		// closes after the answer, so nothing sent behind the request on
		// it is read as a request (docs/operations.md, "Transport").
		sw.Header().Set("Connection", "close")
	}
	if r.ContentLength > MaxBodyBytes {
		lingerHTTP2(sw, r)
		s.error(sw, r, yard.Errorf(yard.ETOOLARGE, "The request body is larger than %d bytes.", MaxBodyBytes))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(sw, r.Body, MaxBodyBytes)
	}
	if err := auth.SingleAuthorization(r); err != nil {
		// Before routing: public and sign-in endpoints too (docs/auth.md).
		s.error(sw, r, err)
		return
	}
	if r.Method == http.MethodOptions && r.RequestURI == "*" {
		// RFC 9110 §9.3.7: the server as a whole; the methods some
		// endpoint takes. (Its server must leave the request to this
		// handler: http.Server.DisableGeneralOptionsHandler.)
		sw.Header().Set("Allow", "DELETE, GET, HEAD, PATCH, POST, PUT, OPTIONS")
		sw.WriteHeader(http.StatusNoContent)
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern == "" || s.literalRoute(r, pattern) != nil {
		s.unrouted(sw, r, h)
		return
	}
	info.pattern = pattern
	if !s.indexReads[pattern] {
		// The car reads the index answers from memory arm the store wait
		// only when they reach the store (search.WithStoreWait,
		// publicRead): a timer a request was a twentieth of such a read's
		// CPU (docs/benchmark-journal.md).
		var cancel context.CancelFunc
		r, cancel = s.withStoreWait(r)
		defer cancel()
	}
	s.mux.ServeHTTP(&muxRedirects{statusWriter: sw, s: s, r: r}, r)
}

// withStoreWait bounds the request's wait for the store by Deps.StoreWait,
// unless its context already has a deadline: a request that waits this
// long (every pooled connection busy, or a store that does not answer)
// ends with 503 rather than holding its client until the write time-out.
func (s *Server) withStoreWait(r *http.Request) (*http.Request, context.CancelFunc) {
	if _, ok := r.Context().Deadline(); ok || s.deps.StoreWait <= 0 {
		return r, func() {}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.deps.StoreWait)
	return r.WithContext(ctx), cancel
}

// handleIndexRead registers a public car read that the index (Deps.Cars)
// answers from memory: the store wait is left to the index and, for a
// request that presents credentials, to publicRead (serve).
func (s *Server) handleIndexRead(pattern string, h http.HandlerFunc) {
	s.handle("GET", pattern, s.publicRead(h))
	if _, ok := s.deps.Cars.(carFinder); ok {
		s.indexReads["GET "+pattern] = true
	}
}

// url returns the absolute URL of a path under the base URL.
func (s *Server) url(path string) string { return s.deps.BaseURL + path }

// authenticated wraps a handler that needs a principal: it runs the
// authentication chain, answers 401 when the request has no credentials or
// wrong ones, and puts the principal in the request context.
func (s *Server) authenticated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.deps.Auth.Authenticate(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if p == nil {
			s.error(w, r, yard.Errorf(yard.EUNAUTHORIZED, "This resource needs credentials."))
			return
		}
		h(w, r.WithContext(yard.NewContextWithPrincipal(r.Context(), p)))
	}
}

// publicRead wraps a public read. One that presents credentials (an
// Authorization header, or credentials in the query) has them checked as
// everywhere else: wrong ones are 401, never ignored (docs/auth.md, "Which
// credentials count"); right ones put the principal in the context. A
// session cookie, which a browser sends with every request, is not looked
// at here. Without credentials nothing is checked.
func (s *Server) publicRead(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" && s.grammarQuery(r) == r.URL.RawQuery {
			h(w, r)
			return
		}
		// An index read (handleIndexRead) has no store wait yet, and
		// checking credentials may reach the store.
		r, cancel := s.withStoreWait(r)
		defer cancel()
		p, err := s.deps.Auth.Authenticate(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if p != nil {
			r = r.WithContext(yard.NewContextWithPrincipal(r.Context(), p))
		}
		h(w, r)
	}
}

// loaded wraps a handler that needs something before it starts: load
// finds it for the request (the resource of the path, a collaborator the
// server may run without, a parsed query) or refuses (404, 403, 503,
// 400), then h serves the request with it.
func loaded[T any](s *Server, load func(*http.Request) (T, error), h func(http.ResponseWriter, *http.Request, T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := load(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		h(w, r, v)
	}
}

// adminOnly wraps a handler that needs an administrator.
func (s *Server) adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return s.authenticated(func(w http.ResponseWriter, r *http.Request) {
		if !yard.PrincipalFromContext(r.Context()).IsAdmin() {
			s.error(w, r, yard.Errorf(yard.EFORBIDDEN, "Only administrators may do this."))
			return
		}
		h(w, r)
	})
}

// Before it answers an HTTP/2 request whose declared body is over the
// limit (413), the server reads and drops what the client is still sending,
// up to lingerBytes or for lingerTime, as nginx's lingering close does.
// A client that gets an error in the middle of its upload may stop and
// drop the answer: curl over HTTP/2 does, and then shows a 413 without
// its problem body. Over HTTP/1.1 the answer is written first and the
// connection closes after it (net/http), which clients read whole.
const (
	lingerBytes = 4 << 20
	lingerTime  = time.Second
)

func lingerHTTP2(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, r.Body, lingerBytes)
}
