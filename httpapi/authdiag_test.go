package httpapi_test

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// oauthParamsReq is a request signed as an OAuth 1.0a consumer with its
// protocol parameters in the form body or the query (RFC 5849 §3.5.2,
// §3.5.3), by the in-repo signer (internal/sigbase) as a cross-check: the
// third-party clients of these modes are requests-oauthlib's BODY and
// QUERY signature types.
type oauthParamsReq struct {
	method, path       string
	query, form, extra [][2]string
	place              string // "body" or "query"
	token, tokenSecret string
	consumerSecret     string // a wrong one, to be refused
}

func encodeOAuthPairs(pairs [][2]string) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = sigbase.OAuthEncode(p[0]) + "=" + sigbase.OAuthEncode(p[1])
	}
	return strings.Join(parts, "&")
}

// signParams returns the request and the base string the client signed.
func (e *oauthEnv) signParams(t *testing.T, o oauthParamsReq) (*http.Request, string) {
	t.Helper()
	cs := e.secret
	if o.consumerSecret != "" {
		cs = o.consumerSecret
	}
	proto := [][2]string{{"oauth_consumer_key", e.key}, {"oauth_nonce", "n" + strconv.FormatInt(time.Now().UnixNano(), 36)},
		{"oauth_signature_method", "HMAC-SHA1"}, {"oauth_timestamp", strconv.FormatInt(e.clock.Now().Unix(), 10)}, {"oauth_version", "1.0"}}
	if o.token != "" {
		proto = append(proto, [2]string{"oauth_token", o.token})
	}
	proto = append(proto, o.extra...)
	u, _ := url.Parse(e.URL + o.path)
	params := slices.Concat(o.query, o.form, proto)
	base := sigbase.OAuthBaseString(o.method, sigbase.OAuthBaseURI(u), params)
	sig, _ := sigbase.OAuthSignature("HMAC-SHA1", o.method, sigbase.OAuthBaseURI(u), params, cs, o.tokenSecret)
	proto = append(proto, [2]string{"oauth_signature", sig})
	query, form := o.query, o.form
	if o.place == "query" {
		query = slices.Concat(query, proto)
	} else {
		form = slices.Concat(form, proto)
	}
	target := e.URL + o.path
	if len(query) > 0 {
		target += "?" + encodeOAuthPairs(query)
	}
	var body io.Reader
	if len(form) > 0 {
		body = strings.NewReader(encodeOAuthPairs(form))
	}
	req, err := http.NewRequest(o.method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(form) > 0 {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, base
}

// problemOf decodes a problem body.
func problemOf(t *testing.T, body string) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem body: %v\n%s", err, body)
	}
	return p
}

