package console

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"html"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/internal/kvform"
	"github.com/yard-api/yard/pages"
)

// OpenID 2.0's namespace and the service types discovery looks for, and
// the relying party the lab plays (nobody follows its return_to).
const (
	openidNS     = "http://specs.openid.net/auth/2.0"
	openidSignon = openidNS + "/signon" // a claimed identifier's service (§7.3.2.1.2)
	openidServer = openidNS + "/server" // an OP identifier's service (§7.3.2.1.1)
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

// browserPost posts form to path as the person's browser does (their
// session, the pages' CSRF token in the cookie and the form), which the
// step shows as shownForm; curl says what a browser does instead.
func (l *lab) browserPost(title, path string, form url.Values, curl, shownForm string, notes ...string) result {
	form.Set(pages.CSRFField, pages.CSRFToken(l.cl.r))
	return l.exchange(title, request{method: "POST", path: path, body: []byte(form.Encode()),
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": l.browserCookie(), "Accept": "text/html"}, curl: curl},
		[]string{"Cookie: <your session>, <the form's CSRF token>", "", shownForm}, notes...)
}

// xrdsDoc is the part of a Yadis XRDS document a relying party reads
// (Yadis 1.0 §7; OpenID 2.0 §7.3.2): the services of the final XRD.
type xrdsDoc struct {
	XRD []struct {
		Service []struct {
			Type    []string `xml:"Type"`
			URI     []string `xml:"URI"`
			LocalID string   `xml:"LocalID"`
		} `xml:"Service"`
	} `xml:"XRD"`
}

// providerIn finds the OpenID provider in an XRDS document: the endpoint
// of a signon service (a claimed identifier's, with its local
// identifier) or of a server service (an OP identifier's), OpenID 2.0
// §7.3.2.1.
func providerIn(body []byte) (endpoint, localID string, ok bool) {
	var doc xrdsDoc
	if xml.Unmarshal(body, &doc) != nil || len(doc.XRD) == 0 {
		return "", "", false
	}
	for _, want := range []string{openidSignon, openidServer} {
		for _, s := range doc.XRD[len(doc.XRD)-1].Service {
			if slices.Contains(s.Type, want) && len(s.URI) > 0 {
				return strings.TrimSpace(s.URI[0]), strings.TrimSpace(s.LocalID), true
			}
		}
	}
	return "", "", false
}

// linkRe finds an HTML link element's rel and href, in either order.
var linkRe = regexp.MustCompile(`(?i)<link\s[^>]*?(?:rel="([^"]*)"[^>]*?href="([^"]*)"|href="([^"]*)"[^>]*?rel="([^"]*)")`)

// providerInHTML finds the provider in HTML-based discovery (OpenID 2.0
// §7.3.3): the href of link rel="openid2.provider", and of
// openid2.local_id.
func providerInHTML(body []byte) (endpoint, localID string, ok bool) {
	for _, m := range linkRe.FindAllStringSubmatch(string(body), -1) {
		rel, href := m[1], m[2]
		if rel == "" {
			rel, href = m[4], m[3]
		}
		href = html.UnescapeString(href)
		for r := range strings.FieldsSeq(rel) {
			switch r {
			case "openid2.provider":
				endpoint = href
			case "openid2.local_id":
				localID = href
			}
		}
	}
	return endpoint, localID, endpoint != ""
}

// discover does what a relying party does with the identifier the person
// gives (OpenID 2.0 §7.3): it asks the claimed identifier's URL for its
// XRDS document (Yadis, Accept: application/xrds+xml) and, when the answer
// is not one, reads the HTML page's links. It returns the provider's
// endpoint as a path of this server, and the local identifier.
func (l *lab) discover(claimed string) (path, localID string, ok bool) {
	idPath := strings.TrimPrefix(claimed, l.cl.c.cfg.BaseURL)
	res := l.exchange(l.num()+"Discovery: the claimed identifier's XRDS document (Yadis; OpenID 2.0 §7.3.2)",
		request{method: "GET", path: idPath, header: map[string]string{"Accept": "application/xrds+xml"},
			curl: l.curl("-H 'Accept: application/xrds+xml'", idPath)},
		[]string{"Accept: application/xrds+xml"},
		"The person gives the relying party the identifier "+claimed+"; the relying party fetches it asking for an XRDS document.")
	endpoint, local, found := "", "", false
	if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); res.ok() && ct == "application/xrds+xml" {
		endpoint, local, found = providerIn(res.Body)
		if found {
			says := "The service of Type " + openidSignon + " names the provider's endpoint (URI) " + endpoint
			if local == "" {
				says = "The service of Type " + openidServer + " names the provider's endpoint (URI) " + endpoint + ", and no LocalID"
			} else {
				says += " and the identifier the provider knows the person by (LocalID) " + local
			}
			l.note(says+".", "The relying party sends the rest of the exchange to that endpoint, and will accept an assertion only from it, about this claimed identifier (§11.2).")
		}
	}
	if !found {
		res = l.exchange(l.num()+"Discovery: the claimed identifier's HTML page (OpenID 2.0 §7.3.3)",
			request{method: "GET", path: idPath, header: map[string]string{"Accept": "text/html"}, curl: l.curl("", idPath)},
			[]string{"Accept: text/html"}, "No XRDS document: the relying party reads the page's link elements.")
		if endpoint, local, found = providerInHTML(res.Body); found {
			l.note(`<link rel="openid2.provider"> names the provider's endpoint ` + endpoint + ".")
		}
	}
	if !found {
		l.note("Discovery found no OpenID provider.")
		return "", "", false
	}
	local = cmp.Or(local, claimed)
	path, own := strings.CutPrefix(endpoint, l.cl.c.cfg.BaseURL)
	if !own || !strings.HasPrefix(path, "/") {
		l.note("The endpoint is not this server's: the lab talks to this server only.")
		return "", "", false
	}
	return path, local, true
}

// num numbers the next step.
func (l *lab) num() string { return strconv.Itoa(len(l.steps)+1) + ". " }

// openID signs the person in to a relying party the lab plays (OpenID
// 2.0): discovery of the person's claimed identifier, an association
// (HMAC-SHA256, no-encryption over HTTPS) with the endpoint discovery
// found, the browser at that endpoint (checkid_setup), the person's
// confirmation, and the positive assertion's signature checked here with
// the association's MAC key. The mistake: no association (stateless
// mode), the assertion's identity changed, and the provider's
// check_authentication says it is not valid.
func (l *lab) openID() bool {
	claimed := l.cl.c.cfg.BaseURL + "/openid/id/" + seg(l.cl.user.Name)
	endpoint, localID, ok := l.discover(claimed)
	if !ok {
		return false
	}
	// The relying party's own posts to the endpoint, shown with shownForm.
	rpPost := func(title string, form url.Values, shownForm string, notes ...string) result {
		return l.exchange(title, request{method: "POST", path: endpoint, body: []byte(form.Encode()),
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
			[]string{"Content-Type: application/x-www-form-urlencoded", "", shownForm}, notes...)
	}
	var macKey []byte
	handle := ""
	if !l.mistake {
		res := rpPost(l.num()+"Association with the discovered endpoint (OpenID 2.0 §8)", url.Values{"openid.ns": {openidNS},
			"openid.mode": {"associate"}, "openid.assoc_type": {"HMAC-SHA256"}, "openid.session_type": {"no-encryption"}},
			"openid.ns=…&openid.mode=associate&openid.assoc_type=HMAC-SHA256&openid.session_type=no-encryption",
			"The relying party and the provider share a MAC key (sent in clear: HTTPS protects it; it is not shown here).")
		kv, _ := kvform.Parse(res.Body) // a malformed answer has no keys: the run fails below
		key, err := base64.StdEncoding.DecodeString(kv["mac_key"])
		if !res.ok() || err != nil || kv["assoc_handle"] == "" {
			return false
		}
		l.hidden = append(l.hidden, kv["mac_key"])
		macKey, handle = key, kv["assoc_handle"]
	}

	req := url.Values{"openid.ns": {openidNS}, "openid.mode": {"checkid_setup"}, "openid.claimed_id": {claimed},
		"openid.identity": {localID}, "openid.return_to": {labReturnTo}, "openid.realm": {labRealm}}
	if handle != "" {
		req.Set("openid.assoc_handle", handle)
	}
	browser := map[string]string{"Cookie": l.browserCookie(), "Accept": "text/html"}
	res := l.exchange(l.num()+"The browser is sent to the discovered endpoint (checkid_setup, §9)",
		request{method: "GET", path: endpoint + "?" + req.Encode(), header: browser,
			curl: "(a browser: the relying party redirects it to " + l.cl.c.cfg.BaseURL + endpoint + "?openid.mode=checkid_setup&…)"},
		[]string{"Cookie: <your session>", "", "openid.mode=checkid_setup&openid.claimed_id=" + claimed + "&openid.identity=" + localID + "&openid.realm=" + labRealm + "&…"})
	l.dropBody()
	loc := res.Header.Get("Location")
	if res.Status == http.StatusOK {
		l.note("The provider's confirmation page (not shown): Sign in or Cancel; its form posts to /openid/confirm.")
		post := maps.Clone(req)
		post.Set("decision", "allow")
		res = l.browserPost(l.num()+"The person confirms the sign-in", "/openid/confirm", post, "(a browser: the confirmation page's Sign in)",
			"decision=allow&csrf_token=<the CSRF token>&openid.mode=checkid_setup&openid.realm="+labRealm+"&…",
			"The answer sends the browser to return_to with the signed assertion (§10.1).")
		loc = res.Header.Get("Location")
	}
	back, err := url.Parse(loc)
	if res.Status != http.StatusSeeOther || err != nil {
		return false
	}
	a := back.Query()
	if a.Get("openid.mode") != "id_res" {
		l.note("The assertion's mode is " + a.Get("openid.mode") + ", not id_res.")
		return false
	}
	var msg strings.Builder
	for k := range strings.SplitSeq(a.Get("openid.signed"), ",") {
		msg.WriteString(k + ":" + a.Get("openid."+k) + "\n")
	}
	l.note("The signed fields, in key-value form (§6.1), as the relying party rebuilds them:", strings.TrimSuffix(msg.String(), "\n"))
	matches := a.Get("openid.op_endpoint") == l.cl.c.cfg.BaseURL+endpoint && a.Get("openid.claimed_id") == claimed
	l.note(fmt.Sprintf("op_endpoint and claimed_id are the discovered ones (§11.2): %v.", matches))

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
		return ok && matches
	}
	// The mistake: stateless mode, and the identity changed before the
	// provider is asked.
	check := maps.Clone(a)
	check.Set("openid.mode", "check_authentication")
	other := l.cl.c.cfg.BaseURL + "/openid/id/someone-else"
	check.Set("openid.claimed_id", other)
	check.Set("openid.identity", other)
	res = rpPost(l.num()+"check_authentication of a changed assertion (§11.4.2)", check,
		"openid.mode=check_authentication&openid.claimed_id="+other+"&…   ← the mistake: the identity changed after signing",
		"Without an association the relying party asks the provider; the signature no longer covers what is sent.")
	kv, err := kvform.Parse(res.Body)
	return res.ok() && err == nil && kv["is_valid"] == "true"
}

// dropBody removes the body from the last step's answer (a page for a
// person, not a message of the protocol).
func (l *lab) dropBody() {
	last := &l.steps[len(l.steps)-1]
	if i := slices.Index(last.Response, ""); i >= 0 {
		last.Response = last.Response[:i]
	}
}
