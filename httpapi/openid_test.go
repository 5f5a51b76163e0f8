package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/pages"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

const rpReturn = "https://rp.example.org/openid/back?session=42"

// direct sends a direct request to the provider endpoint and parses the
// key-value answer.
func direct(t *testing.T, e *authEnv, form url.Values) (int, openid.Message) {
	t.Helper()
	p := postForm(t, e.Client, e.URL+"/openid/login", form, nil)
	if ct := p.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("direct answer has Content-Type %q, want text/plain:\n%s", ct, p.body)
	}
	m, err := openid.ParseKV([]byte(p.body))
	if err != nil {
		t.Fatalf("answer is not key-value form: %v\n%q", err, p.body)
	}
	return p.status, m
}

// associate makes a DH-SHA256 association as a relying party does and
// returns its handle and the MAC key the relying party decrypted.
func associate(t *testing.T, e *authEnv) (string, []byte) {
	t.Helper()
	a, err := openid.NewDHKey(openid.DefaultModulus, openid.DefaultGenerator)
	if err != nil {
		t.Fatal(err)
	}
	status, m := direct(t, e, url.Values{"openid.ns": {openid.NS}, "openid.mode": {"associate"}, "openid.assoc_type": {"HMAC-SHA256"},
		"openid.session_type": {"DH-SHA256"}, "openid.dh_consumer_public": {openid.IntB64(a.Public)}})
	if status != 200 || m["assoc_type"] != "HMAC-SHA256" || m["session_type"] != "DH-SHA256" || m["assoc_handle"] == "" {
		t.Fatalf("associate: %d %v", status, m)
	}
	b, err := openid.B64Int(m["dh_server_public"])
	if err != nil {
		t.Fatal(err)
	}
	// H(btwoc(B^a mod p)) XOR enc_mac_key, computed here as a relying party would.
	sum := sha256.Sum256(openid.Btwoc(new(big.Int).Exp(b, a.Private, openid.DefaultModulus)))
	enc, _ := base64.StdEncoding.DecodeString(m["enc_mac_key"])
	if len(enc) != 32 {
		t.Fatalf("enc_mac_key has %d bytes", len(enc))
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = enc[i] ^ sum[i]
	}
	return m["assoc_handle"], key
}

func checkidURL(e *authEnv, mode string, extra url.Values) string {
	v := url.Values{"openid.ns": {openid.NS}, "openid.mode": {mode}, "openid.claimed_id": {openid.IdentifierSelect},
		"openid.identity": {openid.IdentifierSelect}, "openid.return_to": {rpReturn}, "openid.realm": {"https://*.example.org/"}}
	for k, vs := range extra {
		v[k] = vs
	}
	return e.URL + "/openid/login?" + v.Encode()
}

