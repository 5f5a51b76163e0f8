package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// The Authorization header of RFC 5849 §1.2's worked example (the
// signature itself is checked in internal/sigbase).
func TestParseOAuthHeaderRFC5849(t *testing.T) {
	h := `OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_token="nnch734d00sl2jdk", oauth_signature_method="HMAC-SHA1", oauth_timestamp="137131202", oauth_nonce="chapoH", oauth_signature="MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D"`
	got, err := ParseOAuthHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[0] != [2]string{"realm", "Photos"} || got[6] != [2]string{"oauth_signature", "MdpQcU8iPSUjWoN/UDMsK2sui9I="} {
		t.Errorf("parsed header = %q", got)
	}
	for _, bad := range []string{`OAuth`, `OAuth a=b`, `OAuth a="b`, `OAuth a="b" c="d"`, `OAuth a="b",`, `Bearer x`} {
		if _, err := ParseOAuthHeader(bad); err == nil {
			t.Errorf("ParseOAuthHeader(%q) accepted", bad)
		}
	}
}

func TestOAuthCallbackAllowed(t *testing.T) {
	for _, tc := range []struct {
		registered, cb string
		want           bool
	}{
		{"", "https://any.example/x", true},
		{"https://p.example/cb", "oob", true},
		{"https://p.example/cb", "https://p.example/cb?state=1", true},
		{"https://p.example/cb", "HTTPS://P.EXAMPLE/cb", true},
		{"https://p.example", "https://p.example/", true},
		{"https://p.example/cb", "https://p.example/cb/x", false},
		{"https://p.example/cb", "http://p.example/cb", false},
		{"https://p.example/cb", "https://p.example:8443/cb", false},
		{"https://p.example/cb", "https://evil.example/cb", false},
	} {
		if got := callbackAllowed(tc.registered, tc.cb); got != tc.want {
			t.Errorf("callbackAllowed(%q, %q) = %v, want %v", tc.registered, tc.cb, got, tc.want)
		}
	}
}

// TestOAuthProtocolParamsInEachPlace: the protocol parameters are
// accepted in each of the three places of RFC 5849 §3.5, at the temporary
// credential request and on a protected endpoint (through the chain); a
// handler then reads its own query and form fields, and a form body's
// protocol parameters are not among them.
func TestOAuthProtocolParamsInEachPlace(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			f := newKitFixture(t, engine, false)
			for _, place := range []string{"header", "body", "query"} {
				t.Run(place, func(t *testing.T) {
					r, _ := f.sign(t, oauthReq{method: "POST", path: "/oauth/request_token", place: place, extra: [][2]string{{"oauth_callback", "oob"}}})
					v, err := f.kit.OAuth1.Verify(r, "")
					if err != nil {
						t.Fatalf("request_token: %v", err)
					}
					if got := v.Params.Value("oauth_callback"); got != "oob" || v.Consumer.Key != f.ck {
						t.Errorf("request_token: oauth_callback %q, consumer %q", got, v.Consumer.Key)
					}

					query := [][2]string{{"color", "red"}, {"note", "a b&c+d"}}
					r, _ = f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", query: query, place: place, token: f.at, tokenSecret: f.ats})
					p, err := f.kit.Chain.Authenticate(r)
					if err != nil || p == nil || p.UserID != f.alice.ID || p.Scheme != "oauth" {
						t.Fatalf("GET: principal %+v, %v; want alice by oauth", p, err)
					}

					form := [][2]string{{"name", "Rex Jr"}, {"note", "tea & cake"}}
					r, _ = f.sign(t, oauthReq{method: "POST", path: "/v1/dogs/x/barks", form: form, place: place, token: f.at, tokenSecret: f.ats})
					if p, err := f.kit.Chain.Authenticate(r); err != nil || p == nil {
						t.Fatalf("POST with a form: %v", err)
					}
					body, _ := io.ReadAll(r.Body)
					if want := encodePairs(form); string(body) != want || r.ContentLength != int64(len(want)) {
						t.Errorf("the handler reads the body %q (Content-Length %d), want %q", body, r.ContentLength, want)
					}
					if fields, err := url.ParseQuery(string(body)); err != nil || fields.Get("note") != "tea & cake" || len(fields) != 2 {
						t.Errorf("form fields = %v, %v", fields, err)
					}

					if place == "body" {
						// A body of protocol parameters only is no body at all for the handler.
						r, _ = f.sign(t, oauthReq{method: "POST", path: "/v1/dogs/x/barks", place: place, token: f.at, tokenSecret: f.ats})
						if _, err := f.kit.Chain.Authenticate(r); err != nil {
							t.Fatal(err)
						}
						if r.Body != http.NoBody || r.ContentLength != 0 {
							t.Errorf("body of protocol parameters only: the handler gets %v, %d bytes", r.Body, r.ContentLength)
						}
					}
				})
			}
		})
	}
}

