package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// oauthEnv is an authEnv with an administrator and a registered consumer.
type oauthEnv struct {
	*authEnv
	admin          *client.Client
	key, secret    string
	consumerURI    string
	browserOfAlice *http.Client
}

func startOAuth(t *testing.T, db *store.DB, callback string) *oauthEnv {
	t.Helper()
	e := &oauthEnv{authEnv: startAuth(t, db, nil)}
	e.CreateUser("root", pw, yard.RoleAdmin)
	e.admin = e.client(&client.Basic{Username: "root", Password: pw})
	e.key, e.secret, e.consumerURI = e.register(t, "Photo Printer <Pro>", callback)
	e.browserOfAlice = browser(t, e.Env)
	return e
}

// register creates a consumer as the administrator.
func (e *oauthEnv) register(t *testing.T, name, callback string) (key, secret, uri string) {
	t.Helper()
	body := map[string]any{"name": name}
	if callback != "" {
		body["callbackUrl"] = callback
	}
	resp := e.Do(apitestRequest("POST", "/oauth/consumers", body))
	if resp.StatusCode != 201 {
		t.Fatalf("register consumer: %d %s", resp.StatusCode, resp.Body)
	}
	m := resp.Map(t)
	if resp.Header.Get("Location") != e.URL+"/oauth/consumers/"+m["key"].(string) || m["secret"] == "" || m["name"] != name {
		t.Fatalf("register consumer: Location %q body %v", resp.Header.Get("Location"), m)
	}
	return m["key"].(string), m["secret"].(string), resp.Header.Get("Location")
}

// authorize plays the user in a browser: open the authorisation page,
// sign in as alice if asked, then press Allow or Deny. It returns the
// final response (the redirect to the callback, or the oob page).
func (e *oauthEnv) authorize(t *testing.T, b *http.Client, requestToken string, allow bool) page {
	t.Helper()
	p := getPage(t, b, e.URL+client.OAuthAuthorizePath(requestToken), nil)
	if p.status == 303 {
		loc := p.header.Get("Location")
		if !strings.HasPrefix(loc, e.URL+"/signin?next=") {
			t.Fatalf("authorize redirects to %q, want the sign-in form", loc)
		}
		form := getPage(t, b, loc, nil)
		next := form.body[strings.Index(form.body, `name="next" value="`)+len(`name="next" value="`):]
		next = strings.ReplaceAll(next[:strings.IndexByte(next, '"')], "&amp;", "&")
		s := postForm(t, b, e.URL+"/signin", url.Values{"username": {"alice"}, "password": {pw}, "next": {next}, "csrf_token": {csrfOf(t, form.body)}}, nil)
		if s.status != 303 || s.header.Get("Location") != e.URL+client.OAuthAuthorizePath(requestToken) {
			t.Fatalf("sign in: %d %q", s.status, s.header.Get("Location"))
		}
		p = getPage(t, b, s.header.Get("Location"), nil)
	}
	if p.status != 200 {
		t.Fatalf("authorize page: got %d\n%s", p.status, p.body)
	}
	wantPageHeaders(t, "authorize page", p.header)
	if !strings.Contains(p.body, "Photo Printer &lt;Pro&gt;") || !strings.Contains(p.body, `id="user">alice<`) {
		t.Errorf("the consent page does not name the consumer and the user:\n%s", p.body)
	}
	decision := "deny"
	if allow {
		decision = "allow"
	}
	return postForm(t, b, e.URL+"/oauth/authorize", url.Values{"oauth_token": {requestToken}, "decision": {decision}, "csrf_token": {csrfOf(t, p.body)}}, nil)
}

// flow runs the three legs with callback cb and returns a client signing
// with the access token.
func (e *oauthEnv) flow(t *testing.T, method, cb string) *client.OAuth1 {
	t.Helper()
	ctx := context.Background()
	o := &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret, Method: method}
	anon := e.client(nil)
	rt, rs, err := o.RequestToken(ctx, anon, cb)
	if err != nil {
		t.Fatalf("request token: %v", err)
	}
	res := e.authorize(t, e.browserOfAlice, rt, true)
	var verifier string
	if cb == "oob" {
		if res.status != 200 {
			t.Fatalf("allow (oob): %d", res.status)
		}
		v := res.body[strings.Index(res.body, `<code id="code">`)+len(`<code id="code">`):]
		verifier = v[:strings.Index(v, "<")]
	} else {
		loc, err := url.Parse(res.header.Get("Location"))
		if res.status != 303 || err != nil || !strings.HasPrefix(loc.String(), cb) || loc.Query().Get("oauth_token") != rt {
			t.Fatalf("allow: %d Location %q", res.status, res.header.Get("Location"))
		}
		verifier = loc.Query().Get("oauth_verifier")
	}
	if verifier == "" {
		t.Fatal("no verifier")
	}
	if err := o.AccessToken(ctx, anon, rt, rs, verifier); err != nil {
		t.Fatalf("access token: %v", err)
	}
	return o
}

func apitestRequest(method, path string, body any) apitestReq {
	return apitestReq{Method: method, Path: path, Body: body, User: "root", Password: pw}
}

