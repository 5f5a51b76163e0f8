// Package apitest runs the yard API in a test: a real TLS server on
// 127.0.0.1 over a real store, and a client whose every response is
// validated against the OpenAPI document the server publishes, so the
// document stays true.
package apitest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/store"
)

// Env is a running API over a store.
type Env struct {
	T      testing.TB
	DB     *store.DB
	API    *httpapi.Server
	Server *httptest.Server
	URL    string
	// Client validates every response against the OpenAPI document and
	// does not follow redirects.
	Client *http.Client
	logs   *lockedWriter
}

// Logs returns everything the server has logged so far.
func (e *Env) Logs() string {
	e.logs.mu.Lock()
	defer e.logs.mu.Unlock()
	return e.logs.w.(*bytes.Buffer).String()
}

// Option changes the server's collaborators before the server is built.
type Option func(*httpapi.Deps)

// Start runs the API over db with Basic authentication (no login rate
// limit unless an option sets one) and returns the environment.
func Start(t testing.TB, db *store.DB, opts ...Option) *Env {
	t.Helper()
	registerBodyDecoders()
	logs := &lockedWriter{w: &bytes.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewUnstartedServer(nil)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	basic := auth.NewBasic(db, auth.NewLoginLimiter(0, nil), auth.NewHashGate(0, -1, 0))
	deps := httpapi.Deps{DB: db, Auth: &auth.Chain{Header: []auth.Scheme{basic}},
		BaseURL: srv.URL, Logger: logger, StoreWait: httpapi.DefaultStoreWait}
	for _, o := range opts {
		o(&deps)
	}
	api := httpapi.New(deps)
	srv.Config.Handler = api.Handler()
	watch, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); api.WatchStore(watch) }()
	t.Cleanup(func() { stopWatch(); <-watched })
	doc, err := api.OpenAPI()
	if err != nil {
		t.Fatalf("openapi: %v", err)
	}
	base, err := url.Parse(deps.BaseURL)
	if err != nil {
		t.Fatalf("base URL: %v", err)
	}
	router := mustRouter(t, doc, base)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client.Transport = &validator{base: client.Transport, router: router, server: base, t: t}
	return &Env{T: t, DB: db, API: api, Server: srv, URL: srv.URL, Client: client, logs: logs}
}

// registerBodyDecoders teaches the validator (once per process) the
// bodies it cannot decode by itself: pages, scripts, stylesheets and XRDS
// documents are text; XML bodies decode like their JSON twins (xml.go).
var registerBodyDecoders = sync.OnceFunc(func() {
	for _, ct := range []string{"text/html", "text/javascript", "text/css", "application/xrds+xml", "text/event-stream"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	for _, ct := range []string{"application/xml", "text/xml", "application/problem+xml"} {
		openapi3filter.RegisterBodyDecoder(ct, xmlBodyDecoder)
	}
})

// routerMemo holds the router of each OpenAPI document Start was given,
// made once per test process: loading and validating the document takes
// about a second under the race detector, and the servers of a package
// publish a handful of distinct documents (they differ by the schemes
// installed). A document names its server's base URL, whose port differs
// from server to server: the key, and the document the router is made of,
// name the host memoHost in its place, and the validator routes a request
// for the server's host as one for memoHost. A router is only read once
// made, by any number of requests at once.
var routerMemo sync.Map // the document naming memoHost → func() (routers.Router, error)

// memoHost stands for the server's host in the documents of routerMemo.
const memoHost = "apitest.invalid"

// mustRouter returns the router of doc, the document of the server at
// base, made for memoHost in place of base's host.
func mustRouter(t testing.TB, doc []byte, base *url.URL) routers.Router {
	t.Helper()
	memo := *base
	memo.Host = memoHost
	// The base URL is the server's URL, a JSON string of its own.
	quoted, _ := json.Marshal(base.String())
	memoQuoted, _ := json.Marshal(memo.String())
	doc = bytes.ReplaceAll(doc, quoted, memoQuoted)
	v, _ := routerMemo.LoadOrStore(string(doc), sync.OnceValues(func() (routers.Router, error) { return newRouter(doc) }))
	router, err := v.(func() (routers.Router, error))()
	if err != nil {
		t.Fatal(err)
	}
	return router
}

// newRouter loads and validates doc and routes requests to its operations.
func newRouter(doc []byte) (routers.Router, error) {
	spec, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load openapi: %w", err)
	}
	if err := spec.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi document is invalid: %w", err)
	}
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, fmt.Errorf("openapi router: %w", err)
	}
	return router, nil
}

// validator checks each response against the OpenAPI document.
type validator struct {
	base   http.RoundTripper
	router routers.Router // made for memoHost (mustRouter)
	server *url.URL       // the base URL the document names
	t      testing.TB
}

