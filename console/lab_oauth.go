package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/sigbase"
)

// oauthCallback is where the lab's consumer says it wants the person
// sent back: the authorisation's 303 names it, and nobody follows it.
const oauthCallback = "https://lab.invalid/callback"

// oauthSign signs a request of the lab's consumer (RFC 5849 §3.4,
// HMAC-SHA1) and returns it, with its Authorization header as the step
// shows it, and the base string.
func (l *lab) oauthSign(method, path string, extra [][2]string, consumerKey, consumerSecret, tokenSecret string) (q request, shown []string, base string) {
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
	authz := sigbase.OAuthAuthorization("yard", append(params, [2]string{"oauth_signature", sig}))
	opts := `-H "Authorization: OAuth …"`
	if method != "GET" {
		opts = "-X " + method + " " + opts
	}
	q = request{method: method, path: path, header: map[string]string{"Authorization": authz}, curl: l.curl(opts, path)}
	return q, []string{"Authorization: " + hideSignature(authz)}, base
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
	const name = `{"name":"yard console lab"}`
	res := l.own("1. A consumer for this run (with the console's session)", request{method: "POST", path: "/oauth/consumers",
		body: []byte(name), header: map[string]string{"Content-Type": "application/json"}}, []string{"", name})
	if !res.decode(&k) || k.Key == "" {
		return false
	}
	defer l.remove("/oauth/consumers/"+seg(k.Key), "consumer")

	// 1. Temporary credentials.
	q, shown, base := l.oauthSign("POST", "/oauth/request_token", [][2]string{{"oauth_callback", oauthCallback}}, k.Key, k.Secret, "")
	res = l.exchange("2. Temporary credentials (RFC 5849 §2.1)", q, shown,
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
	res = l.browserPost("3. The person allows it (RFC 5849 §2.2)", "/oauth/authorize",
		url.Values{"oauth_token": {temp.Get("oauth_token")}, "decision": {"allow"}}, "(a browser: the page at /oauth/authorize?oauth_token=…, Allow)",
		"oauth_token="+temp.Get("oauth_token")+"&decision=allow&csrf_token=<the CSRF token>",
		"The answer sends the browser back to the consumer's callback with the verifier.")
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.Status != http.StatusSeeOther || err != nil || loc.Query().Get("oauth_verifier") == "" {
		return false
	}

	// 3. Token credentials.
	q, shown, base = l.oauthSign("POST", "/oauth/access_token", [][2]string{{"oauth_token", temp.Get("oauth_token")},
		{"oauth_verifier", loc.Query().Get("oauth_verifier")}}, k.Key, k.Secret, temp.Get("oauth_token_secret"))
	res = l.exchange("4. Token credentials (RFC 5849 §2.3)", q, shown, "Base string:", base, "Signed with the consumer secret & the temporary token's secret.")
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
	q, shown, base = l.oauthSign("GET", l.me, [][2]string{{"oauth_token", tok.Get("oauth_token")}}, k.Key, secret, tok.Get("oauth_token_secret"))
	notes := []string{"Base string:", base}
	if l.mistake {
		notes = append(notes, "The mistake: signed with a wrong consumer secret; the refusal names the base string the server built.")
	}
	res = l.exchange("5. A request signed with the token credentials (RFC 5849 §3)", q, shown, notes...)
	return res.ok()
}

// hideSignature shortens the oauth_signature of an Authorization header
// for display.
func hideSignature(h string) string {
	const name = `oauth_signature="`
	before, rest, ok := strings.Cut(h, name)
	sig, after, closed := strings.Cut(rest, `"`)
	if !ok || !closed {
		return h
	}
	if len(sig) > 8 {
		sig = sig[:8] + "…"
	}
	return before + name + sig + `"` + after
}
