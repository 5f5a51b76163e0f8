package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

type apitestReq = apitest.Request

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signed builds a request signed by o, to be sent (and maybe altered) by
// hand.
func (e *oauthEnv) signed(t *testing.T, o *client.OAuth1, method, path string, form url.Values) *http.Request {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err := o.Apply(nil, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// send sends req through the validating client and returns status, the
// WWW-Authenticate values and the body.
func (e *oauthEnv) send(t *testing.T, req *http.Request) (int, string, string) {
	t.Helper()
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.Join(resp.Header.Values("WWW-Authenticate"), " | "), string(b)
}

// dogCount is the number of dogs alice sees.
func (e *oauthEnv) dogCount(t *testing.T) int {
	t.Helper()
	var page map[string]any
	if err := e.client(&client.Basic{Username: "alice", Password: pw}).Get(context.Background(), "/v1/dogs", &page); err != nil {
		t.Fatal(err)
	}
	return int(page["total"].(float64))
}

var problemRE = regexp.MustCompile(`oauth_problem="([a-z_]+)"`)

func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startOAuth(t, db, "")
		ctx := context.Background()
		good := e.flow(t, "HMAC-SHA1", "oob")
		before := e.dogCount(t)

		// Each altered request is refused with its status and oauth_problem,
		// and changes nothing: a POST that would create a dog creates none.
		postDog := func(o *client.OAuth1) *http.Request {
			req := e.signed(t, o, "POST", "/v1/dogs", nil)
			req.Body = io.NopCloser(strings.NewReader(`{"name":"Shadow","email":"shadow@example.org"}`))
			req.Header.Set("Content-Type", "application/json")
			return req
		}
		badSig := postDog(good)
		badSig.Header.Set("Authorization", regexp.MustCompile(`oauth_signature="[^"]+"`).ReplaceAllString(badSig.Header.Get("Authorization"), `oauth_signature="AAAAAAAAAAAAAAAAAAAAAAAAAAA%3D"`))
		wrongSecret := *good
		wrongSecret.ConsumerSecret = "cs_not-the-secret"
		stale := *good
		stale.Now = func() time.Time { return time.Now().Add(-10 * time.Minute) }
		sha512 := postDog(good)
		sha512.Header.Set("Authorization", strings.Replace(sha512.Header.Get("Authorization"), `oauth_signature_method="HMAC-SHA1"`, `oauth_signature_method="RSA-SHA1"`, 1))
		noNonce := postDog(good)
		noNonce.Header.Set("Authorization", regexp.MustCompile(`oauth_nonce="[^"]+", `).ReplaceAllString(noNonce.Header.Get("Authorization"), ""))
		inQuery := e.signed(t, good, "GET", e.dogURI+"?oauth_token=x", nil)
		twice := postDog(good)
		twice.Header.Set("Authorization", twice.Header.Get("Authorization")+`, oauth_nonce="again"`)
		many := postDog(good)
		var extra strings.Builder
		for i := range 40 {
			fmt.Fprintf(&extra, `, x%d="1"`, i)
		}
		many.Header.Set("Authorization", many.Header.Get("Authorization")+extra.String())

		for _, tc := range []struct {
			name        string
			req         *http.Request
			status      int
			problem     string
			challengeOK bool
		}{
			{"bad signature", badSig, 401, "signature_invalid", true},
			{"wrong consumer secret", postDog(&wrongSecret), 401, "signature_invalid", true},
			{"stale timestamp", postDog(&stale), 401, "timestamp_refused", true},
			{"unsupported signature method", sha512, 400, "", false},
			{"no nonce", noNonce, 400, "", false},
			{"protocol parameter in the query", inQuery, 400, "", false},
			{"a parameter twice", twice, 400, "", false},
			{"too many parameters", many, 400, "", false},
		} {
			status, challenge, body := e.send(t, tc.req)
			if status != tc.status {
				t.Errorf("%s: got %d, want %d: %s", tc.name, status, tc.status, body)
			}
			if tc.challengeOK {
				if m := problemRE.FindStringSubmatch(challenge); m == nil || m[1] != tc.problem || !strings.Contains(challenge, `OAuth realm="yard"`) {
					t.Errorf("%s: WWW-Authenticate %q, want OAuth realm=\"yard\" with oauth_problem=%q", tc.name, challenge, tc.problem)
				}
				// A challenge per scheme, OAuth's with its problem in
				// place of the plain one (docs/auth.md).
				if !strings.Contains(challenge, "Basic ") || !strings.Contains(challenge, "SHA-256") || !strings.Contains(challenge, "Bearer") ||
					strings.Count(challenge, "OAuth ") != 1 {
					t.Errorf("%s: WWW-Authenticate %q, want Basic, Digest, Bearer and one OAuth challenge", tc.name, challenge)
				}
			}
			if !strings.Contains(body, `"status":`+strconv.Itoa(tc.status)) {
				t.Errorf("%s: not a problem body: %s", tc.name, body)
			}
		}

		// A replayed request (same nonce and timestamp) is refused; the first
		// one created a dog, the replay none.
		first := postDog(good)
		replay := first.Clone(ctx)
		replay.Body = io.NopCloser(strings.NewReader(`{"name":"Shadow","email":"shadow@example.org"}`))
		if status, _, body := e.send(t, first); status != 201 {
			t.Fatalf("signed POST: %d %s", status, body)
		}
		if status, challenge, _ := e.send(t, replay); status != 401 || !strings.Contains(challenge, `oauth_problem="nonce_used"`) {
			t.Errorf("replay: got %d %q, want 401 nonce_used", status, challenge)
		}
		if got := e.dogCount(t); got != before+1 {
			t.Errorf("dogs: got %d, want %d (only the first signed POST created one)", got, before+1)
		}

		// A signed form body is part of the base string: altering it breaks
		// the signature.
		form := e.signed(t, good, "POST", "/v1/dogs", url.Values{"name": {"Form"}})
		form.Body = io.NopCloser(strings.NewReader("name=Forged"))
		form.ContentLength = int64(len("name=Forged"))
		if status, challenge, _ := e.send(t, form); status != 401 || !strings.Contains(challenge, "signature_invalid") {
			t.Errorf("altered form body: got %d %q, want 401 signature_invalid", status, challenge)
		}

		// Revocation: alice revokes the authorization; its token is refused.
		alice := e.client(&client.Basic{Username: "alice", Password: pw})
		var list map[string]any
		if err := alice.Get(ctx, "/oauth/authorizations", &list); err != nil {
			t.Fatal(err)
		}
		id := list["items"].([]any)[0].(map[string]any)["id"].(string)
		if err := e.client(&client.Basic{Username: "bob", Password: pw}).JSON(ctx, "DELETE", "/oauth/authorizations/"+id, nil, nil); client.StatusOf(err) != 404 {
			t.Errorf("bob revokes alice's authorization: %v, want 404", err)
		}
		if err := e.client(good).Get(ctx, e.dogURI, nil); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
		if err := alice.JSON(ctx, "DELETE", "/oauth/authorizations/"+id, nil, nil); err != nil {
			t.Fatal(err)
		}
		if status, challenge, _ := e.send(t, e.signed(t, good, "GET", e.dogURI, nil)); status != 401 || !strings.Contains(challenge, "token_rejected") {
			t.Errorf("revoked token: got %d %q, want 401 token_rejected", status, challenge)
		}

		// An administrator revokes someone else's.
		second := e.flow(t, "HMAC-SHA256", "oob")
		if err := alice.Get(ctx, "/oauth/authorizations", &list); err != nil {
			t.Fatal(err)
		}
		id = list["items"].([]any)[0].(map[string]any)["id"].(string)
		if err := e.admin.JSON(ctx, "DELETE", "/oauth/authorizations/"+id, nil, nil); err != nil {
			t.Fatalf("admin revokes: %v", err)
		}
		if err := e.client(second).Get(ctx, e.dogURI, nil); client.StatusOf(err) != 401 {
			t.Errorf("token revoked by an admin: %v, want 401", err)
		}

		// Deleting the consumer revokes its tokens and its key.
		third := e.flow(t, "HMAC-SHA1", "oob")
		if err := e.admin.JSON(ctx, "DELETE", "/oauth/consumers/"+e.key, nil, nil); err != nil {
			t.Fatal(err)
		}
		if status, challenge, _ := e.send(t, e.signed(t, third, "GET", e.dogURI, nil)); status != 401 || !strings.Contains(challenge, "consumer_key_unknown") {
			t.Errorf("deleted consumer: got %d %q, want 401 consumer_key_unknown", status, challenge)
		}
		if _, _, err := third.RequestToken(ctx, e.client(nil), "oob"); client.StatusOf(err) != 401 {
			t.Errorf("request token of a deleted consumer: %v, want 401", err)
		}
		if err := alice.Get(ctx, "/oauth/authorizations", &list); err != nil || list["total"].(float64) != 0 {
			t.Errorf("authorizations after the consumer was deleted: %v %v", list, err)
		}
	})
}

func TestOAuthTokenRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startOAuth(t, db, "https://printer.example/back")
		ctx := context.Background()
		anon := e.client(nil)
		o := &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret}

		// The form answer of the token endpoints names the problem.
		formProblem := func(req *http.Request) (int, url.Values) {
			t.Helper()
			req.Header.Set("Accept", "*/*")
			resp, err := e.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			v, _ := url.ParseQuery(string(b))
			if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
				t.Errorf("refusal Content-Type %q", resp.Header.Get("Content-Type"))
			}
			return resp.StatusCode, v
		}
		requestToken := func(cb string) *http.Request {
			req, _ := http.NewRequest("POST", e.URL+"/oauth/request_token", nil)
			req.Header.Set("Authorization", oauthHeader(t, o, req, map[string]string{"oauth_callback": cb}))
			return req
		}

		// The registered callback restricts callbacks; oob is allowed.
		countTokens := func() int {
			var n int
			if err := db.Read().QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_tokens`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		tokens := countTokens()
		for _, tc := range []struct {
			cb      string
			status  int
			problem string
		}{
			{"https://evil.example/back", 400, "parameter_rejected"},
			{"https://printer.example/elsewhere", 400, "parameter_rejected"},
			{"http://printer.example/back", 400, "parameter_rejected"},
			{"", 400, "parameter_absent"},
			{"javascript:alert(1)", 400, "parameter_rejected"},
		} {
			status, v := formProblem(requestToken(tc.cb))
			if status != tc.status || v.Get("oauth_problem") != tc.problem || v.Get("oauth_problem_advice") == "" {
				t.Errorf("callback %q: got %d %v, want %d %s", tc.cb, status, v, tc.status, tc.problem)
			}
		}
		if n := countTokens(); n != tokens {
			t.Errorf("refused request_token calls stored %d tokens", n-tokens)
		}
		// Another scheme, or no signature at all, is a 401 asking for OAuth.
		for _, h := range []string{"", "Basic YWxpY2U6cHc="} {
			req, _ := http.NewRequest("POST", e.URL+"/oauth/request_token", nil)
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			if status, v := formProblem(req); status != 401 || v.Get("oauth_problem") != "parameter_absent" {
				t.Errorf("request_token with Authorization %q: %d %v, want 401 parameter_absent", h, status, v)
			}
		}
		if status, v := formProblem(requestToken("https://printer.example/back?state=9")); status != 200 || v.Get("oauth_callback_confirmed") != "true" {
			t.Errorf("matching callback with another query: %d %v", status, v)
		}

		// Wrong verifier: refused, and the right one still works after.
		rt, rs, err := o.RequestToken(ctx, anon, "oob")
		if err != nil {
			t.Fatal(err)
		}
		res := e.authorize(t, e.browserOfAlice, rt, true)
		code := res.body[strings.Index(res.body, `<code id="code">`)+len(`<code id="code">`):]
		verifier := code[:strings.Index(code, "<")]
		if err := o.AccessToken(ctx, anon, rt, rs, "wrong-verifier"); client.StatusOf(err) != 401 || !strings.Contains(err.Error(), "oauth_verifier") {
			t.Errorf("wrong verifier: %v, want 401", err)
		}
		if err := o.AccessToken(ctx, anon, rt, rs, verifier); err != nil {
			t.Fatalf("right verifier after a wrong one: %v", err)
		}
		// The request token works once.
		again := &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret}
		err = again.AccessToken(ctx, anon, rt, rs, verifier)
		if client.StatusOf(err) != 401 || !strings.Contains(err.Error(), "already exchanged") {
			t.Errorf("request token used twice: %v, want 401", err)
		}
		// As a form: oauth_problem=token_used.
		req, _ := http.NewRequest("POST", e.URL+"/oauth/access_token", nil)
		req.Header.Set("Authorization", oauthHeader(t, &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret, Token: rt, TokenSecret: rs}, req, map[string]string{"oauth_verifier": verifier}))
		if status, v := formProblem(req); status != 401 || v.Get("oauth_problem") != "token_used" {
			t.Errorf("request token used twice (form): %d %v", status, v)
		}
		// A request token is not an access token, nor the reverse.
		if err := e.client(&client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret, Token: rt, TokenSecret: rs}).Get(ctx, e.dogURI, nil); client.StatusOf(err) != 401 {
			t.Errorf("request token on a resource: %v, want 401", err)
		}
		if err := (&client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret}).AccessToken(ctx, anon, o.Token, o.TokenSecret, verifier); client.StatusOf(err) != 401 {
			t.Errorf("access token exchanged as a request token: %v, want 401", err)
		}

		// Not yet authorised: permission_unknown; the pages of unknown and
		// expired tokens are HTML errors.
		rt2, rs2, err := o.RequestToken(ctx, anon, "oob")
		if err != nil {
			t.Fatal(err)
		}
		if err := o.AccessToken(ctx, anon, rt2, rs2, "x"); client.StatusOf(err) != 401 {
			t.Errorf("unauthorised request token: %v, want 401", err)
		}
		if p := getPage(t, e.browserOfAlice, e.URL+client.OAuthAuthorizePath("rt_unknown"), nil); p.status != 404 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
			t.Errorf("unknown request token page: %d %s", p.status, p.header.Get("Content-Type"))
		}
		if p := getPage(t, e.browserOfAlice, e.URL+client.OAuthAuthorizePath(rt), nil); p.status != 410 {
			t.Errorf("used request token page: %d, want 410", p.status)
		}
		e.clock.Advance(11 * time.Minute)
		if p := getPage(t, e.browserOfAlice, e.URL+client.OAuthAuthorizePath(rt2), nil); p.status != 410 || !strings.Contains(p.body, "expired") {
			t.Errorf("expired request token page: %d, want 410", p.status)
		}
		e.clock.Advance(-11 * time.Minute)

		// A cross-site post of the consent form is refused and leaves the
		// request pending: allowing it afterwards still works.
		rt3, rs3, err := o.RequestToken(ctx, anon, "oob")
		if err != nil {
			t.Fatal(err)
		}
		p := getPage(t, e.browserOfAlice, e.URL+client.OAuthAuthorizePath(rt3), nil)
		form := url.Values{"oauth_token": {rt3}, "decision": {"allow"}, "csrf_token": {csrfOf(t, p.body)}}
		if r := postForm(t, e.browserOfAlice, e.URL+"/oauth/authorize", form, map[string]string{"Sec-Fetch-Site": "cross-site"}); r.status != 403 {
			t.Errorf("cross-site consent: %d, want 403", r.status)
		}
		if r := postForm(t, e.browserOfAlice, e.URL+"/oauth/authorize", url.Values{"oauth_token": {rt3}, "decision": {"allow"}}, nil); r.status != 403 {
			t.Errorf("consent without CSRF token: %d, want 403", r.status)
		}
		if err := o.AccessToken(ctx, anon, rt3, rs3, "x"); client.StatusOf(err) != 401 {
			t.Errorf("after refused posts the token must still be unauthorised: %v", err)
		}
		if r := e.authorize(t, e.browserOfAlice, rt3, true); r.status != 200 {
			t.Errorf("allow after refused posts: %d", r.status)
		}

		// No secret, token or verifier reaches the log.
		logs := e.Logs()
		if !strings.Contains(logs, "/oauth/access_token") {
			t.Fatal("the requests were not logged")
		}
		for _, secret := range []string{e.secret, rs, rt, verifier, o.Token, o.TokenSecret, rt3, rs3} {
			if strings.Contains(logs, secret) {
				t.Errorf("the log contains %q", secret)
			}
		}
	})
}

// oauthHeader signs req with o and the extra protocol parameters and
// returns its Authorization header.
func oauthHeader(t *testing.T, o *client.OAuth1, req *http.Request, extra map[string]string) string {
	t.Helper()
	h, err := o.Header(req, extra)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