// findRoute finds the operation of req, a request for the server's host
// being one for memoHost.
func (v *validator) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	if req.URL.Scheme == v.server.Scheme && req.URL.Host == v.server.Host {
		r := *req
		u := *req.URL
		u.Host = memoHost
		r.URL, r.Host = &u, memoHost
		req = &r
	}
	return v.router.FindRoute(req)
}

func (v *validator) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := v.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))

	if req.Method == http.MethodHead || req.Method == http.MethodOptions {
		return resp, nil
	}
	route, params, err := v.findRoute(req)
	if err != nil {
		// Unknown paths and methods are the server's 404, 405 and OPTIONS;
		// a path that is not clean (dot segments, "//") is redirected.
		unclean := path.Clean(req.URL.Path) != strings.TrimSuffix(req.URL.Path, "/") && path.Clean(req.URL.Path) != req.URL.Path
		if resp.StatusCode != 404 && resp.StatusCode != 405 && req.Method != http.MethodOptions && !(unclean && resp.StatusCode == 308) {
			v.t.Errorf("openapi: %s %s answered %d but the document has no such operation", req.Method, req.URL.Path, resp.StatusCode)
		}
		return resp, nil
	}
	vreq := req.Clone(req.Context())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true},
	}
	rvi := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: in.Options,
	}
	undocumentedAlias(rvi, req)
	if err := openapi3filter.ValidateResponse(req.Context(), rvi); err != nil {
		v.t.Errorf("openapi: response to %s %s (%d) does not match the document: %v\nbody: %s",
			req.Method, req.URL.Path, resp.StatusCode, err, truncate(body))
	}
	return resp, nil
}

// undocumentedAlias adjusts the validation of an answer in a media type
// the document leaves out on purpose (docs/api.md, "OpenAPI document"):
// text/xml, validated as the application/xml it is another name for, and
// the short HTML page of a bark's 202 or 303 for a client that asks for
// text/html, whose status and headers are validated but not its body.
func undocumentedAlias(rvi *openapi3filter.ResponseValidationInput, req *http.Request) {
	ct, _, _ := mime.ParseMediaType(rvi.Header.Get("Content-Type"))
	r := rvi.RequestValidationInput.Route.Operation.Responses.Status(rvi.Status)
	if r == nil || r.Value == nil || r.Value.Content[ct] != nil {
		return
	}
	switch {
	case ct == "text/xml" && r.Value.Content["application/xml"] != nil:
		rvi.Header = rvi.Header.Clone()
		rvi.Header.Set("Content-Type", "application/xml")
	case ct == "text/html" && strings.Contains(req.Header.Get("Accept"), "text/html"):
		opts := *rvi.Options
		opts.ExcludeResponseBody = true
		rvi.Options = &opts
	}
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// Request describes one request.
type Request struct {
	Method  string
	Path    string
	Headers map[string]string
	// Body is sent as is when it is a string or []byte, else as JSON.
	Body any
	// User and Password, when set, authenticate with Basic.
	User, Password string
}

// Response is a received response with its body read.
type Response struct {
	*http.Response
	Body []byte
}

// JSON decodes the body into v, failing the test when it cannot.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", truncate(r.Body), err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Do sends a request and reads the response.
func (e *Env) Do(r Request) *Response {
	e.T.Helper()
	var body io.Reader
	switch b := r.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	method := cmp.Or(r.Method, http.MethodGet)
	req, err := http.NewRequest(method, e.URL+r.Path, body)
	if err != nil {
		e.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if r.User != "" {
		req.SetBasicAuth(r.User, r.Password)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, r.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &Response{Response: resp, Body: b}
}

// CreateUser adds a user with a password directly in the store.
func (e *Env) CreateUser(name, password string, roles ...string) *yard.User {
	e.T.Helper()
	if len(roles) == 0 {
		roles = []string{yard.RoleUser}
	}
	h, err := passwordHash(password)
	if err != nil {
		e.T.Fatal(err)
	}
	creds := auth.CredentialsWithHash(name, password, h)
	u := &yard.User{Name: name, Email: name + "@example.org", Phone: "+14155550100", Roles: roles}
	if err := e.DB.CreateUser(context.Background(), u, creds); err != nil {
		e.T.Fatalf("create user %s: %v", name, err)
	}
	return u
}

// hashes holds the argon2id hash of each password CreateUser was given,
// made once per test process: a hash takes about 0.1 s under the race
// detector, and the tests create hundreds of users with a few passwords.
// The hash is a real one (its own salt, the server's parameters), shared
// by the users of one password; signing in still checks it in full.
var hashes sync.Map // password → func() (string, error)

func passwordHash(password string) (string, error) {
	v, _ := hashes.LoadOrStore(password, sync.OnceValues(func() (string, error) { return auth.HashPassword(password) }))
	return v.(func() (string, error))()
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}
