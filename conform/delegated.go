package conform

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/kvform"
	"github.com/yard-api/yard/internal/sigbase"
)

// jar is a small cookie jar for the pages a browser would see.
type jar map[string]string

func (j jar) take(r *Resp) {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(j, c.Name)
			continue
		}
		j[c.Name] = c.Value
	}
}

func (j jar) opt() opt {
	return func(r *http.Request, _ *reqBody) {
		for n, v := range j {
			r.AddCookie(&http.Cookie{Name: n, Value: v})
		}
	}
}

// browser is a signed-in browser: a session cookie of the owner's.
func (t *T) browser() jar {
	j := jar{}
	_, _, r := t.session()
	j.take(r)
	return j
}

// allow opens the page as the owner's browser and answers its form with
// Allow: the fields, the page's csrf_token and decision=allow, posted to
// action. It wants 303 and returns that answer.
func (t *T) allow(page, action string, fields url.Values) *Resp {
	j := t.browser()
	r := t.Expect(200, "GET", page, j.opt())
	j.take(r)
	fields.Set("csrf_token", csrf(t, r))
	fields.Set("decision", "allow")
	return t.Expect(303, "POST", action, j.opt(), formBody(fields))
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrf(t *T, r *Resp) string {
	m := csrfField.FindStringSubmatch(string(r.Body))
	t.Check(m != nil, "the page has no csrf_token field")
	return m[1]
}

// consumer is an OAuth 1.0a consumer the kit registered.
type consumer struct{ key, secret string }

func (t *T) consumer() consumer {
	r := t.Expect(201, "POST", "/oauth/consumers", basic(t.k.admin), jsonBody(map[string]any{"name": t.k.prefix + "-consumer"}))
	c := consumer{r.Str("key"), r.Str("secret")}
	t.Check(c.key != "" && c.secret != "", "the consumer has no key or secret")
	t.k.created("OAuth consumer", "DELETE", "/oauth/consumers/"+url.PathEscape(c.key), []opt{basic(t.k.admin)})
	return c
}

// oauth signs a request (RFC 5849 §3.4, HMAC-SHA256, header form) with
// a fresh nonce.
func (t *T) oauth(c consumer, method, target, token, tokenSecret string, extra map[string]string, ts time.Time) opt {
	u, err := url.Parse(t.k.abs(target))
	t.Check(err == nil, "bad URL %s", target)
	params := [][2]string{{"oauth_consumer_key", c.key}, {"oauth_nonce", randomHex(8)}, {"oauth_signature_method", "HMAC-SHA256"},
		{"oauth_timestamp", strconv.FormatInt(ts.Unix(), 10)}, {"oauth_version", "1.0"}}
	if token != "" {
		params = append(params, [2]string{"oauth_token", token})
	}
	for k, v := range extra {
		params = append(params, [2]string{k, v})
	}
	q, _ := sigbase.ParseRawQuery(u.RawQuery)
	sig, err := sigbase.OAuthSignature("HMAC-SHA256", method, sigbase.OAuthBaseURI(u), append(slices.Clone(params), q...), c.secret, tokenSecret)
	t.Check(err == nil, "signing: %v", err)
	params = append(params, [2]string{"oauth_signature", sig})
	slices.SortFunc(params, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return header("Authorization", sigbase.OAuthAuthorization("yard", params))
}

// oauthFlow runs the three endpoints and returns the access token.
func (t *T) oauthFlow(c consumer) (token, secret string) {
	r := t.Expect(200, "POST", "/oauth/request_token", t.oauth(c, "POST", "/oauth/request_token", "", "", map[string]string{"oauth_callback": "https://client.example/cb"}, time.Now()))
	f, _ := url.ParseQuery(string(r.Body))
	rt, rs := f.Get("oauth_token"), f.Get("oauth_token_secret")
	t.Check(rt != "" && rs != "" && f.Get("oauth_callback_confirmed") == "true", "request_token answered %q", redact(string(r.Body)))
	a := t.allow("/oauth/authorize?oauth_token="+url.QueryEscape(rt), "/oauth/authorize", url.Values{"oauth_token": {rt}})
	cb, err := url.Parse(a.Header.Get("Location"))
	t.Check(err == nil && cb.Host == "client.example" && cb.Query().Get("oauth_verifier") != "", "Allow redirected to %q, want the callback with oauth_verifier", a.Header.Get("Location"))
	x := t.Expect(200, "POST", "/oauth/access_token", t.oauth(c, "POST", "/oauth/access_token", rt, rs, map[string]string{"oauth_verifier": cb.Query().Get("oauth_verifier")}, time.Now()))
	f, _ = url.ParseQuery(string(x.Body))
	t.Check(f.Get("oauth_token") != "" && f.Get("oauth_token_secret") != "", "access_token answered %q", redact(string(x.Body)))
	return f.Get("oauth_token"), f.Get("oauth_token_secret")
}

func oauth1Checks() []Check {
	const p, doc = "oauth1", "docs/auth.md#oauth-10a-rfc-5849"
	return []Check{
		def(p, "request-token", Must, doc, "POST /oauth/request_token signed HMAC-SHA256 with oauth_callback",
			"200 form: oauth_token, oauth_token_secret, oauth_callback_confirmed=true", func(t *T) {
				c := t.consumer()
				r := t.Expect(200, "POST", "/oauth/request_token", t.oauth(c, "POST", "/oauth/request_token", "", "", map[string]string{"oauth_callback": "oob"}, time.Now()))
				f, _ := url.ParseQuery(string(r.Body))
				t.Check(f.Get("oauth_token") != "" && f.Get("oauth_token_secret") != "" && f.Get("oauth_callback_confirmed") == "true", "answered %q", redact(string(r.Body)))
			}),
		def(p, "flow", Must, doc, "request_token, the authorization page signed in with Allow, access_token, then GET /v1/people/{id} signed with the access token",
			"the callback gets oauth_verifier; the exchange gives an access token; the protected request answers 200", func(t *T) {
				c := t.consumer()
				tok, sec := t.oauthFlow(c)
				t.Expect(200, "GET", t.me(), t.oauth(c, "GET", t.me(), tok, sec, nil, time.Now()))
			}),
		def(p, "unauthorised-token", Must, doc, "POST /oauth/access_token with a request token nobody authorised",
			"401", func(t *T) {
				c := t.consumer()
				r := t.Expect(200, "POST", "/oauth/request_token", t.oauth(c, "POST", "/oauth/request_token", "", "", map[string]string{"oauth_callback": "oob"}, time.Now()))
				f, _ := url.ParseQuery(string(r.Body))
				t.Expect(401, "POST", "/oauth/access_token", t.oauth(c, "POST", "/oauth/access_token", f.Get("oauth_token"), f.Get("oauth_token_secret"), map[string]string{"oauth_verifier": "guess"}, time.Now()))
			}),
		def(p, "nonce-replay", Must, doc, "the same OAuth-signed request (same nonce and timestamp) twice",
			"200, then 401", func(t *T) {
				c := t.consumer()
				tok, sec := t.oauthFlow(c)
				a := t.oauth(c, "GET", t.me(), tok, sec, nil, time.Now())
				t.Expect(200, "GET", t.me(), a)
				t.Expect(401, "GET", t.me(), a)
			}),
		def(p, "bad-signature", Must, doc, "an OAuth request signed with a wrong token secret",
			"401", func(t *T) {
				c := t.consumer()
				tok, _ := t.oauthFlow(c)
				t.Expect(401, "GET", t.me(), t.oauth(c, "GET", t.me(), tok, "wrong", nil, time.Now()))
			}),
		def(p, "old-timestamp", Must, doc, "an OAuth request with a timestamp 1000 s old",
			"401", func(t *T) {
				c := t.consumer()
				tok, sec := t.oauthFlow(c)
				t.Expect(401, "GET", t.me(), t.oauth(c, "GET", t.me(), tok, sec, nil, time.Now().Add(-1000*time.Second)))
			}),
	}
}

const openidNS = "http://specs.openid.net/auth/2.0"

// keyValues reads a provider's answer in key-value form (OpenID 2.0
// §4.1.1); a body not well formed fails the check.
func (t *T) keyValues(r *Resp) map[string]string {
	kv, err := kvform.Parse(r.Body)
	t.Check(err == nil, "the answer is not in key-value form (OpenID 2.0 §4.1.1): %v", err)
	return kv
}

func openidSignIn(rp string) url.Values {
	return url.Values{"openid.ns": {openidNS}, "openid.mode": {"checkid_setup"},
		"openid.claimed_id": {openidNS + "/identifier_select"}, "openid.identity": {openidNS + "/identifier_select"},
		"openid.return_to": {rp + "back"}, "openid.realm": {rp}}
}

func openidChecks() []Check {
	const p, doc = "openid", "docs/auth.md#openid-20-provider"
	const rp = "https://rp.example/"
	return []Check{
		def(p, "xrds", Must, doc, "GET /openid with Accept: application/xrds+xml",
			"200 application/xrds+xml: a service of Type http://specs.openid.net/auth/2.0/server with URI {base}/openid/login", func(t *T) {
				r := t.Expect(200, "GET", "/openid", header("Accept", "application/xrds+xml"))
				t.Check(r.MediaType() == "application/xrds+xml", "Content-Type %q", r.Header.Get("Content-Type"))
				b := string(r.Body)
				t.Check(strings.Contains(b, "<Type>http://specs.openid.net/auth/2.0/server</Type>"), "no server Type in the XRDS")
				t.Check(strings.Contains(b, "<URI>"+t.k.abs("/openid/login")+"</URI>"), "no URI %s in the XRDS", t.k.abs("/openid/login"))
			}),
		def(p, "head", Must, doc, "HEAD /openid with Accept: application/xrds+xml",
			"200 application/xrds+xml without a body", func(t *T) {
				r := t.Expect(200, "HEAD", "/openid", header("Accept", "application/xrds+xml"))
				t.Check(r.MediaType() == "application/xrds+xml" && len(r.Body) == 0, "Content-Type %q, %d bytes", r.Header.Get("Content-Type"), len(r.Body))
			}),
		def(p, "html", Should, doc, "GET /openid with Accept: text/html",
			"200 HTML with X-XRDS-Location", func(t *T) {
				r := t.Expect(200, "GET", "/openid", header("Accept", "text/html"))
				t.Check(r.MediaType() == "text/html" && r.Header.Get("X-XRDS-Location") != "", "Content-Type %q, X-XRDS-Location %q", r.Header.Get("Content-Type"), r.Header.Get("X-XRDS-Location"))
			}),
		def(p, "associate", Must, doc, "POST /openid/login openid.mode=associate, HMAC-SHA256, no-encryption",
			"200 key-value form with assoc_handle, assoc_type HMAC-SHA256, expires_in and a 32-byte mac_key", func(t *T) {
				f := url.Values{"openid.ns": {openidNS}, "openid.mode": {"associate"}, "openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"no-encryption"}}
				r := t.Expect(200, "POST", "/openid/login", formBody(f))
				kv := t.keyValues(r)
				key, err := base64.StdEncoding.DecodeString(kv["mac_key"])
				t.Check(kv["assoc_handle"] != "" && kv["assoc_type"] == "HMAC-SHA256" && kv["expires_in"] != "" && err == nil && len(key) == 32, "the association lacks a field (handle %q, type %q)", kv["assoc_handle"], kv["assoc_type"])
			}),
		def(p, "assertion", Must, doc, "checkid_setup as a signed-in person, Allow on the confirmation page, check_authentication of the assertion twice",
			"303 to return_to with openid.mode=id_res and a sig that verifies; is_valid:true, then is_valid:false (a nonce is checked once)", func(t *T) {
				a := t.allow("/openid/login?"+openidSignIn(rp).Encode(), "/openid/confirm", openidSignIn(rp))
				back, err := url.Parse(a.Header.Get("Location"))
				t.Check(err == nil && strings.HasPrefix(back.String(), rp+"back"), "redirected to %q, want %sback", a.Header.Get("Location"), rp)
				q := back.Query()
				t.Check(q.Get("openid.mode") == "id_res" && q.Get("openid.sig") != "" && q.Get("openid.signed") != "", "the assertion %v is not a signed id_res", q.Get("openid.mode"))
				t.Check(strings.HasSuffix(q.Get("openid.identity"), "/openid/id/"+t.owner().name), "identity %q is not the signed-in person's", q.Get("openid.identity"))
				check := maps.Clone(q)
				check.Set("openid.mode", "check_authentication")
				r := t.Expect(200, "POST", "/openid/login", formBody(check))
				valid := t.keyValues(r)["is_valid"]
				t.Check(valid == "true", "check_authentication: is_valid %q, want true", valid)
				r = t.Do("POST", "/openid/login", formBody(check))
				valid = t.keyValues(r)["is_valid"]
				t.Check(valid == "false", "the second check_authentication: is_valid %q, want false", valid)
			}),
		def(p, "forged", Must, doc, "check_authentication of an assertion with a forged sig",
			"is_valid:false", func(t *T) {
				mac := hmac.New(sha256.New, []byte("forged"))
				mac.Write([]byte("x"))
				f := url.Values{"openid.ns": {openidNS}, "openid.mode": {"check_authentication"}, "openid.op_endpoint": {t.k.abs("/openid/login")},
					"openid.claimed_id": {t.k.abs("/openid/id/admin")}, "openid.identity": {t.k.abs("/openid/id/admin")},
					"openid.return_to": {rp + "back"}, "openid.response_nonce": {time.Now().UTC().Format("2006-01-02T15:04:05Z") + randomHex(4)},
					"openid.assoc_handle": {"forged"}, "openid.signed": {"op_endpoint,claimed_id,identity,return_to,response_nonce,assoc_handle"},
					"openid.sig": {base64.StdEncoding.EncodeToString(mac.Sum(nil))}}
				r := t.Do("POST", "/openid/login", formBody(f))
				t.Check(r.Status == 200 || r.Status == 400, "status %d", r.Status)
				kv, _ := kvform.Parse(r.Body) // a 400 is a problem, not a key-value form
				t.Check(kv["is_valid"] != "true", "a forged assertion was called valid")
				t.Check(r.Status == 400 || kv["is_valid"] == "false", "answered %q, want is_valid:false", r.Body)
			}),
		def(p, "immediate", Should, doc, "checkid_immediate without a session",
			"a redirect to return_to with openid.mode=setup_needed", func(t *T) {
				in := openidSignIn(rp)
				in.Set("openid.mode", "checkid_immediate")
				r := t.Do("GET", "/openid/login?"+in.Encode())
				t.Status(r, 302, 303)
				back, err := url.Parse(r.Header.Get("Location"))
				t.Check(err == nil && back.Query().Get("openid.mode") == "setup_needed", "redirected to %q, want openid.mode=setup_needed", r.Header.Get("Location"))
			}),
	}
}