func TestOAuthConsumers(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startOAuth(t, db, "")
		for _, tc := range []struct {
			name string
			req  apitestReq
			want int
		}{
			{"get", apitestRequest("GET", "/oauth/consumers/"+e.key, nil), 200},
			{"list", apitestRequest("GET", "/oauth/consumers", nil), 200},
			{"no name", apitestRequest("POST", "/oauth/consumers", map[string]any{"callbackUrl": "https://a.example/cb"}), 400},
			{"control character", apitestRequest("POST", "/oauth/consumers", map[string]any{"name": "a\u0007b"}), 400},
			{"bad callback", apitestRequest("POST", "/oauth/consumers", map[string]any{"name": "x", "callbackUrl": "javascript:alert(1)"}), 400},
			{"unknown field", apitestRequest("POST", "/oauth/consumers", map[string]any{"name": "x", "secret": "mine"}), 400},
			{"not an admin", apitestReq{Method: "POST", Path: "/oauth/consumers", Body: map[string]any{"name": "x"}, User: "alice", Password: pw}, 403},
			{"no credentials", apitestReq{Method: "GET", Path: "/oauth/consumers"}, 401},
			{"unknown", apitestRequest("GET", "/oauth/consumers/ck_nope", nil), 404},
		} {
			resp := e.Do(tc.req)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: got %d, want %d: %s", tc.name, resp.StatusCode, tc.want, resp.Body)
			}
			if strings.Contains(string(resp.Body), e.secret) {
				t.Errorf("%s: the consumer secret is shown again", tc.name)
			}
		}
		list := e.Do(apitestRequest("GET", "/oauth/consumers", nil)).Map(t)
		if list["total"].(float64) != 1 {
			t.Errorf("list = %v, want one consumer", list)
		}
		if r := e.Do(apitestRequest("DELETE", "/oauth/consumers/"+e.key, nil)); r.StatusCode != 204 {
			t.Fatalf("delete: %d", r.StatusCode)
		}
		if r := e.Do(apitestRequest("DELETE", "/oauth/consumers/"+e.key, nil)); r.StatusCode != 404 {
			t.Errorf("delete again: %d, want 404", r.StatusCode)
		}
	})
}

func TestOAuthFlow(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startOAuth(t, db, "")
		ctx := context.Background()
		for _, tc := range []struct{ method, cb string }{
			{"HMAC-SHA1", "https://printer.example/back?session=1"},
			{"HMAC-SHA256", "oob"},
			{"PLAINTEXT", "https://printer.example/back"},
		} {
			t.Run(tc.method, func(t *testing.T) {
				o := e.flow(t, tc.method, tc.cb)
				c := e.client(o)
				var dog map[string]any
				for i := range 2 { // fresh nonces each time
					if err := c.Get(ctx, e.dogURI, &dog); err != nil {
						t.Fatalf("signed GET %d: %v", i, err)
					}
				}
				if dog["name"] != "Rex" {
					t.Errorf("dog = %v", dog)
				}
				// The query is signed as RFC 5849 §3.4.1.3 reads it: '&'
				// separates pairs, '+' is a space, names repeat.
				if err := c.Get(ctx, e.dogURI+"?a=b;c&note=x+y%20z&note=%2B&empty=&k%C3%A9=%E2%9C%93", &dog); err != nil {
					t.Fatalf("signed GET with an odd query: %v", err)
				}
				// A signed POST acts as alice: she owns the new dog.
				var created map[string]any
				if err := c.JSON(ctx, "POST", "/v1/dogs?note=signed%20too", map[string]any{"name": "Fido", "email": "fido@example.org"}, &created); err != nil {
					t.Fatalf("signed POST: %v", err)
				}
				if created["owner"] != e.alice.ID {
					t.Errorf("owner = %v, want alice %s", created["owner"], e.alice.ID)
				}
				// Consumers cannot manage delegations in the user's name.
				if err := c.Get(ctx, "/oauth/authorizations", nil); client.StatusOf(err) != 403 {
					t.Errorf("list authorizations as a consumer: %v, want 403", err)
				}
			})
		}
		// alice sees the three applications she allowed.
		var list map[string]any
		if err := e.client(&client.Basic{Username: "alice", Password: pw}).Get(ctx, "/oauth/authorizations", &list); err != nil {
			t.Fatal(err)
		}
		if list["total"].(float64) != 3 || !strings.Contains(string(mustJSON(t, list)), "Photo Printer") {
			t.Errorf("alice's authorizations = %v", list)
		}
		// bob sees none.
		if err := e.client(&client.Basic{Username: "bob", Password: pw}).Get(ctx, "/oauth/authorizations", &list); err != nil || list["total"].(float64) != 0 {
			t.Errorf("bob's authorizations = %v, %v", list, err)
		}
	})
}

func TestOAuthDeny(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startOAuth(t, db, "")
		ctx := context.Background()
		o := &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret}
		anon := e.client(nil)
		rt, rs, err := o.RequestToken(ctx, anon, "https://printer.example/back")
		if err != nil {
			t.Fatal(err)
		}
		res := e.authorize(t, e.browserOfAlice, rt, false)
		loc, _ := url.Parse(res.header.Get("Location"))
		if res.status != 303 || loc.Query().Get("oauth_problem") != "user_refused" || loc.Query().Get("oauth_verifier") != "" {
			t.Fatalf("deny: %d %q", res.status, res.header.Get("Location"))
		}
		if err := o.AccessToken(ctx, anon, rt, rs, "anything"); client.StatusOf(err) != 401 {
			t.Errorf("access token after deny: %v, want 401", err)
		}
		// The page of an answered request is an HTML error.
		if p := getPage(t, e.browserOfAlice, e.URL+client.OAuthAuthorizePath(rt), nil); p.status != 410 || !strings.Contains(p.body, "already answered") {
			t.Errorf("answered request page: %d", p.status)
		}
		// oob: the page says so.
		rt, _, err = o.RequestToken(ctx, anon, "oob")
		if err != nil {
			t.Fatal(err)
		}
		if res := e.authorize(t, e.browserOfAlice, rt, false); res.status != 200 || !strings.Contains(res.body, "denied") {
			t.Errorf("deny (oob): %d", res.status)
		}
	})
}
