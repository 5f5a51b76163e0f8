package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/dghubble/oauth1"

	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/store/storetest"
)

// publicURL is the base URL a serve process started without --base-url
// builds its links and OAuth base strings on (https://localhost:PORT).
func publicURL(s *server) string { return strings.Replace(s.URL, "127.0.0.1", "localhost", 1) }

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// signInAndAllow plays the resource owner with an HTTP client and a cookie
// jar: open the authorisation URL, sign in, press Allow, and return the
// callback URL the server redirects to.
func signInAndAllow(t *testing.T, hc *http.Client, authURL, user, password string) *url.URL {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Transport: hc.Transport, Jar: jar,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Hostname() != "localhost" {
				return http.ErrUseLastResponse // the consumer's callback: stop there
			}
			return nil
		}}
	get := func(u string) (*http.Response, string) {
		resp, err := b.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	post := func(u string, form url.Values) *http.Response {
		resp, err := b.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// Not signed in: the page sends the browser to the sign-in form.
	resp, body := get(authURL)
	if resp.Request.URL.Path != "/signin" || !strings.Contains(body, `name="password"`) {
		t.Fatalf("authorize without a session: landed on %s (%d)", resp.Request.URL, resp.StatusCode)
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the sign-in form")
	}
	next := resp.Request.URL.Query().Get("next")
	resp = post(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/signin", url.Values{"username": {user}, "password": {password}, "next": {next}, "csrf_token": {m[1]}})
	if resp.Request.URL.Path != "/oauth/authorize" {
		t.Fatalf("after signing in: landed on %s (%d)", resp.Request.URL, resp.StatusCode)
	}
	resp, body = get(resp.Request.URL.String())
	if resp.StatusCode != 200 || !strings.Contains(body, "Interop Printer") {
		t.Fatalf("consent page: %d\n%s", resp.StatusCode, body)
	}
	m = csrfField.FindStringSubmatch(body)
	token := resp.Request.URL.Query().Get("oauth_token")
	resp = post(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/oauth/authorize", url.Values{"oauth_token": {token}, "decision": {"allow"}, "csrf_token": {m[1]}})
	if resp.StatusCode != 303 {
		t.Fatalf("allow: got %d, want 303 to the callback", resp.StatusCode)
	}
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return cb
}

// TestOAuthInteropDghubble runs the whole three-legged flow against a real
// serve process over TLS with a client nobody here wrote
// (github.com/dghubble/oauth1), with HMAC-SHA1 and HMAC-SHA256, then signs
// calls with PLAINTEXT by hand.
func TestOAuthInteropDghubble(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startProcess(t, "--data", data)
	base := publicURL(s)
	hc := trusting(t, data)
	ctx := context.Background()
	admin := client.New(base, hc, &client.Basic{Username: "admin", Password: s.Password})
	var consumer map[string]any
	if err := admin.JSON(ctx, "POST", "/oauth/consumers", map[string]any{"name": "Interop Printer", "callbackUrl": "https://printer.example/callback"}, &consumer); err != nil {
		t.Fatal(err)
	}
	key, secret := consumer["key"].(string), consumer["secret"].(string)
	var dog map[string]any
	if err := admin.JSON(ctx, "POST", "/v1/dogs", map[string]any{"name": "Rex", "email": "rex@example.org"}, &dog); err != nil {
		t.Fatal(err)
	}
	dogURL := base + "/v1/dogs/" + dog["id"].(string) + "/"

	var accessToken, accessSecret string
	for _, signer := range []oauth1.Signer{&oauth1.HMACSigner{ConsumerSecret: secret}, &oauth1.HMAC256Signer{ConsumerSecret: secret}} {
		t.Run(signer.Name(), func(t *testing.T) {
			config := &oauth1.Config{
				ConsumerKey: key, ConsumerSecret: secret, CallbackURL: "https://printer.example/callback?app=1",
				Endpoint: oauth1.Endpoint{RequestTokenURL: base + "/oauth/request_token", AuthorizeURL: base + "/oauth/authorize",
					AccessTokenURL: base + "/oauth/access_token"},
				Signer: signer, HTTPClient: hc,
			}
			requestToken, requestSecret, err := config.RequestToken()
			if err != nil {
				t.Fatalf("request token: %v", err)
			}
			authURL, err := config.AuthorizationURL(requestToken)
			if err != nil {
				t.Fatal(err)
			}
			cb := signInAndAllow(t, hc, authURL.String(), "admin", s.Password)
			cbReq, _ := http.NewRequest("GET", cb.String(), nil)
			gotToken, verifier, err := oauth1.ParseAuthorizationCallback(cbReq)
			if err != nil || gotToken != requestToken || cb.Host != "printer.example" || cb.Query().Get("app") != "1" {
				t.Fatalf("callback %s: %v", cb, err)
			}
			accessToken, accessSecret, err = config.AccessToken(requestToken, requestSecret, verifier)
			if err != nil {
				t.Fatalf("access token: %v", err)
			}
			// The request token works once.
			if _, _, err := config.AccessToken(requestToken, requestSecret, verifier); err == nil || !strings.Contains(err.Error(), "401") {
				t.Errorf("second exchange: %v, want a 401", err)
			}

			api := config.Client(context.WithValue(ctx, oauth1.HTTPClient, hc), oauth1.NewToken(accessToken, accessSecret))
			for i := range 2 {
				resp, err := api.Get(dogURL + "?fields=all&i=" + string(rune('0'+i)))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(b), "Rex") {
					t.Fatalf("signed GET %d: %d %s", i, resp.StatusCode, b)
				}
			}
			resp, err := api.Post(base+"/v1/dogs", "application/json", strings.NewReader(`{"name":"Fido","email":"fido@example.org"}`))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				t.Fatalf("signed POST: %d %s", resp.StatusCode, b)
			}
		})
	}

	// PLAINTEXT by hand (RFC 5849 §3.4.4): over HTTPS the signature is the
	// two secrets; without a timestamp and nonce it needs no clock.
	enc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	plaintext := func(sig string) int {
		req, _ := http.NewRequest("GET", dogURL, nil)
		req.Header.Set("Authorization", `OAuth realm="yard", oauth_consumer_key="`+enc(key)+`", oauth_token="`+enc(accessToken)+
			`", oauth_signature_method="PLAINTEXT", oauth_version="1.0", oauth_signature="`+enc(sig)+`"`)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	wantStatus(t, "PLAINTEXT", plaintext(enc(secret)+"&"+enc(accessSecret)), 200)
	wantStatus(t, "PLAINTEXT with a wrong token secret", plaintext(enc(secret)+"&wrong"), 401)
}

// TestOAuthReplayAcrossProcesses: two serve processes on one PostgreSQL
// behind one public base URL; a signed call accepted by one is a replay at
// the other.
func TestOAuthReplayAcrossProcesses(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewPostgresDatabase(t)
	data := t.TempDir()
	a := startProcess(t, "--data", data, "--db", dsn)
	base := publicURL(a)
	b := startProcess(t, "--data", data, "--db", dsn, "--base-url", base)
	hc := trusting(t, data)
	ctx := context.Background()
	admin := client.New(base, hc, &client.Basic{Username: "admin", Password: a.Password})
	var consumer map[string]any
	if err := admin.JSON(ctx, "POST", "/oauth/consumers", map[string]any{"name": "Interop Printer"}, &consumer); err != nil {
		t.Fatal(err)
	}
	o := &client.OAuth1{ConsumerKey: consumer["key"].(string), ConsumerSecret: consumer["secret"].(string)}
	anon := client.New(base, hc, nil)
	rt, rs, err := o.RequestToken(ctx, anon, "https://printer.example/cb")
	if err != nil {
		t.Fatal(err)
	}
	cb := signInAndAllow(t, hc, base+client.OAuthAuthorizePath(rt), "admin", a.Password)
	// The exchange goes to the other process.
	if err := o.AccessToken(ctx, client.New(publicURL(b), hc, nil), rt, rs, cb.Query().Get("oauth_verifier")); err == nil {
		t.Fatal("a call signed for A's base URL but sent to B's address must not verify")
	}
	// Sent to B's address with A's Host (one public name, two processes).
	atB := &http.Client{Transport: rewriteTo{hc.Transport, b.URL}}
	if err := o.AccessToken(ctx, client.New(base, atB, nil), rt, rs, cb.Query().Get("oauth_verifier")); err != nil {
		t.Fatalf("access token at B: %v", err)
	}
	dogs := func(c *http.Client, h string) int {
		req, _ := http.NewRequest("GET", base+"/v1/dogs", nil)
		req.Header.Set("Authorization", h)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode
	}
	req, _ := http.NewRequest("GET", base+"/v1/dogs", nil)
	h, err := o.Header(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "signed call at A", dogs(hc, h), 200)
	wantStatus(t, "the same call replayed at B", dogs(atB, h), 401)
	h2, _ := o.Header(req, nil)
	wantStatus(t, "a fresh call at B", dogs(atB, h2), 200)
	wantStatus(t, "that call replayed at A", dogs(hc, h2), 401)
}

// rewriteTo sends every request to another address, keeping its Host.
type rewriteTo struct {
	base http.RoundTripper
	addr string // https://127.0.0.1:PORT
}

func (r rewriteTo) RoundTrip(req *http.Request) (*http.Response, error) {
	u, _ := url.Parse(r.addr)
	req = req.Clone(req.Context())
	req.Host = req.URL.Host
	req.URL.Host = u.Host
	return r.base.RoundTrip(req)
}