// answer reads the OpenID message a redirect to return_to carries.
func answer(t *testing.T, p page) openid.Message {
	t.Helper()
	if p.status != 303 {
		t.Fatalf("got %d, want a 303 to return_to:\n%s", p.status, p.body)
	}
	u, err := url.Parse(p.header.Get("Location"))
	if err != nil || u.Scheme+"://"+u.Host+u.Path != "https://rp.example.org/openid/back" || u.Query().Get("session") != "42" {
		t.Fatalf("Location %q is not return_to with its query", p.header.Get("Location"))
	}
	m, err := openid.FromValues(u.Query())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// signIn walks a browser from a checkid_setup URL through the sign-in form
// to the confirmation page, and returns that page's form.
func signIn(t *testing.T, e *authEnv, b *http.Client, checkid string) url.Values {
	t.Helper()
	p := getPage(t, b, checkid, nil)
	loc := p.header.Get("Location")
	if p.status != 303 || !strings.HasPrefix(loc, e.URL+"/signin?next=") {
		t.Fatalf("checkid_setup without a session: got %d Location %q, want 303 to the sign-in page", p.status, loc)
	}
	p = getPage(t, b, loc, nil)
	next := regexp.MustCompile(`name="next" value="([^"]+)"`).FindStringSubmatch(p.body)
	if p.status != 200 || next == nil {
		t.Fatalf("sign-in page: %d\n%s", p.status, p.body)
	}
	p = postForm(t, b, e.URL+"/signin", url.Values{"username": {"alice"}, "password": {pw}, "csrf_token": {csrfOf(t, p.body)},
		"next": {htmlUnescape(next[1])}}, nil)
	if p.status != 303 || !strings.HasPrefix(p.header.Get("Location"), e.URL+"/openid/login?") {
		t.Fatalf("sign in: got %d Location %q, want 303 back to the provider", p.status, p.header.Get("Location"))
	}
	return confirmForm(t, getPage(t, b, p.header.Get("Location"), nil))
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// confirmForm reads the form of the confirmation page.
func confirmForm(t *testing.T, p page) url.Values {
	t.Helper()
	if p.status != 200 || !strings.Contains(p.body, `action="/openid/confirm"`) {
		t.Fatalf("confirmation page: got %d\n%s", p.status, p.body)
	}
	wantPageHeaders(t, "confirmation page", p.header)
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "https://rp.example.org") {
		t.Errorf("the page's form-action does not allow the redirect to return_to: %q", csp)
	}
	form := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(p.body, -1) {
		form.Set(htmlUnescape(m[1]), htmlUnescape(m[2]))
	}
	return form
}

func TestOpenIDDiscovery(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	type xrdsDoc struct {
		XMLName xml.Name
		XRD     struct {
			Service []struct {
				Type    []string `xml:"Type"`
				URI     string   `xml:"URI"`
				LocalID string   `xml:"LocalID"`
			} `xml:"Service"`
		} `xml:"XRD"`
	}
	for _, tc := range []struct {
		path, accept        string
		wantType, wantLocal string
	}{
		{"/openid", "application/xrds+xml", openid.TypeServer, ""},
		{"/openid?format=xrds", "text/html", openid.TypeServer, ""},
		{"/openid/id/alice", "text/html;q=0.5, application/xrds+xml", openid.TypeSignon, e.URL + "/openid/id/alice"},
		{"/openid/id/ALICE?format=xrds", "", openid.TypeSignon, e.URL + "/openid/id/alice"},
	} {
		p := getPage(t, e.Client, e.URL+tc.path, map[string]string{"Accept": tc.accept})
		if p.status != 200 || p.header.Get("Content-Type") != "application/xrds+xml" {
			t.Fatalf("%s: got %d %s", tc.path, p.status, p.header.Get("Content-Type"))
		}
		var doc xrdsDoc
		if err := xml.Unmarshal([]byte(p.body), &doc); err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		s := doc.XRD.Service
		if doc.XMLName.Space != "xri://$xrds" || len(s) != 1 || s[0].Type[0] != tc.wantType || s[0].URI != e.URL+"/openid/login" || s[0].LocalID != tc.wantLocal {
			t.Errorf("%s: XRDS %s", tc.path, p.body)
		}
	}
	for _, path := range []string{"/openid", "/openid/id/alice"} {
		p := getPage(t, e.Client, e.URL+path, map[string]string{"Accept": "text/html"})
		xrds := e.URL + path + "?format=xrds"
		if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") || p.header.Get("X-XRDS-Location") != xrds {
			t.Fatalf("%s as HTML: got %d %s X-XRDS-Location %q", path, p.status, p.header.Get("Content-Type"), p.header.Get("X-XRDS-Location"))
		}
		if !strings.Contains(p.body, `<meta http-equiv="X-XRDS-Location" content="`+xrds+`">`) ||
			!strings.Contains(p.body, `<link rel="openid2.provider" href="`+e.URL+`/openid/login">`) {
			t.Errorf("%s: the HTML lacks the meta element or the provider link:\n%s", path, p.body)
		}
		if head := doPage(t, e.Client, mustRequest(t, "HEAD", e.URL+path)); head.status != 200 || head.header.Get("X-XRDS-Location") != xrds {
			t.Errorf("HEAD %s: %d", path, head.status)
		}
	}
	if p := getPage(t, e.Client, e.URL+"/openid/id/nobody", nil); p.status != 404 {
		t.Errorf("unknown user: got %d, want 404", p.status)
	}
	if p := getPage(t, e.Client, e.URL+"/openid?format=json", nil); p.status != 400 {
		t.Errorf("?format=json: got %d, want 400", p.status)
	}
}