// TestOAuthProtocolParamsInTwoPlaces: parameters in two places are a 400
// naming both places and the rejected parameters; none at all is a 401.
// OAuth in the query with a signed request's variables is ambiguous (400).
func TestOAuthProtocolParamsInTwoPlaces(t *testing.T) {
	f := newKitFixture(t, store.SQLite, false)
	addQuery := func(r *http.Request, raw string) *http.Request {
		if r.URL.RawQuery != "" {
			raw = "&" + raw
		}
		r.URL.RawQuery += raw
		return r
	}
	sign := func(place string, form [][2]string) *http.Request {
		r, _ := f.sign(t, oauthReq{method: "POST", path: "/oauth/request_token", place: place, form: form, extra: [][2]string{{"oauth_callback", "oob"}}})
		return r
	}
	withBody := func(r *http.Request, body string) *http.Request {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	for _, tc := range []struct {
		name     string
		req      *http.Request
		places   string
		rejected string
	}{
		{"header and query", addQuery(sign("header", nil), "oauth_token=x"), "the Authorization header and the query string", "oauth_token"},
		{"header and body", withBody(sign("header", nil), "a=1&oauth_nonce=x"), "the Authorization header and the form body", "oauth_nonce"},
		{"body and query", addQuery(sign("body", [][2]string{{"a", "1"}}), "oauth_version=1.0&oauth_verifier=v"), "the form body and the query string", "oauth_version&oauth_verifier"},
	} {
		_, err := f.kit.OAuth1.Verify(tc.req, "")
		d := DiagnosticsOf(err)
		if yard.ErrorCode(err) != yard.EINVALID || d == nil || d.OAuthProblem != "parameter_rejected" || d.OAuthParametersRejected != tc.rejected ||
			!strings.Contains(yard.ErrorMessage(err), tc.places) {
			t.Errorf("%s: got %v %+v, want 400 parameter_rejected naming %s and rejecting %s", tc.name, err, d, tc.places, tc.rejected)
		}
	}

	none := httptest.NewRequest("POST", fixtureBase+"/oauth/request_token?a=1", nil)
	if _, err := f.kit.OAuth1.Verify(none, ""); yard.ErrorCode(err) != yard.EUNAUTHORIZED || diagnostics(t, err).OAuthProblem != "parameter_absent" {
		t.Errorf("no protocol parameters: %v, want 401 parameter_absent", err)
	}
	basic := sign("query", nil)
	basic.SetBasicAuth("alice", fixturePassword)
	if _, err := f.kit.OAuth1.Verify(basic, ""); yard.ErrorCode(err) != yard.EUNAUTHORIZED {
		t.Errorf("Basic header with OAuth in the query: %v, want 401 (the header counts first)", err)
	}

	both, _ := f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", query: [][2]string{{"apiKey", f.apiKey}}, place: "query", token: f.at, tokenSecret: f.ats})
	if _, err := f.kit.Chain.Authenticate(both); yard.ErrorCode(err) != yard.EINVALID {
		t.Errorf("OAuth and a signed request's apiKey in one query: %v, want 400", err)
	}
	// A signed request's own variables never look like OAuth.
	signedOnly := httptest.NewRequest("GET", fixtureBase+"/v1/dogs?apiKey=ak_x&timestamp=1&signature=00&oauth_note=1", nil)
	if f.kit.OAuth1.InRequest().Match(signedOnly) {
		t.Error("a signed request without oauth_consumer_key and oauth_signature matched OAuth")
	}
}

// TestOAuthSignatureDiagnostics: a refused signature reports the base
// string the server computed and the timestamps it accepts, never a
// secret; none with PLAINTEXT; none beyond the extension's with
// diagnostics off.
func TestOAuthSignatureDiagnostics(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			f := newKitFixture(t, engine, false)
			window := "1799999700-1800000300"

			// A wrong secret: the base strings agree, the signatures do not.
			r, clientBase := f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", query: [][2]string{{"q", "a b"}}, place: "header",
				token: f.at, tokenSecret: f.ats, consumerSecret: "cs_wrong"})
			_, err := f.kit.Chain.Authenticate(r)
			d := diagnostics(t, err)
			if d.OAuthProblem != "signature_invalid" || d.OAuthSignatureBaseString != clientBase || d.OAuthAcceptableTimestamps != window {
				t.Errorf("wrong secret: got %+v, want signature_invalid with base string %q and %s", d, clientBase, window)
			}
			if strings.Contains(d.OAuthSignatureBaseString, f.cs) || strings.Contains(d.OAuthSignatureBaseString, f.ats) || strings.Contains(d.OAuthSignatureBaseString, "oauth_signature%3D") {
				t.Errorf("the base string shows a secret or the signature: %s", d.OAuthSignatureBaseString)
			}

			// An altered query: the server's base string shows what it saw.
			r, clientBase = f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", query: [][2]string{{"color", "red"}}, place: "query", token: f.at, tokenSecret: f.ats})
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "color=red", "color=blue", 1)
			_, err = f.kit.Chain.Authenticate(r)
			d = diagnostics(t, err)
			if want := strings.Replace(clientBase, "color%3Dred", "color%3Dblue", 1); d.OAuthSignatureBaseString != want || want == clientBase {
				t.Errorf("altered query: base string\n got %s\nwant %s", d.OAuthSignatureBaseString, want)
			}

			// Parameters in the body: the form fields and the protocol
			// parameters are in it, the signature is not.
			r, clientBase = f.sign(t, oauthReq{method: "POST", path: "/oauth/request_token", form: [][2]string{{"x", "1"}}, place: "body",
				extra: [][2]string{{"oauth_callback", "oob"}}, consumerSecret: "cs_wrong"})
			_, err = f.kit.OAuth1.Verify(r, "")
			if d = diagnostics(t, err); d.OAuthSignatureBaseString != clientBase || !strings.HasPrefix(clientBase, "POST&https%3A%2F%2Fyard.example%2Foauth%2Frequest_token&oauth_callback%3Doob%26") {
				t.Errorf("body: base string\n got %s\nwant %s", d.OAuthSignatureBaseString, clientBase)
			}

			// PLAINTEXT signs no base string: none is shown.
			r, _ = f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", place: "header", token: f.at, tokenSecret: f.ats, sigMethod: sigbase.OAuthPlaintext, consumerSecret: "cs_wrong"})
			_, err = f.kit.Chain.Authenticate(r)
			if d = diagnostics(t, err); d.OAuthProblem != "signature_invalid" || d.OAuthSignatureBaseString != "" || d.OAuthAcceptableTimestamps != window {
				t.Errorf("PLAINTEXT: got %+v, want no base string", d)
			}

			// A timestamp out of the window: the accepted ones, and the base string.
			r, clientBase = f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", place: "header", token: f.at, tokenSecret: f.ats})
			f.now = f.now.Add(10 * time.Minute)
			_, err = f.kit.Chain.Authenticate(r)
			if d = diagnostics(t, err); d.OAuthProblem != "timestamp_refused" || d.OAuthAcceptableTimestamps != "1800000300-1800000900" || d.OAuthSignatureBaseString != clientBase {
				t.Errorf("stale timestamp: got %+v", d)
			}
		})
	}

	// Diagnostics off: the plain refusal, and the extension's
	// oauth_acceptable_timestamps of timestamp_refused, as before.
	f := newKitFixture(t, store.SQLite, true)
	r, _ := f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", place: "header", token: f.at, tokenSecret: f.ats, consumerSecret: "cs_wrong"})
	_, err := f.kit.Chain.Authenticate(r)
	if d := diagnostics(t, err); *d != (Diagnostics{OAuthProblem: "signature_invalid"}) {
		t.Errorf("diagnostics off, wrong secret: got %+v, want oauth_problem only", d)
	}
	r, _ = f.sign(t, oauthReq{method: "GET", path: "/v1/dogs", place: "header", token: f.at, tokenSecret: f.ats})
	f.now = f.now.Add(10 * time.Minute)
	_, err = f.kit.Chain.Authenticate(r)
	if d := diagnostics(t, err); *d != (Diagnostics{OAuthProblem: "timestamp_refused", OAuthAcceptableTimestamps: "1800000300-1800000900"}) {
		t.Errorf("diagnostics off, stale timestamp: got %+v", d)
	}
}

