package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/pages"
)

// The relying party the lab plays for OpenID 2.0: nobody follows its
// return_to.
const (
	openidNS     = "http://specs.openid.net/auth/2.0"
	openidSelect = "http://specs.openid.net/auth/2.0/identifier_select"
	labRealm     = "https://rp.invalid/"
	labReturnTo  = "https://rp.invalid/back"
)

// browserCookie is the Cookie header of the person's browser as the
// pages need it for a form post: their session and the CSRF token.
func (l *lab) browserCookie() string {
	cookie := pages.CSRFCookie + "=" + pages.CSRFToken(l.cl.r)
	if ck, err := l.cl.r.Cookie(auth.SessionCookie); err == nil {
		cookie += "; " + auth.SessionCookie + "=" + ck.Value
	}
	return cookie
}

// keyValues reads OpenID's key-value form (OpenID 2.0 §4.1.1).
func keyValues(b []byte) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// openID signs the person in to a relying party the lab plays (OpenID
// 2.0): an association (HMAC-SHA256, no-encryption over HTTPS), the
// person's confirmation, and the positive assertion's signature checked
// here with the association's MAC key. The mistake: no association
// (stateless mode), the assertion's identity changed, and the provider's
// check_authentication says it is not valid.
func (l *lab) openID() bool {
	form := func(v url.Values) []byte { return []byte(v.Encode()) }
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	var macKey []byte
	handle := ""
	if !l.mistake {
		res := l.exchange("1. Association (OpenID 2.0 §8)", request{method: "POST", path: "/openid/login",
			body: form(url.Values{"openid.ns": {openidNS}, "openid.mode": {"associate"}, "openid.assoc_type": {"HMAC-SHA256"},
				"openid.session_type": {"no-encryption"}}), header: formHeader},
			[]string{"Content-Type: application/x-www-form-urlencoded", "", "openid.ns=…&openid.mode=associate&openid.assoc_type=HMAC-SHA256&openid.session_type=no-encryption"},
			"The relying party and the provider share a MAC key (sent in clear: HTTPS protects it; it is not shown here).")
		kv := keyValues(res.Body)
		key, err := base64.StdEncoding.DecodeString(kv["mac_key"])
		if !res.ok() || err != nil || kv["assoc_handle"] == "" {
			return false
		}
		l.hidden = append(l.hidden, kv["mac_key"])
		macKey, handle = key, kv["assoc_handle"]
	}

	req := url.Values{"openid.ns": {openidNS}, "openid.mode": {"checkid_setup"}, "openid.claimed_id": {openidSelect},
		"openid.identity": {openidSelect}, "openid.return_to": {labReturnTo}, "openid.realm": {labRealm}}
	if handle != "" {
		req.Set("openid.assoc_handle", handle)
	}
	post := url.Values{pages.CSRFField: {pages.CSRFToken(l.cl.r)}, "decision": {"allow"}}
	for k, v := range req {
		post[k] = v
	}
	res := l.exchange("2. The person confirms the sign-in (checkid_setup, §9)", request{method: "POST", path: "/openid/confirm", body: form(post),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": l.browserCookie(), "Accept": "text/html"},
		curl:   "(a browser: the confirmation page of GET /openid/login?openid.mode=checkid_setup&…, Sign in)"},
		[]string{"Cookie: <your session>, <the form's CSRF token>", "", "decision=allow&csrf_token=<the CSRF token>&openid.mode=checkid_setup&openid.realm=" + labRealm + "&…"},
		"The answer sends the browser to return_to with the signed assertion (§10.1).")
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.Status != http.StatusSeeOther || err != nil {
		return false
	}
	a := loc.Query()
	if a.Get("openid.mode") != "id_res" {
		l.note("The assertion's mode is " + a.Get("openid.mode") + ", not id_res.")
		return false
	}
	var msg strings.Builder
	for k := range strings.SplitSeq(a.Get("openid.signed"), ",") {
		msg.WriteString(k + ":" + a.Get("openid."+k) + "\n")
	}
	l.note("The signed fields, in key-value form (§6.1), as the relying party rebuilds them:", strings.TrimSuffix(msg.String(), "\n"))

	if !l.mistake {
		m := hmac.New(sha256.New, macKey)
		m.Write([]byte(msg.String()))
		ok := hmac.Equal([]byte(base64.StdEncoding.EncodeToString(m.Sum(nil))), []byte(a.Get("openid.sig")))
		verdict := "valid"
		if !ok {
			verdict = "NOT valid"
		}
		l.note("openid.sig = base64(HMAC-SHA256(MAC key, the text above)): "+verdict+" (checked here with the association's key).",
			"The person is signed in to "+labRealm+" as "+a.Get("openid.claimed_id")+".")
		return ok
	}
	// The mistake: stateless mode, and the identity changed before the
	// provider is asked.
	check := url.Values{}
	for k, v := range a {
		check[k] = v
	}
	check.Set("openid.mode", "check_authentication")
	other := strings.TrimSuffix(l.cl.c.cfg.BaseURL, "/") + "/openid/id/someone-else"
	check.Set("openid.claimed_id", other)
	check.Set("openid.identity", other)
	res = l.exchange("3. check_authentication of a changed assertion (§11.4.2)", request{method: "POST", path: "/openid/login", body: form(check), header: formHeader},
		[]string{"Content-Type: application/x-www-form-urlencoded", "", "openid.mode=check_authentication&openid.claimed_id=" + other + "&…   ← the mistake: the identity changed after signing"},
		"Without an association the relying party asks the provider; the signature no longer covers what is sent.")
	return res.ok() && keyValues(res.Body)["is_valid"] == "true"
}
