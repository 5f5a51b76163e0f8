package main

import (
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	openidgo "github.com/yohcop/openid-go"

	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/store/storetest"
)

const oidPassword = "alice password 1"

// addAlice creates the user alice through the API.
func addAlice(t *testing.T, s *server) {
	t.Helper()
	resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "alice", "password": oidPassword, "email": "alice@example.org"})
	if resp.StatusCode != 201 {
		t.Fatalf("create alice: %d %v", resp.StatusCode, m)
	}
}

// userAgent is a browser without JavaScript: an HTTP client with a cookie
// jar that trusts the server's certificate and lets the test follow each
// redirect itself.
type userAgent struct {
	t *testing.T
	c *http.Client
}

func newUserAgent(t *testing.T, data string) *userAgent {
	jar, _ := cookiejar.New(nil)
	c := trusting(t, data)
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &userAgent{t: t, c: c}
}

func (u *userAgent) do(method, target string, form url.Values) (int, string, string) {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		u.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

var formInputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

func formOf(page string) url.Values {
	v := url.Values{}
	for _, m := range formInputRE.FindAllStringSubmatch(page, -1) {
		v.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return v
}

// signInAndConfirm follows a relying party's redirect to the provider:
// the sign-in form (when signIn), then the confirmation form answered
// with Sign in. It returns the URL the provider sends the browser back to.
func (u *userAgent) signInAndConfirm(start string, signIn bool) string {
	u.t.Helper()
	status, loc, page := u.do("GET", start, nil)
	here := start // the address of the page shown
	if signIn {
		if status != 303 || !strings.Contains(loc, "/signin?next=") {
			u.t.Fatalf("checkid_setup without a session: %d %q", status, loc)
		}
		status, _, page = u.do("GET", loc, nil)
		if status != 200 {
			u.t.Fatalf("the sign-in page: %d", status)
		}
		form := formOf(page)
		form.Set("username", "alice")
		form.Set("password", oidPassword)
		if m := regexp.MustCompile(`name="next" value="([^"]+)"`).FindStringSubmatch(page); m != nil {
			form.Set("next", html.UnescapeString(m[1]))
		}
		signinURL, _ := url.Parse(loc)
		status, loc, _ = u.do("POST", signinURL.Scheme+"://"+signinURL.Host+"/signin", form)
		if status != 303 {
			u.t.Fatalf("sign in: %d", status)
		}
		here = loc
		status, loc, page = u.do("GET", loc, nil)
	}
	if status != 200 || !strings.Contains(page, `action="/openid/confirm"`) {
		u.t.Fatalf("confirmation page: %d %q\n%s", status, loc, page)
	}
	form := formOf(page)
	form.Set("decision", "allow")
	hereURL, _ := url.Parse(here)
	status, loc, _ = u.do("POST", hereURL.Scheme+"://"+hereURL.Host+"/openid/confirm", form)
	if status != 303 || !strings.HasPrefix(loc, "https://rp.example.org/back") {
		u.t.Fatalf("confirm: %d %q", status, loc)
	}
	return loc
}

// TestOpenIDRelyingParty signs in to a relying party built on
// github.com/yohcop/openid-go against a real yard serve over TLS: the
// relying party discovers the OP identifier (and then a claimed
// identifier), the browser signs in and confirms, and Verify accepts the
// assertion (check_authentication and discovery of the claimed id) with
// alice's identifier. A replayed assertion is refused.
func TestOpenIDRelyingParty(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startInProcess(t, "--data", data)
	addAlice(t, s)
	base := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	rp := openidgo.NewOpenID(trusting(t, data))
	cache, nonces := openidgo.NewSimpleDiscoveryCache(), openidgo.NewSimpleNonceStore()
	ua := newUserAgent(t, data)
	for i, id := range []string{s.URL + "/openid", base + "/openid/id/alice"} {
		start, err := rp.RedirectURL(id, "https://rp.example.org/back?n="+fmt.Sprint(i), "https://rp.example.org/")
		if err != nil {
			t.Fatalf("discovery of %s: %v", id, err)
		}
		if !strings.HasPrefix(start, base+"/openid/login?") {
			t.Fatalf("the relying party sends the user to %s", start)
		}
		back := ua.signInAndConfirm(start, i == 0)
		got, err := rp.Verify(back, cache, nonces)
		if err != nil {
			t.Fatalf("Verify of an assertion after discovering %s: %v", id, err)
		}
		if got != base+"/openid/id/alice" {
			t.Fatalf("claimed id %q, want alice's", got)
		}
		// The same assertion again (a relying party that lost its own
		// nonce store): the provider verifies it only once.
		if _, err := rp.Verify(back, openidgo.NewSimpleDiscoveryCache(), openidgo.NewSimpleNonceStore()); err == nil {
			t.Fatal("a replayed assertion was verified twice")
		}
	}
}

// TestOpenIDNonceAcrossProcesses makes an assertion at one process and
// verifies it at another on the same PostgreSQL store (and keys): the
// private association is shared, the response nonce is used once. An
// association made at one process signs at the other.
func TestOpenIDNonceAcrossProcesses(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewPostgresDatabase(t)
	data := t.TempDir()
	a := startProcess(t, "--data", data, "--db", dsn)
	b := startProcess(t, "--data", data, "--db", dsn)
	addAlice(t, a)
	ua := newUserAgent(t, data)
	start := a.URL + "/openid/login?" + url.Values{"openid.ns": {"http://specs.openid.net/auth/2.0"}, "openid.mode": {"checkid_setup"},
		"openid.claimed_id": {"http://specs.openid.net/auth/2.0/identifier_select"}, "openid.identity": {"http://specs.openid.net/auth/2.0/identifier_select"},
		"openid.return_to": {"https://rp.example.org/back"}, "openid.realm": {"https://rp.example.org/"}}.Encode()
	check := func(at *server, back string) string {
		t.Helper()
		u, _ := url.Parse(back)
		v := u.Query()
		v.Set("openid.mode", "check_authentication")
		status, _, body := ua.do("POST", at.URL+"/openid/login", v)
		if status != 200 {
			t.Fatalf("check_authentication: %d %s", status, body)
		}
		return body
	}
	first := ua.signInAndConfirm(start, true)
	if got := check(b, first); !strings.Contains(got, "is_valid:true\n") {
		t.Fatalf("assertion of A verified at B: %q", got)
	}
	if got := check(a, first); !strings.Contains(got, "is_valid:false\n") {
		t.Fatalf("the same assertion again at A: %q, want is_valid:false", got)
	}
	if got := check(b, first); !strings.Contains(got, "is_valid:false\n") {
		t.Fatalf("the same assertion again at B: %q, want is_valid:false", got)
	}

	// An association made at B signs an assertion at A.
	status, _, body := ua.do("POST", b.URL+"/openid/login", url.Values{"openid.ns": {openid.NS}, "openid.mode": {"associate"},
		"openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"no-encryption"}})
	assoc, err := openid.ParseKV([]byte(body))
	if status != 200 || err != nil {
		t.Fatalf("associate at B: %d %q", status, body)
	}
	key, _ := base64.StdEncoding.DecodeString(assoc["mac_key"])
	u, _ := url.Parse(start)
	q := u.Query()
	q.Set("openid.assoc_handle", assoc["assoc_handle"])
	u.RawQuery = q.Encode()
	u.Host = strings.Replace(u.Host, "127.0.0.1", "localhost", 1) // where the session cookie is
	back, _ := url.Parse(ua.signInAndConfirm(u.String(), false))
	m, _ := openid.FromValues(back.Query())
	if m["assoc_handle"] != assoc["assoc_handle"] || m["invalidate_handle"] != "" {
		t.Fatalf("assertion at A with B's association: %v", m)
	}
	if err := openid.Verify("HMAC-SHA256", key, m); err != nil {
		t.Fatalf("the assertion made at A does not verify with the key B gave: %v", err)
	}
}