// oauthlib finds Debian's python3 with oauthlib (python3-oauthlib), or
// skips the test.
func oauthlib(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import oauthlib.oauth1").Run() == nil {
			return path
		}
	}
	t.Skip("python3 with oauthlib (Debian python3-oauthlib) is not installed")
	return ""
}

// oauthlibSign is oauthlib's Client.sign as requests-oauthlib calls it,
// in one of its signature types (AUTH_HEADER, BODY, QUERY).
const oauthlibSign = `
import json, sys
from oauthlib.oauth1 import Client
a = json.loads(sys.argv[1])
c = Client(a["ck"], client_secret=a["cs"], resource_owner_key=a["token"] or None, resource_owner_secret=a["token_secret"] or None,
           callback_uri=a["callback"] or None, signature_type=a["type"], signature_method=a["method"], timestamp=a["ts"], nonce=a["nonce"])
headers, body = {}, None
if a["form"] is not None:
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    body = a["form"]
uri, headers, body = c.sign(a["uri"], http_method=a["http_method"], body=body, headers=headers)
print(json.dumps({"uri": uri, "headers": dict(headers), "body": body}))
`

// TestOAuthWithOAuthlib: requests signed by oauthlib (the library behind
// requests-oauthlib) in each of its signature types verify: its encoding
// of the query ('+' for a space) and of the body are read as it signs them.
func TestOAuthWithOAuthlib(t *testing.T) {
	py := oauthlib(t)
	f := newKitFixture(t, store.SQLite, false)
	sign := func(typ, method, uri, token, tokenSecret, callback string, form [][2]string) *http.Request {
		t.Helper()
		arg, _ := json.Marshal(map[string]any{"ck": f.ck, "cs": f.cs, "token": token, "token_secret": tokenSecret, "callback": callback,
			"type": typ, "method": "HMAC-SHA1", "ts": strconv.FormatInt(f.now.Unix(), 10), "nonce": "n" + strconv.FormatInt(time.Now().UnixNano(), 36),
			"form": form, "uri": uri, "http_method": method})
		out, err := exec.Command(py, "-c", oauthlibSign, string(arg)).Output()
		if err != nil {
			t.Fatalf("oauthlib: %v", err)
		}
		var signed struct {
			URI     string            `json:"uri"`
			Headers map[string]string `json:"headers"`
			Body    *string           `json:"body"`
		}
		if err := json.Unmarshal(out, &signed); err != nil {
			t.Fatalf("oauthlib said %s: %v", out, err)
		}
		var body io.Reader
		if signed.Body != nil {
			body = strings.NewReader(*signed.Body)
		}
		r := httptest.NewRequest(method, signed.URI, body)
		for k, v := range signed.Headers {
			r.Header.Set(k, v)
		}
		return r
	}
	for _, typ := range []string{"AUTH_HEADER", "BODY", "QUERY"} {
		var form [][2]string
		if typ == "BODY" {
			form = [][2]string{}
		}
		r := sign(typ, "POST", fixtureBase+"/oauth/request_token", "", "", "oob", form)
		if v, err := f.kit.OAuth1.Verify(r, ""); err != nil || v.Params.Value("oauth_callback") != "oob" {
			t.Errorf("%s request_token: %v", typ, err)
		}
		method := "GET"
		if typ == "BODY" {
			method, form = "POST", [][2]string{{"name", "Rex Jr"}, {"note", "tea & cake"}}
		}
		r = sign(typ, method, fixtureBase+"/v1/dogs?color=red&q=a%20b+c&x=%2B", f.at, f.ats, "", form)
		if p, err := f.kit.Chain.Authenticate(r); err != nil || p == nil || p.UserID != f.alice.ID {
			t.Errorf("%s protected call: %+v, %v", typ, p, err)
		}
		if typ == "BODY" {
			if body, _ := io.ReadAll(r.Body); string(body) != "name=Rex+Jr&note=tea+%26+cake" {
				t.Errorf("BODY: the handler reads %q", body)
			}
		}
	}
}