// TestOAuthParamsInBodyAndQuery runs the whole OAuth 1.0a flow with the
// protocol parameters in the form body and in the query, through the
// server and its OpenAPI document: the token endpoints, a protected read
// whose query grammar never sees them, a protected POST whose handler
// reads a body without them; two places are a 400 problem, a refused
// signature a 401 problem with the server's base string.
func TestOAuthParamsInBodyAndQuery(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startOAuth(t, db, "")
		for _, place := range []string{"body", "query"} {
			t.Run(place, func(t *testing.T) {
				form := func(req *http.Request) url.Values {
					t.Helper()
					status, _, body := e.send(t, req)
					v, _ := url.ParseQuery(body)
					if status != 200 {
						t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, status, body)
					}
					return v
				}
				req, _ := e.signParams(t, oauthParamsReq{method: "POST", path: "/oauth/request_token", place: place, extra: [][2]string{{"oauth_callback", "oob"}}})
				rt := form(req)
				if rt.Get("oauth_callback_confirmed") != "true" {
					t.Fatalf("request_token: %v", rt)
				}
				res := e.authorize(t, e.browserOfAlice, rt.Get("oauth_token"), true)
				v := res.body[strings.Index(res.body, `<code id="code">`)+len(`<code id="code">`):]
				req, _ = e.signParams(t, oauthParamsReq{method: "POST", path: "/oauth/access_token", place: place,
					token: rt.Get("oauth_token"), tokenSecret: rt.Get("oauth_token_secret"), extra: [][2]string{{"oauth_verifier", v[:strings.Index(v, "<")]}}})
				at := form(req)
				token, secret := at.Get("oauth_token"), at.Get("oauth_token_secret")

				// A protected read; the order list's query grammar gets its
				// filters only.
				req, _ = e.signParams(t, oauthParamsReq{method: "GET", path: e.dogURI, place: place, token: token, tokenSecret: secret})
				if status, _, body := e.send(t, req); status != 200 || !strings.Contains(body, `"name":"Rex"`) {
					t.Errorf("GET dog: %d %s", status, body)
				}
				req, _ = e.signParams(t, oauthParamsReq{method: "GET", path: "/orders", query: [][2]string{{"status", "placed"}}, place: place, token: token, tokenSecret: secret})
				if status, _, body := e.send(t, req); status != 200 {
					t.Errorf("GET /orders?status=placed: %d %s", status, body)
				}
				// A POST whose body was only the protocol parameters is a POST
				// without a body for the handler (POST /apikeys takes none).
				req, _ = e.signParams(t, oauthParamsReq{method: "POST", path: "/apikeys", place: place, token: token, tokenSecret: secret})
				if status, _, body := e.send(t, req); status != 201 {
					t.Errorf("POST /apikeys: %d %s", status, body)
				}

				// Two places: 400, naming them.
				req, _ = e.signParams(t, oauthParamsReq{method: "GET", path: e.dogURI, place: place, token: token, tokenSecret: secret})
				header := &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret, Token: token, TokenSecret: secret}
				if err := header.Apply(nil, req); err != nil {
					t.Fatal(err)
				}
				status, _, body := e.send(t, req)
				p := problemOf(t, body)
				if status != 400 || p["oauth_problem"] != "parameter_rejected" || !strings.Contains(p["detail"].(string), "the Authorization header and ") {
					t.Errorf("two places: %d %s", status, body)
				}

				// A wrong secret: 401 with the base string the server computed,
				// which is the client's.
				req, base := e.signParams(t, oauthParamsReq{method: "GET", path: e.dogURI, query: [][2]string{{"q", "a b"}}, place: place,
					token: token, tokenSecret: secret, consumerSecret: "cs_wrong"})
				status, challenge, body := e.send(t, req)
				p = problemOf(t, body)
				if status != 401 || p["oauth_problem"] != "signature_invalid" || p["oauth_signature_base_string"] != base ||
					!strings.Contains(challenge, `oauth_problem="signature_invalid"`) {
					t.Errorf("wrong secret: %d %q %s\nwant base string %s", status, challenge, body, base)
				}
				now := e.clock.Now().Unix()
				if p["oauth_acceptable_timestamps"] != strconv.FormatInt(now-300, 10)+"-"+strconv.FormatInt(now+300, 10) {
					t.Errorf("wrong secret: oauth_acceptable_timestamps %v", p["oauth_acceptable_timestamps"])
				}
				// The token endpoints answer the same as a form.
				req, base = e.signParams(t, oauthParamsReq{method: "POST", path: "/oauth/request_token", place: place,
					extra: [][2]string{{"oauth_callback", "oob"}}, consumerSecret: "cs_wrong"})
				status, _, body = e.send(t, req)
				f, _ := url.ParseQuery(body)
				if status != 401 || f.Get("oauth_problem") != "signature_invalid" || f.Get("oauth_signature_base_string") != base || f.Get("oauth_acceptable_timestamps") == "" {
					t.Errorf("request_token with a wrong secret: %d %s", status, body)
				}
			})
		}
	})
}

// TestSignatureDiagnosticsOverHTTP: the 401 problem of a refused signed
// request carries the canonical string and the time window, a refused
// Digest the field; each validated against the OpenAPI document's problem
// schema. With diagnostics off (serve --auth-diagnostics=false) the
// problem is the plain one.
func TestSignatureDiagnosticsOverHTTP(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		checkSignatureDiagnostics(t, db, false)
	})
	t.Run("diagnostics off", func(t *testing.T) {
		checkSignatureDiagnostics(t, storetest.Open(t, store.SQLite), true)
	})
}

