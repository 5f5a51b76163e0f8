package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/pages"
)

// oauthCallback is where the lab's consumer says it wants the person
// sent back: the authorisation's 303 names it, and nobody follows it.
const oauthCallback = "https://lab.invalid/callback"

// oauthSign signs a request of the lab's consumer (RFC 5849 §3.4,
// HMAC-SHA1) and returns its Authorization header and the base string.
func (l *lab) oauthSign(method, path string, extra [][2]string, consumerKey, consumerSecret, tokenSecret string) (header, base string) {
	params := append([][2]string{
		{"oauth_consumer_key", consumerKey},
		{"oauth_signature_method", sigbase.OAuthHMACSHA1},
		{"oauth_timestamp", strconv.FormatInt(time.Now().Unix(), 10)},
		{"oauth_nonce", randomHex(12)},
		{"oauth_version", "1.0"},
	}, extra...)
	u, _ := url.Parse(l.cl.c.cfg.BaseURL + path)
	base = sigbase.OAuthBaseString(method, sigbase.OAuthBaseURI(u), slices.Clone(params))
	sig, _ := sigbase.OAuthSignature(sigbase.OAuthHMACSHA1, method, sigbase.OAuthBaseURI(u), slices.Clone(params), consumerSecret, tokenSecret)
	var b strings.Builder
	b.WriteString(`OAuth realm="yard"`)
	for _, p := range append(params, [2]string{"oauth_signature", sig}) {
		b.WriteString(", " + p[0] + `="` + sigbase.OAuthEncode(p[1]) + `"`)
	}
	return b.String(), base
}

// oauth runs OAuth 1.0a's three legs (RFC 5849 §2) with a consumer
// registered for the run (so only for administrators): temporary
// credentials, the person's authorisation, the token credentials, and a
// request signed with them (or, as the mistake, signed with a wrong
// consumer secret).
func (l *lab) oauth() bool {
	if !l.cl.user.IsAdmin() {
		l.steps = append(l.steps, labStep{Title: "Not for people",
			Notes: []string{"The lab registers a consumer for the run, which only an administrator may (POST /oauth/consumers)."}})
		return false
	}
	var k consumer
	res := l.cl.send(request{method: "POST", path: "/oauth/consumers", body: []byte(`{"name":"yard console lab"}`),
		header: map[string]string{"Content-Type": "application/json"}, session: true})
	l.steps = append(l.steps, labStep{Title: "1. A consumer for this run (with the console's session)",
		Request: []string{"POST " + l.cl.c.cfg.BaseURL + "/oauth/consumers", "", `{"name":"yard console lab"}`}, Status: res.Status,
		Response: []string{excerpt(maskJSON(res.Body))}})
	if !res.decode(&k) || k.Key == "" {
		return false
	}
	defer func() {
		l.cl.send(request{method: "DELETE", path: "/oauth/consumers/" + seg(k.Key), session: true})
		l.note("The run's consumer is deleted (DELETE /oauth/consumers/" + k.Key + ").")
	}()

	// 1. Temporary credentials.
	h, base := l.oauthSign("POST", "/oauth/request_token", [][2]string{{"oauth_callback", oauthCallback}}, k.Key, k.Secret, "")
	res = l.exchange("2. Temporary credentials (RFC 5849 §2.1)", request{method: "POST", path: "/oauth/request_token",
		header: map[string]string{"Authorization": h}, curl: l.curl(`-X POST -H "Authorization: OAuth …"`, "/oauth/request_token")},
		[]string{"Authorization: " + hideSignature(h)},
		"The signature base string (§3.4.1): method & base URI & the sorted, encoded parameters:", base,
		"oauth_signature = base64(HMAC-SHA1(consumer secret & \"\", base string)); the secret is not shown.")
	temp, _ := url.ParseQuery(string(res.Body))
	if !res.ok() || temp.Get("oauth_token") == "" {
		return false
	}
	l.hidden = append(l.hidden, temp.Get("oauth_token_secret"))

	// 2. The person allows the consumer: the authorisation form, posted
	// as the person's browser would (their session, the pages' CSRF
	// token).
	form := url.Values{"oauth_token": {temp.Get("oauth_token")}, "decision": {"allow"}, pages.CSRFField: {pages.CSRFToken(l.cl.r)}}.Encode()
	cookie := l.browserCookie()
	res = l.exchange("3. The person allows it (RFC 5849 §2.2)", request{method: "POST", path: "/oauth/authorize", body: []byte(form),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Accept": "text/html"},
		curl:   "(a browser: the page at /oauth/authorize?oauth_token=…, Allow)"},
		[]string{"Cookie: <your session>, <the form's CSRF token>", "", "oauth_token=" + temp.Get("oauth_token") + "&decision=allow&csrf_token=<the CSRF token>"},
		"The answer sends the browser back to the consumer's callback with the verifier.")
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.Status != http.StatusSeeOther || err != nil || loc.Query().Get("oauth_verifier") == "" {
		return false
	}

	// 3. Token credentials.
	h, base = l.oauthSign("POST", "/oauth/access_token", [][2]string{{"oauth_token", temp.Get("oauth_token")},
		{"oauth_verifier", loc.Query().Get("oauth_verifier")}}, k.Key, k.Secret, temp.Get("oauth_token_secret"))
	res = l.exchange("4. Token credentials (RFC 5849 §2.3)", request{method: "POST", path: "/oauth/access_token",
		header: map[string]string{"Authorization": h}, curl: l.curl(`-X POST -H "Authorization: OAuth …"`, "/oauth/access_token")},
		[]string{"Authorization: " + hideSignature(h)},
		"Base string:", base, "Signed with the consumer secret & the temporary token's secret.")
	tok, _ := url.ParseQuery(string(res.Body))
	if !res.ok() || tok.Get("oauth_token") == "" {
		return false
	}
	l.hidden = append(l.hidden, tok.Get("oauth_token_secret"))

	// 4. A request for the person.
	secret := k.Secret
	if l.mistake {
		secret += "-wrong"
	}
	h, base = l.oauthSign("GET", l.me, [][2]string{{"oauth_token", tok.Get("oauth_token")}}, k.Key, secret, tok.Get("oauth_token_secret"))
	notes := []string{"Base string:", base}
	if l.mistake {
		notes = append(notes, "The mistake: signed with a wrong consumer secret; the refusal names the base string the server built.")
	}
	res = l.exchange("5. A request signed with the token credentials (RFC 5849 §3)", request{method: "GET", path: l.me,
		header: map[string]string{"Authorization": h}, curl: l.curl(`-H "Authorization: OAuth …"`, l.me)},
		[]string{"Authorization: " + hideSignature(h)}, notes...)
	return res.ok()
}

// hideSignature shortens the oauth_signature of an Authorization header
// for display.
func hideSignature(h string) string {
	i := strings.Index(h, `oauth_signature="`)
	if i < 0 {
		return h
	}
	j := strings.IndexByte(h[i+len(`oauth_signature="`):], '"')
	if j < 0 {
		return h
	}
	sig := h[i+len(`oauth_signature="`) : i+len(`oauth_signature="`)+j]
	if len(sig) > 8 {
		sig = sig[:8] + "…"
	}
	return h[:i] + `oauth_signature="` + sig + `"` + h[i+len(`oauth_signature="`)+j+1:]
}
