package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestConsoleLab(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	e.apiDog(t, "alice", "Rex")
	alice := e.signIn(t, "alice")
	p := alice.get("/console/lab")
	checkPage(t, "lab", p)
	for _, tc := range []struct {
		scheme string
		want   []string // in the page, in order
	}{
		{"basic", []string{"WWW-Authenticate: Basic", "Authorization: Basic base64(alice:&lt;password&gt;)"}},
		{"digest", []string{"WWW-Authenticate: Digest", "HA2 = SHA-256(", "response = SHA-256(HA1:nonce:nc:cnonce:qop:HA2)", "Authorization: Digest username=&#34;alice&#34;"}},
		{"digest-md5", []string{"WWW-Authenticate: Digest", "The server offers Digest with: SHA-256, MD5", "MD5 is broken for collisions",
			"HA2 = MD5(", "response = MD5(HA1:nonce:nc:cnonce:qop:HA2)", "algorithm=MD5, qop=auth"}},
		{"session", []string{"Set-Cookie: sessionToken=&lt;hidden&gt;", "Cookie: sessionToken=&lt;the key&gt;", "3. End the session"}},
		{"tokens", []string{"&#34;sub&#34;", "2. A request with the access token", "3. Refresh", "4. Log out"}},
		{"pktoken", []string{"&#34;alg&#34;: &#34;EdDSA&#34;", "valid: Ed25519 over header.claims", "3. A request with the token"}},
		{"signed", []string{"/v1/dogs?apikey=ak_", "&amp;max=5&amp;timestamp=", "signature = hex(HMAC-SHA256(secret, canonical string))", "is deleted"}},
	} {
		for _, mistake := range []bool{false, true} {
			form := url.Values{"scheme": {tc.scheme}, "password": {pw}}
			if mistake {
				form.Set("mistake", "1")
			}
			p := alice.form("/console/lab", form)
			if p.status != 200 {
				t.Fatalf("%s: %d", tc.scheme, p.status)
			}
			at := 0
			for _, w := range tc.want {
				i := strings.Index(p.body[at:], w)
				if i < 0 && !(mistake && (tc.scheme == "session" || w == "4. Log out" || strings.HasPrefix(w, "valid:"))) {
					t.Errorf("%s (mistake %v): %q missing after byte %d\n%s", tc.scheme, mistake, w, at, p.body)
					break
				}
				if i >= 0 {
					at += i
				}
			}
			if mistake && tc.scheme == "signed" && !strings.Contains(p.body, "acceptableTimestamps") {
				t.Error("the stale timestamp's refusal does not name the timestamps the server accepts")
			}
			if mistake && tc.scheme == "pktoken" && !strings.Contains(p.body, "NOT valid") {
				t.Error("the changed token's signature is not found invalid")
			}
			accepted := strings.Contains(p.body, `id="outcome" class="notice">The API accepted`)
			if accepted == mistake {
				t.Errorf("%s (mistake %v): accepted %v", tc.scheme, mistake, accepted)
			}
			if regexp.MustCompile(`/sessions/[A-Za-z0-9_-]{43}`).MatchString(p.body) {
				t.Errorf("%s: the page shows a session key", tc.scheme)
			}
			if strings.Contains(p.body, pw) {
				t.Errorf("%s: the page shows the password", tc.scheme)
			}
			// A secret's prefix where a word starts: inside a token's
			// base64url, "sk_" can occur by chance.
			if m := secretPrefix.FindString(p.body); m != "" {
				t.Errorf("%s: the page shows %q", tc.scheme, m)
			}
		}
	}
}

// secretPrefix finds the start of an API key's, a consumer's or a webhook's
// secret.
var secretPrefix = regexp.MustCompile(`(^|[^A-Za-z0-9_-])(whsec|sk|cs)_`)

// OAuth 1.0a's three legs in the lab: an administrator's run is accepted,
// its mistake refused; a person is told it needs an administrator.
func TestConsoleLabOAuth(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	root, alice := e.signIn(t, "root"), e.signIn(t, "alice")
	p := root.form("/console/lab", url.Values{"scheme": {"oauth"}})
	for _, want := range []string{"2. Temporary credentials", "POST&amp;https%3A%2F%2F", "oauth_callback_confirmed=true",
		"3. The person allows it", "Location: https://lab.invalid/callback?oauth_token=", "4. Token credentials", "5. A request signed",
		`id="outcome" class="notice"`, "consumer is deleted"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the OAuth run lacks %q\n%s", want, p.body)
			break
		}
	}
	if regexp.MustCompile(`oauth_token_secret=[^&<]*[A-Za-z0-9]{8}`).MatchString(p.body) || strings.Contains(p.body, "cs_") {
		t.Errorf("the page shows a secret:\n%s", p.body)
	}
	if p = root.form("/console/lab", url.Values{"scheme": {"oauth"}, "mistake": {"1"}}); !strings.Contains(p.body, `id="outcome" class="alert"`) ||
		!strings.Contains(p.body, "signature_invalid") {
		t.Errorf("the OAuth mistake:\n%s", p.body)
	}
	if p = alice.form("/console/lab", url.Values{"scheme": {"oauth"}}); !strings.Contains(p.body, "Not for people") {
		t.Errorf("a person's OAuth run:\n%s", p.body)
	}
}

// OpenID 2.0 in the lab: discovery of the person's claimed identifier
// (its XRDS document shown, the endpoint found in it used for the rest),
// the associated sign-in's signature checked; the changed assertion
// refused by check_authentication.
func TestConsoleLabOpenID(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice := e.signIn(t, "alice")
	p := alice.form("/console/lab", url.Values{"scheme": {"openid"}})
	claimed, endpoint := e.URL+"/openid/id/alice", e.URL+"/openid/login"
	for _, want := range []string{
		// 1: discovery, the XRDS document as the API sends it.
		"1. Discovery: the claimed identifier&#39;s XRDS document", "GET " + claimed + "\nAccept: application/xrds&#43;xml",
		"Content-Type: application/xrds&#43;xml", "&lt;XRDS xmlns=&#34;xri://$xrds&#34;&gt;", "&lt;Type&gt;http://specs.openid.net/auth/2.0/signon&lt;/Type&gt;",
		"&lt;URI&gt;" + endpoint + "&lt;/URI&gt;", "&lt;LocalID&gt;" + claimed + "&lt;/LocalID&gt;",
		"names the provider&#39;s endpoint (URI) " + endpoint,
		// 2-4: the discovered endpoint for the rest.
		"2. Association with the discovered endpoint", "POST " + endpoint, "assoc_handle:", "mac_key:&lt;hidden&gt;",
		"3. The browser is sent to the discovered endpoint", "GET " + endpoint + "?openid.assoc_handle=",
		"4. The person confirms", "Location: https://rp.invalid/back?", "op_endpoint:" + endpoint, "claimed_id:" + claimed,
		"op_endpoint and claimed_id are the discovered ones (§11.2): true", "(checked here with the association", `id="outcome" class="notice"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the OpenID run lacks %q\n%s", want, p.body)
			break
		}
	}
	p = alice.form("/console/lab", url.Values{"scheme": {"openid"}, "mistake": {"1"}})
	if !strings.Contains(p.body, "is_valid:false") || !strings.Contains(p.body, `id="outcome" class="alert"`) ||
		!strings.Contains(p.body, "POST "+endpoint) || strings.Contains(p.body, "Association") {
		t.Errorf("the OpenID mistake:\n%s", p.body)
	}
}