func mustRequest(t *testing.T, method, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestOpenIDAssociate(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	associate(t, e) // DH-SHA256, checked inside
	// DH-SHA1 with the modulus and generator given explicitly.
	a, _ := openid.NewDHKey(openid.DefaultModulus, openid.DefaultGenerator)
	status, m := direct(t, e, url.Values{"openid.ns": {openid.NS}, "openid.mode": {"associate"}, "openid.assoc_type": {"HMAC-SHA1"},
		"openid.session_type": {"DH-SHA1"}, "openid.dh_consumer_public": {openid.IntB64(a.Public)},
		"openid.dh_modulus": {openid.IntB64(openid.DefaultModulus)}, "openid.dh_gen": {"Ag=="}})
	if status != 200 || m["enc_mac_key"] == "" || m["expires_in"] != "7200" {
		t.Fatalf("DH-SHA1: %d %v", status, m)
	}
	status, m = direct(t, e, url.Values{"openid.ns": {openid.NS}, "openid.mode": {"associate"}, "openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"no-encryption"}})
	if key, _ := base64.StdEncoding.DecodeString(m["mac_key"]); status != 200 || len(key) != 32 {
		t.Fatalf("no-encryption: %d %v", status, m)
	}
	for _, tc := range []struct {
		name     string
		form     url.Values
		wantCode string
	}{
		{"DH-SHA1 for HMAC-SHA256", url.Values{"openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"DH-SHA1"}, "openid.dh_consumer_public": {openid.IntB64(a.Public)}}, "unsupported-type"},
		{"HMAC-MD5", url.Values{"openid.assoc_type": {"HMAC-MD5"}, "openid.session_type": {"no-encryption"}}, "unsupported-type"},
		{"no public key", url.Values{"openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"DH-SHA256"}}, ""},
		{"public key 1", url.Values{"openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"DH-SHA256"}, "openid.dh_consumer_public": {"AQ=="}}, ""},
		{"unknown mode", url.Values{"openid.mode": {"nope"}}, ""},
		{"OpenID 1", url.Values{"openid.ns": {"http://openid.net/signon/1.1"}}, ""},
	} {
		form := url.Values{"openid.ns": {openid.NS}, "openid.mode": {"associate"}}
		for k, v := range tc.form {
			form[k] = v
		}
		status, m := direct(t, e, form)
		if status != 400 || m["ns"] != openid.NS || m["error"] == "" || m["error_code"] != tc.wantCode {
			t.Errorf("%s: got %d %v, want 400 with error_code %q", tc.name, status, m, tc.wantCode)
		}
		if tc.wantCode != "" && (m["assoc_type"] != "HMAC-SHA256" || m["session_type"] != "DH-SHA256") {
			t.Errorf("%s: no supported pair suggested: %v", tc.name, m)
		}
	}
	p := getPage(t, e.Client, e.URL+"/openid/login?openid.ns="+url.QueryEscape(openid.NS)+"&openid.mode=associate", nil)
	if p.status != 400 || !strings.Contains(p.body, "error:") {
		t.Errorf("associate by GET: got %d %q", p.status, p.body)
	}
}

// TestOpenIDFlow runs checkid_setup from a browser with a cookie jar, on
// both engines: sign in, confirm, and the relying party's checks of what
// it gets back, in both association modes, plus the edge cases.
func TestOpenIDFlow(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, nil)
		alice := e.URL + "/openid/id/alice"

		t.Run("associated, with sreg", func(t *testing.T) {
			handle, key := associate(t, e)
			b := browser(t, e.Env)
			form := signIn(t, e, b, checkidURL(e, "checkid_setup", url.Values{"openid.assoc_handle": {handle},
				"openid.ns.sreg": {openid.NSSReg}, "openid.sreg.required": {"email"}, "openid.sreg.optional": {"nickname,fullname"}}))
			if form.Get("openid.assoc_handle") != handle || form.Get("openid.return_to") != rpReturn {
				t.Fatalf("the confirmation form does not carry the request: %v", form)
			}
			form.Set("decision", "allow")
			form.Set("sreg_email", "on")
			form.Set("sreg_nickname", "on") // fullname not ticked
			m := answer(t, postForm(t, b, e.URL+"/openid/confirm", form, nil))
			if m["mode"] != "id_res" || m["claimed_id"] != alice || m["identity"] != alice || m["assoc_handle"] != handle ||
				m["op_endpoint"] != e.URL+"/openid/login" || m["return_to"] != rpReturn || m["invalidate_handle"] != "" {
				t.Fatalf("positive assertion: %v", m)
			}
			if m["sreg.email"] != "alice@example.org" || m["sreg.nickname"] != "alice" || m["sreg.fullname"] != "" || m["ns.sreg"] != openid.NSSReg {
				t.Errorf("sreg fields: %v", m)
			}
			if _, err := openid.NonceTime(m["response_nonce"]); err != nil {
				t.Error(err)
			}
			// The relying party checks the signature with its own key.
			if err := openid.Verify("HMAC-SHA256", key, m); err != nil {
				t.Fatalf("the assertion does not verify with the association's key: %v", err)
			}
			for _, f := range []string{"op_endpoint", "claimed_id", "identity", "return_to", "response_nonce", "assoc_handle", "sreg.email", "ns.sreg"} {
				if !strings.Contains(","+m["signed"]+",", ","+f+",") {
					t.Errorf("%s is not signed: %s", f, m["signed"])
				}
			}
			// A shared association's signature is not checked for others.
			v := m.Values()
			v.Set("openid.mode", "check_authentication")
			if _, r := direct(t, e, v); r["is_valid"] != "false" {
				t.Errorf("check_authentication of a shared association: %v", r)
			}
		})

		t.Run("stateless", func(t *testing.T) {
			b := browser(t, e.Env)
			form := signIn(t, e, b, checkidURL(e, "checkid_setup", nil))
			form.Set("decision", "allow")
			m := answer(t, postForm(t, b, e.URL+"/openid/confirm", form, nil))
			if m["mode"] != "id_res" || m["claimed_id"] != alice || m["assoc_handle"] == "" || m["sreg.email"] != "" {
				t.Fatalf("positive assertion: %v", m)
			}
			check := func(what string, m openid.Message, want string) {
				t.Helper()
				v := m.Values()
				v.Set("openid.mode", "check_authentication")
				status, r := direct(t, e, v)
				if status != 200 || r["is_valid"] != want || r["ns"] != openid.NS {
					t.Errorf("%s: check_authentication = %d %v, want is_valid:%s", what, status, r, want)
				}
			}
			tampered := clone(m)
			tampered["sig"] = base64.StdEncoding.EncodeToString(make([]byte, 32))
			check("tampered sig", tampered, "false")
			changed := clone(m)
			changed["claimed_id"] = e.URL + "/openid/id/bob"
			changed["identity"] = changed["claimed_id"]
			check("a signed field changed", changed, "false")
			unsigned := clone(m)
			unsigned["signed"] = strings.Replace(m["signed"], "response_nonce,", "", 1)
			check("nonce left out of signed", unsigned, "false")
			check("the assertion", m, "true")
			check("the same response_nonce again", m, "false")
		})

		t.Run("expired association", func(t *testing.T) {
			handle, _ := associate(t, e)
			e.clock.Advance(2*time.Hour + time.Second)
			b := browser(t, e.Env)
			form := signIn(t, e, b, checkidURL(e, "checkid_setup", url.Values{"openid.assoc_handle": {handle}}))
			form.Set("decision", "allow")
			m := answer(t, postForm(t, b, e.URL+"/openid/confirm", form, nil))
			if m["invalidate_handle"] != handle || m["assoc_handle"] == handle || !strings.Contains(m["signed"], "assoc_handle") {
				t.Fatalf("an assertion for an expired association: %v", m)
			}
			v := m.Values()
			v.Set("openid.mode", "check_authentication")
			if _, r := direct(t, e, v); r["is_valid"] != "true" || r["invalidate_handle"] != handle {
				t.Errorf("check_authentication: %v, want is_valid:true and invalidate_handle", r)
			}
		})

		t.Run("cancel, remember, immediate", func(t *testing.T) {
			// Without a session checkid_immediate needs setup.
			b := browser(t, e.Env)
			if m := answer(t, getPage(t, b, checkidURL(e, "checkid_immediate", nil), nil)); m["mode"] != "setup_needed" || len(m) != 2 {
				t.Errorf("checkid_immediate without a session: %v", m)
			}
			form := signIn(t, e, b, checkidURL(e, "checkid_setup", nil))
			deny := clone2(form)
			deny.Set("decision", "deny")
			if m := answer(t, postForm(t, b, e.URL+"/openid/confirm", deny, nil)); m["mode"] != "cancel" || m["sig"] != "" {
				t.Errorf("cancel: %v", m)
			}
			// Signed in but the realm not remembered: still setup_needed.
			if m := answer(t, getPage(t, b, checkidURL(e, "checkid_immediate", nil), nil)); m["mode"] != "setup_needed" {
				t.Errorf("checkid_immediate, realm not approved: %v", m)
			}
			// A confirmation without the CSRF token is refused.
			noToken := clone2(form)
			noToken.Del("csrf_token")
			noToken.Set("decision", "allow")
			if p := postForm(t, b, e.URL+"/openid/confirm", noToken, nil); p.status != 403 || p.header.Get("Location") != "" {
				t.Errorf("confirmation without csrf_token: got %d", p.status)
			}
			form.Set("decision", "allow")
			form.Set("remember", "on")
			if m := answer(t, postForm(t, b, e.URL+"/openid/confirm", form, nil)); m["mode"] != "id_res" {
				t.Fatalf("allow: %v", m)
			}
			m := answer(t, getPage(t, b, checkidURL(e, "checkid_immediate", nil), nil))
			if m["mode"] != "id_res" || m["claimed_id"] != alice {
				t.Errorf("checkid_immediate for a remembered realm: %v", m)
			}
			if m := answer(t, getPage(t, b, checkidURL(e, "checkid_setup", nil), nil)); m["mode"] != "id_res" {
				t.Errorf("checkid_setup for a remembered realm: %v", m)
			}
			// Another user's identifier cannot be asserted: the wrong-user
			// page (TestOpenIDWrongUser), even for a remembered realm.
			bob := url.Values{"openid.claimed_id": {e.URL + "/openid/id/bob"}, "openid.identity": {e.URL + "/openid/id/bob"}}
			if p := getPage(t, b, checkidURL(e, "checkid_setup", bob), nil); p.status != 200 || p.header.Get("Location") != "" || !strings.Contains(p.body, `id="switch"`) {
				t.Errorf("checkid_setup for bob signed in as alice: got %d %s", p.status, p.header.Get("Location"))
			}
			if m := answer(t, getPage(t, b, checkidURL(e, "checkid_immediate", bob), nil)); m["mode"] != "setup_needed" {
				t.Errorf("checkid_immediate for bob: %v", m)
			}
		})

		t.Run("bad requests", func(t *testing.T) {
			b := browser(t, e.Env)
			for _, tc := range []struct {
				name  string
				extra url.Values
			}{
				{"return_to outside the realm", url.Values{"openid.return_to": {"https://evil.example.net/back"}}},
				{"realm path", url.Values{"openid.realm": {"https://rp.example.org/other/"}}},
				{"no return_to", url.Values{"openid.return_to": {""}}},
				{"return_to not absolute", url.Values{"openid.return_to": {"/back"}, "openid.realm": {""}}},
				{"realm too broad", url.Values{"openid.realm": {"https://*.org/"}}},
			} {
				p := getPage(t, b, checkidURL(e, "checkid_setup", tc.extra), nil)
				if p.status != 400 || p.header.Get("Location") != "" || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
					t.Errorf("%s: got %d Location %q, want an HTML 400 page", tc.name, p.status, p.header.Get("Location"))
				}
				wantPageHeaders(t, tc.name, p.header)
			}
			long := url.Values{"openid.return_to": {rpReturn + "&pad=" + strings.Repeat("x", pages.MaxNext)}}
			if p := getPage(t, b, checkidURL(e, "checkid_setup", long), nil); p.status != 400 || p.header.Get("Location") != "" {
				t.Errorf("a request too long for the sign-in page's next: got %d %q", p.status, p.header.Get("Location"))
			}
			// Redirectable errors go back as openid.mode=error.
			m := answer(t, getPage(t, b, checkidURL(e, "checkid_setup", url.Values{"openid.ns": {"http://openid.net/signon/1.1"}}), nil))
			if m["mode"] != "error" || m["error"] == "" {
				t.Errorf("OpenID 1.1 request: %v", m)
			}
			m = answer(t, getPage(t, b, checkidURL(e, "checkid_setup", url.Values{"openid.claimed_id": {""}}), nil))
			if m["mode"] != "error" {
				t.Errorf("identity without claimed_id: %v", m)
			}
			if p := getPage(t, b, e.URL+"/openid/login", nil); p.status != 400 || !strings.Contains(p.body, "OpenID provider endpoint") {
				t.Errorf("GET /openid/login without a request: %d", p.status)
			}
			// A checkid request sent as a form continues as GET.
			v, _ := url.ParseQuery(strings.SplitN(checkidURL(e, "checkid_setup", nil), "?", 2)[1])
			p := postForm(t, e.Client, e.URL+"/openid/login", v, nil)
			if loc, _ := url.Parse(p.header.Get("Location")); p.status != 303 || loc == nil || loc.Path != "/openid/login" || loc.Query().Get("openid.return_to") != rpReturn {
				t.Errorf("checkid_setup by POST: got %d %q", p.status, p.header.Get("Location"))
			}
			if p := postForm(t, e.Client, e.URL+"/openid/login", url.Values{"x": {"1"}}, map[string]string{"Content-Type": "text/plain"}); p.status != 400 {
				t.Errorf("direct request as text/plain: got %d", p.status)
			}
			resp, err := e.Client.Post(e.URL+"/openid/login", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(body), "error:") {
				t.Errorf("direct request as JSON: got %d %q", resp.StatusCode, body)
			}
		})
	})
}

func clone(m openid.Message) openid.Message {
	out := openid.Message{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func clone2(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
