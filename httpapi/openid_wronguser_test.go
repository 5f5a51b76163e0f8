package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestOpenIDWrongUser: a checkid_setup for bob's identifier while alice is
// signed in shows the wrong-user page, on both engines. Cancel sends the
// negative assertion (OpenID 2.0 §10.2); "Sign in as someone else" ends
// alice's session and goes through the sign-in form, filled in with bob,
// back to the same request, which bob confirms.
func TestOpenIDWrongUser(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, nil)
		bob := e.URL + "/openid/id/bob"
		forBob := checkidURL(e, "checkid_setup", url.Values{"openid.claimed_id": {bob}, "openid.identity": {bob},
			"openid.ns.sreg": {openid.NSSReg}, "openid.sreg.optional": {"nickname"}})
		b := browser(t, e.Env)
		signIn(t, e, b, checkidURL(e, "checkid_setup", nil)) // alice
		var aliceSession string
		for _, c := range b.Jar.Cookies(mustURL(t, e.URL+"/")) {
			if c.Name == auth.SessionCookie {
				aliceSession = c.Value
			}
		}
		if aliceSession == "" {
			t.Fatal("no session cookie after signing in")
		}

		wrongUser := func() url.Values {
			t.Helper()
			p := getPage(t, b, forBob, nil)
			if p.header.Get("Location") != "" {
				t.Fatalf("checkid_setup for bob signed in as alice redirects to %s", p.header.Get("Location"))
			}
			for _, want := range []string{`id="user">alice<`, `id="wanted">bob<`, "(" + bob + ")", `id="party">https://*.example.org/<`,
				`name="decision" value="switch"`, `name="decision" value="deny"`} {
				if !strings.Contains(p.body, want) {
					t.Errorf("the wrong-user page lacks %q:\n%s", want, p.body)
				}
			}
			// confirmForm checks the status, the security headers, the
			// form's action and that the cancel redirect is allowed.
			return confirmForm(t, p)
		}
		form := wrongUser()
		if form.Get("openid.identity") != bob || form.Get("openid.return_to") != rpReturn || form.Get("csrf_token") == "" {
			t.Fatalf("the wrong-user form does not carry the request: %v", form)
		}

		// Without the CSRF token nothing happens.
		for _, decision := range []string{"deny", "switch"} {
			noToken := clone2(form)
			noToken.Del("csrf_token")
			noToken.Set("decision", decision)
			if p := postForm(t, b, e.URL+"/openid/confirm", noToken, nil); p.status != 403 || p.header.Get("Location") != "" {
				t.Errorf("%s without csrf_token: got %d %q", decision, p.status, p.header.Get("Location"))
			}
		}
		bad := clone2(form)
		bad.Set("decision", "maybe")
		if p := postForm(t, b, e.URL+"/openid/confirm", bad, nil); p.status != 400 || p.header.Get("Location") != "" {
			t.Errorf("decision=maybe: got %d", p.status)
		}

		// Cancel: openid.mode=cancel and nothing else; alice stays signed in.
		deny := clone2(form)
		deny.Set("decision", "deny")
		if m := answer(t, postForm(t, b, e.URL+"/openid/confirm", deny, nil)); m["mode"] != "cancel" || m["ns"] != openid.NS || len(m) != 2 {
			t.Errorf("cancel: %v, want ns and mode=cancel only", m)
		}
		form = wrongUser()

		// Sign in as someone else: alice's session ends, the browser goes
		// to the sign-in form with bob's name and the way back.
		sw := clone2(form)
		sw.Set("decision", "switch")
		p := postForm(t, b, e.URL+"/openid/confirm", sw, nil)
		loc, err := url.Parse(p.header.Get("Location"))
		if p.status != 303 || err != nil || loc.Path != "/signin" || loc.Query().Get("username") != "bob" ||
			!strings.HasPrefix(loc.Query().Get("next"), "/openid/login?") {
			t.Fatalf("switch: got %d Location %q, want 303 to the sign-in form for bob", p.status, p.header.Get("Location"))
		}
		if back, _ := url.Parse(loc.Query().Get("next")); back == nil || back.Query().Get("openid.identity") != bob || back.Query().Get("openid.return_to") != rpReturn {
			t.Errorf("the way back is not the same request: %q", loc.Query().Get("next"))
		}
		expired := false
		for _, c := range (&http.Response{Header: p.header}).Cookies() {
			expired = expired || (c.Name == auth.SessionCookie && c.MaxAge < 0)
		}
		if !expired {
			t.Errorf("switch does not expire the session cookie: %v", p.header["Set-Cookie"])
		}
		wantStatus(t, "alice's session after switch", e.raw(t, "GET", e.dogURI, map[string]string{"Cookie": auth.SessionCookie + "=" + aliceSession}).StatusCode, 401)

		p = getPage(t, b, loc.String(), nil)
		next := regexp.MustCompile(`name="next" value="([^"]+)"`).FindStringSubmatch(p.body)
		if p.status != 200 || next == nil || !strings.Contains(p.body, `name="username" type="text"`) || !strings.Contains(p.body, `value="bob">`) {
			t.Fatalf("sign-in form for bob: %d\n%s", p.status, p.body)
		}
		p = postForm(t, b, e.URL+"/signin", url.Values{"username": {"bob"}, "password": {pw}, "csrf_token": {csrfOf(t, p.body)},
			"next": {htmlUnescape(next[1])}}, nil)
		if p.status != 303 || !strings.HasPrefix(p.header.Get("Location"), e.URL+"/openid/login?") {
			t.Fatalf("sign in as bob: got %d Location %q", p.status, p.header.Get("Location"))
		}
		confirm := getPage(t, b, p.header.Get("Location"), nil)
		if !strings.Contains(confirm.body, `id="user">bob<`) || !strings.Contains(confirm.body, `id="allow"`) {
			t.Fatalf("after signing in as bob, not bob's confirmation page:\n%s", confirm.body)
		}
		allow := confirmForm(t, confirm)
		allow.Set("decision", "allow")
		allow.Set("sreg_nickname", "on")
		m := answer(t, postForm(t, b, e.URL+"/openid/confirm", allow, nil))
		if m["mode"] != "id_res" || m["claimed_id"] != bob || m["identity"] != bob || m["sreg.nickname"] != "bob" {
			t.Fatalf("bob's assertion: %v", m)
		}
		v := m.Values()
		v.Set("openid.mode", "check_authentication")
		if _, r := direct(t, e, v); r["is_valid"] != "true" {
			t.Errorf("check_authentication of bob's assertion: %v", r)
		}

		// Cancel needs no session: it tells the relying party nothing.
		anon := browser(t, e.Env)
		if m := answer(t, postForm(t, anon, e.URL+"/openid/confirm", deny, map[string]string{"Cookie": pagesCSRFCookie(b, e.URL)})); m["mode"] != "cancel" {
			t.Errorf("cancel without a session: %v", m)
		}
		// checkid_immediate for another user still answers setup_needed.
		alice := e.URL + "/openid/id/alice"
		if m := answer(t, getPage(t, b, checkidURL(e, "checkid_immediate", url.Values{"openid.claimed_id": {alice}, "openid.identity": {alice}}), nil)); m["mode"] != "setup_needed" {
			t.Errorf("checkid_immediate for alice signed in as bob: %v", m)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// pagesCSRFCookie is the CSRF cookie of a browser, as a Cookie header.
func pagesCSRFCookie(b *http.Client, base string) string {
	u, _ := url.Parse(base + "/")
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "__Host-yard_csrf" {
			return c.Name + "=" + c.Value
		}
	}
	return ""
}