func checkSignatureDiagnostics(t *testing.T, db *store.DB, hide bool) {
	e := startAuth(t, db, func(c *auth.Config) { c.HideDiagnostics = hide })
	created := e.Do(apitestReqOf("POST", "/apikeys", "alice"))
	if created.StatusCode != 201 {
		t.Fatalf("create key: %d %s", created.StatusCode, created.Body)
	}
	apiKey := created.Map(t)["apiKey"].(string)
	now := e.clock.Now().Unix()
	req, _ := http.NewRequest("GET", e.URL+e.dogURI+"?timestamp="+itoa(now)+"&apiKey="+apiKey+"&signature="+strings.Repeat("0", 64), nil)
	status, _, body := (&oauthEnv{authEnv: e}).send(t, req)
	p := problemOf(t, body)
	wantCanonical := e.dogURI + "?apikey=" + apiKey + "&timestamp=" + itoa(now)
	if status != 401 {
		t.Fatalf("signed request: %d %s", status, body)
	}
	if !hide && (p["canonicalString"] != wantCanonical || p["acceptableTimestamps"] != itoa(now-300)+"-"+itoa(now+300)) {
		t.Errorf("signed request: %s, want canonicalString %q", body, wantCanonical)
	}
	if hide && (p["canonicalString"] != nil || p["acceptableTimestamps"] != nil) {
		t.Errorf("signed request, diagnostics off: %s", body)
	}

	// Digest: a uri that is not the request's.
	resp := e.raw(t, "GET", e.dogURI, nil)
	var nonce string
	for _, c := range resp.Header.Values("WWW-Authenticate") {
		if strings.HasPrefix(c, "Digest ") {
			nonce = strings.Split(strings.Split(c, `nonce="`)[1], `"`)[0]
		}
	}
	alg := auth.DigestSHA256
	ha1 := auth.HA1(alg, "alice", auth.Realm, pw)
	h := `Digest username="alice", realm="yard", nonce="` + nonce + `", uri="/v1/dogs", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="c1", response="` +
		auth.DigestResponse(alg, ha1, "GET", "/v1/dogs", nonce, "00000001", "c1", "auth") + `"`
	req, _ = http.NewRequest("GET", e.URL+e.dogURI, nil)
	req.Header.Set("Authorization", h)
	status, _, body = (&oauthEnv{authEnv: e}).send(t, req)
	p = problemOf(t, body)
	if status != 401 {
		t.Fatalf("digest: %d %s", status, body)
	}
	if !hide && (p["digestField"] != "uri" || p["requestTarget"] != e.dogURI) {
		t.Errorf("digest uri: %s", body)
	}
	if hide && p["digestField"] != nil {
		t.Errorf("digest uri, diagnostics off: %s", body)
	}
	if strings.Contains(body, ha1) {
		t.Errorf("digest refusal shows HA1: %s", body)
	}
}

func apitestReqOf(method, path, user string) apitestReq {
	return apitestReq{Method: method, Path: path, User: user, Password: pw}
}

// TestDigestStaleNonceWithCurl: curl, a client written by others, answers
// a 401 with stale=true by retrying with the new nonce, without asking
// for the password again. The test server lets the clock run past the
// nonce lifetime between curl's first request (which gets the challenge)
// and its answer to the challenge, so that curl's first answer carries an
// expired nonce.
func TestDigestStaleNonceWithCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl")
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.NonceTTL = time.Minute })
		var mu sync.Mutex
		var seen []string
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{ResponseWriter: w}
			e.API.Handler().ServeHTTP(rec, r)
			stale := strings.Contains(strings.Join(w.Header().Values("WWW-Authenticate"), " "), "stale=true")
			mu.Lock()
			seen = append(seen, strconv.Itoa(rec.status)+map[bool]string{true: " stale", false: ""}[stale])
			mu.Unlock()
			if r.Header.Get("Authorization") == "" {
				e.clock.Advance(2 * time.Minute) // the nonce just sent expires
			}
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		cert := filepath.Join(t.TempDir(), "cert.pem")
		if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(curl, "-sS", "--digest", "-u", "alice:"+pw, "--cacert", cert, "-w", "\n%{http_code}", srv.URL+e.dogURI).CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		if !strings.HasSuffix(string(out), "\n200") || !strings.Contains(string(out), `"name":"Rex"`) {
			t.Errorf("curl got %s", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"401", "401 stale", "200"}; !slices.Equal(seen, want) {
			t.Errorf("the server answered %q, want %q (challenge, stale=true, success)", seen, want)
		}
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return r.ResponseWriter.Write(b)
}
