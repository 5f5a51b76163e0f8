package pages

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/oauth/authorize?oauth_token=abc", "/oauth/authorize?oauth_token=abc"},
		{"/", "/"},
		{"", ""},
		{"oauth/authorize", ""},
		{"https://evil.example/", ""},
		{"//evil.example/x", ""},
		{"/\\evil.example", ""},
		{"/a b", ""},
		{"/a\nb", ""},
		{"javascript:alert(1)", ""},
	} {
		if got := LocalPath(tc.in); got != tc.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// serve runs h behind Protect over TLS and returns the GET response.
func serve(t *testing.T, h http.HandlerFunc) (*http.Response, string) {
	t.Helper()
	p := New(nil, "https://yard.example", nil)
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "https://yard.example/x", nil)
	r.TLS = &tls.ConnectionState{}
	p.Protect(h).ServeHTTP(w, r)
	return w.Result(), w.Body.String()
}

func TestConsentEscapesAndAllowsTheCallback(t *testing.T) {
	p := New(nil, "https://yard.example", nil)
	resp, body := serve(t, func(w http.ResponseWriter, r *http.Request) {
		p.Consent(w, r, Consent{
			Party: `<script>alert("x")</script>Photos`, Question: "wants to act for you.", User: `al"ice`,
			Action: "/oauth/authorize", Hidden: []Field{{"oauth_token", `t"><b>`}},
			Checkboxes: []Checkbox{{Name: "remember", Label: "Remember <me>"}},
			RedirectTo: []string{"https://photos.example:8443/cb?x=1", "not a url"},
		})
	})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, bad := range []string{"<script>", `t"><b>`, "Remember <me>", `al"ice`} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", `id="allow"`, `id="deny"`, `name="decision" value="allow"`, `name="remember"`, `name="csrf_token" value="`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "form-action 'self' https://photos.example:8443;") {
		t.Errorf("CSP %q does not allow the callback's origin as a form target", csp)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("framing allowed: %v", resp.Header)
	}
	token := ""
	for _, c := range resp.Cookies() {
		if c.Name == CSRFCookie {
			token = c.Value
			if !c.Secure || !c.HttpOnly {
				t.Errorf("CSRF cookie not Secure/HttpOnly: %+v", c)
			}
		}
	}
	if token == "" || !strings.Contains(body, `name="csrf_token" value="`+token+`"`) {
		t.Errorf("the form's token is not the cookie's %q", token)
	}
}

func TestMessageAndErrorPages(t *testing.T) {
	p := New(nil, "https://yard.example", nil)
	resp, body := serve(t, func(w http.ResponseWriter, r *http.Request) {
		p.Message(w, r, 200, Message{Title: "Your code", Lines: []string{"Type it into <Photos>."}, Code: "a<b"})
	})
	if resp.StatusCode != 200 || !strings.Contains(body, `<code id="code">a&lt;b</code>`) || strings.Contains(body, "<Photos>") {
		t.Errorf("message page: %d\n%s", resp.StatusCode, body)
	}
	resp, body = serve(t, func(w http.ResponseWriter, r *http.Request) {
		p.Error(w, r, 410, "Gone <now>", "The token <x> was used.")
	})
	if resp.StatusCode != 410 || !strings.Contains(body, "Error 410") || strings.Contains(body, "<x>") ||
		resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("error page: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func TestWrongUserPage(t *testing.T) {
	p := New(nil, "https://yard.example", nil)
	resp, body := serve(t, func(w http.ResponseWriter, r *http.Request) {
		p.WrongUser(w, r, WrongUser{
			Party: "https://rp.example/", Wanted: `<b>bob</b>`, WantedDetail: "https://yard.example/openid/id/%3Cb%3E", User: `al"ice`,
			Action: "/openid/confirm", Hidden: []Field{{"openid.return_to", `https://rp.example/back?x="><i>`}},
			RedirectTo: []string{"https://rp.example:8443/back"},
		})
	})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, bad := range []string{"<b>bob", `"><i>`, `al"ice`} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	for _, want := range []string{`id="user">al&#34;ice<`, `id="wanted">&lt;b&gt;bob&lt;/b&gt;<`, `method="post" action="/openid/confirm"`,
		`name="decision" value="switch" class="primary" id="switch">Sign in as someone else<`,
		`name="decision" value="deny" class="secondary" id="cancel">Cancel<`, `name="csrf_token" value="`,
		`name="openid.return_to" value="https://rp.example/back?x=&#34;&gt;&lt;i&gt;"`, "<title>Signed in as someone else · yard</title>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script") {
		t.Error("the page has a script")
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' https://rp.example:8443;") {
		t.Errorf("CSP %q does not allow the cancel redirect to the party", csp)
	}
}

func TestSignInURLAs(t *testing.T) {
	for _, tc := range []struct{ next, user, want string }{
		{"", "", "/signin"},
		{"/openid/login?a=b", "", "/signin?next=%2Fopenid%2Flogin%3Fa%3Db"},
		{"/x", "bob", "/signin?next=%2Fx&username=bob"},
		{"https://evil.example/", "bob", "/signin?username=bob"},
	} {
		if got := SignInURLAs(tc.next, tc.user); got != tc.want {
			t.Errorf("SignInURLAs(%q, %q) = %q, want %q", tc.next, tc.user, got, tc.want)
		}
	}
	// The form fills in the name it is given.
	p := New(nil, "https://yard.example", nil)
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "https://yard.example/signin?next=%2Fx&username=b%22ob", nil)
	r.TLS = &tls.ConnectionState{}
	p.Protect(http.HandlerFunc(p.HandleSignIn)).ServeHTTP(w, r)
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `required value="b&#34;ob">`) || !strings.Contains(body, `autocomplete="current-password" required autofocus>`) {
		t.Errorf("sign-in form with username: %d\n%s", w.Code, body)
	}
	if !strings.Contains(body, `name="next" value="/x"`) {
		t.Errorf("sign-in form lost next:\n%s", body)
	}
}

// TestHandleStyle: the stylesheet with its type, length and tag; 304 for
// its tag; no body to HEAD.
func TestHandleStyle(t *testing.T) {
	p := New(nil, "https://yard.example", nil)
	for _, tc := range []struct {
		method, tag string
		status      int
		body        bool
	}{
		{"GET", "", 200, true},
		{"HEAD", "", 200, false},
		{"GET", styleETag, 304, false},
		{"GET", `"other"`, 200, true},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(tc.method, StylePath, nil)
		if tc.tag != "" {
			r.Header.Set("If-None-Match", tc.tag)
		}
		p.HandleStyle(w, r)
		h := w.Result().Header
		if w.Code != tc.status || h.Get("ETag") != styleETag || h.Get("Content-Type") != "text/css; charset=utf-8" ||
			h.Get("Cache-Control") != "public, max-age=3600" {
			t.Errorf("%s %q: got %d %v, want %d with the stylesheet's headers", tc.method, tc.tag, w.Code, h, tc.status)
		}
		if got := w.Body.Len() > 0; got != tc.body {
			t.Errorf("%s %q: body %v, want %v", tc.method, tc.tag, got, tc.body)
		}
		if tc.status == 200 && h.Get("Content-Length") != strconv.Itoa(len(stylesheet)) {
			t.Errorf("%s %q: Content-Length %q, want %d", tc.method, tc.tag, h.Get("Content-Length"), len(stylesheet))
		}
	}
}
