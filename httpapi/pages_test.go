package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/pages"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// browser is an HTTP client with a cookie jar that validates every
// response against the OpenAPI document and follows no redirects.
func browser(t *testing.T, env *apitest.Env) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := *env.Client
	c.Jar = jar
	return &c
}

type page struct {
	status int
	header http.Header
	body   string
}

func getPage(t *testing.T, c *http.Client, u string, header map[string]string) page {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return doPage(t, c, req)
}

func postForm(t *testing.T, c *http.Client, u string, form url.Values, header map[string]string) page {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return doPage(t, c, req)
}

func doPage(t *testing.T, c *http.Client, req *http.Request) page {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, resp.Header, string(b)}
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrfOf returns the CSRF token of the first form of a page.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf_token in page:\n%s", body)
	}
	return m[1]
}

// wantPageHeaders checks the security headers every page carries.
func wantPageHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Errorf("%s: Content-Security-Policy %q allows scripts", what, csp)
	}
	if got := h.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("%s: X-Frame-Options = %q, want DENY", what, got)
	}
	if got := h.Get("Cache-Control"); got != "no-store" {
		t.Errorf("%s: Cache-Control = %q, want no-store", what, got)
	}
}

func TestSignInPage(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(3, nil) })
		ctx := context.Background()
		_ = ctx

		t.Run("form", func(t *testing.T) {
			b := browser(t, e.Env)
			p := getPage(t, b, e.URL+"/signin?next=/v1/dogs", nil)
			if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
				t.Fatalf("GET /signin: got %d %s", p.status, p.header.Get("Content-Type"))
			}
			wantPageHeaders(t, "GET /signin", p.header)
			if !strings.Contains(p.header.Get("Set-Cookie"), pages.CSRFCookie+"=") || !strings.Contains(p.header.Get("Set-Cookie"), "Secure") {
				t.Errorf("Set-Cookie = %q, want a secure %s", p.header.Get("Set-Cookie"), pages.CSRFCookie)
			}
			for _, want := range []string{`name="username"`, `name="password"`, `value="/v1/dogs"`, `href="/pages/style.css"`} {
				if !strings.Contains(p.body, want) {
					t.Errorf("form lacks %s", want)
				}
			}
			if strings.Contains(p.body, "<script") {
				t.Error("the page has a script")
			}
		})

		t.Run("sign in and come back", func(t *testing.T) {
			b := browser(t, e.Env)
			tok := csrfOf(t, getPage(t, b, e.URL+"/signin?next=/v1/dogs", nil).body)
			p := postForm(t, b, e.URL+"/signin", url.Values{"username": {"alice"}, "password": {pw}, "next": {"/v1/dogs?max=1"}, "csrf_token": {tok}}, nil)
			if p.status != 303 || p.header.Get("Location") != e.URL+"/v1/dogs?max=1" {
				t.Fatalf("POST /signin: got %d Location %q, want 303 to %s", p.status, p.header.Get("Location"), e.URL+"/v1/dogs?max=1")
			}
			if !strings.Contains(p.header.Get("Set-Cookie"), auth.SessionCookie+"=") {
				t.Fatalf("no session cookie: %q", p.header.Get("Set-Cookie"))
			}
			// The cookie session is the one of POST /sessions: it reads dogs.
			if r := getPage(t, b, e.URL+"/v1/dogs", nil); r.status != 200 || !strings.Contains(r.body, "Rex") {
				t.Errorf("GET /v1/dogs with the session: got %d %s", r.status, r.body)
			}
		})

		t.Run("next must be local", func(t *testing.T) {
			for _, next := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"} {
				b := browser(t, e.Env)
				tok := csrfOf(t, getPage(t, b, e.URL+"/signin", nil).body)
				p := postForm(t, b, e.URL+"/signin", url.Values{"username": {"alice"}, "password": {pw}, "next": {next}, "csrf_token": {tok}}, nil)
				if p.status != 200 || p.header.Get("Location") != "" || !strings.Contains(p.body, "signed in as alice") {
					t.Errorf("next %q: got %d Location %q, want 200 and no redirect", next, p.status, p.header.Get("Location"))
				}
			}
		})

		t.Run("refusals", func(t *testing.T) {
			b := browser(t, e.Env)
			tok := csrfOf(t, getPage(t, b, e.URL+"/signin", nil).body)
			good := url.Values{"username": {"bob"}, "password": {pw}, "csrf_token": {tok}}
			for _, tc := range []struct {
				name   string
				form   url.Values
				header map[string]string
				want   int
			}{
				{"no csrf token", url.Values{"username": {"bob"}, "password": {pw}}, nil, 403},
				{"wrong csrf token", url.Values{"username": {"bob"}, "password": {pw}, "csrf_token": {strings.Repeat("A", 43)}}, nil, 403},
				{"cross-site post", good, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
				{"other origin", good, map[string]string{"Origin": "https://evil.example"}, 403},
			} {
				p := postForm(t, b, e.URL+"/signin", tc.form, tc.header)
				if p.status != tc.want {
					t.Errorf("%s: got %d, want %d", tc.name, p.status, tc.want)
				}
				if strings.Contains(p.header.Get("Set-Cookie"), auth.SessionCookie) {
					t.Errorf("%s: a session cookie was set", tc.name)
				}
				wantPageHeaders(t, tc.name, p.header)
			}
			// The same form posted by a browser without the CSRF cookie.
			fresh := browser(t, e.Env)
			if p := postForm(t, fresh, e.URL+"/signin", good, nil); p.status != 403 {
				t.Errorf("no CSRF cookie: got %d, want 403", p.status)
			}
		})

		t.Run("wrong password, then the login rate limit", func(t *testing.T) {
			b := browser(t, e.Env)
			tok := csrfOf(t, getPage(t, b, e.URL+"/signin", nil).body)
			evil := `<b onmouseover="x">carol</b>`
			p := postForm(t, b, e.URL+"/signin", url.Values{"username": {evil}, "password": {"nope"}, "csrf_token": {tok}}, nil)
			if p.status != 401 || !strings.Contains(p.body, "wrong") {
				t.Fatalf("wrong password: got %d", p.status)
			}
			if strings.Contains(p.body, "<b onmouseover") || !strings.Contains(p.body, "&lt;b onmouseover=") {
				t.Errorf("the user name is not escaped:\n%s", p.body)
			}
			for range 3 {
				p = postForm(t, b, e.URL+"/signin", url.Values{"username": {"alice"}, "password": {"nope"}, "csrf_token": {tok}}, nil)
			}
			// Past the limit even the right password is refused (Kit.Login).
			p = postForm(t, b, e.URL+"/signin", url.Values{"username": {"alice"}, "password": {pw}, "csrf_token": {tok}}, nil)
			if p.status != 429 || p.header.Get("Retry-After") == "" {
				t.Fatalf("past the limit: got %d Retry-After %q, want 429 with Retry-After", p.status, p.header.Get("Retry-After"))
			}
			if strings.Contains(p.header.Get("Set-Cookie"), auth.SessionCookie) {
				t.Error("a session cookie was set past the limit")
			}
		})

		t.Run("stylesheet", func(t *testing.T) {
			p := getPage(t, e.Client, e.URL+pages.StylePath, nil)
			if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/css") || !strings.Contains(p.body, ".card") {
				t.Fatalf("style: got %d %s", p.status, p.header.Get("Content-Type"))
			}
			if q := getPage(t, e.Client, e.URL+pages.StylePath, map[string]string{"If-None-Match": p.header.Get("ETag")}); q.status != 304 {
				t.Errorf("If-None-Match: got %d, want 304", q.status)
			}
		})
	})
}
