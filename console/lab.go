package console

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/internal/authparam"
	"github.com/yard-api/yard/internal/sigbase"
)

// The authentication lab runs a real exchange of one scheme against the
// API, in-process, and shows every message and every computation: what a
// client of that scheme sends and why. The person's password (typed into
// the form) and every secret the exchange obtains are used and never
// shown; "make a mistake" changes one thing so that the API refuses.

// labSchemes are the schemes the lab runs, in the order it lists them.
var labSchemes = []struct{ ID, Label string }{
	{"basic", "Basic (RFC 7617)"},
	{"digest", "Digest, SHA-256 (RFC 7616)"},
	{"digest-md5", "Digest, MD5 (RFC 7616; for clients that know no other)"},
	{"session", "Cookie session (POST /sessions)"},
	{"tokens", "Token pair (POST /auth/login, refresh, logout)"},
	{"pktoken", "Public-key token (Ed25519 JWS, checked against the JWKS)"},
	{"signed", "Signed request (API key, HMAC-SHA256 over the canonical string)"},
	{"oauth", "OAuth 1.0a, three legs (administrators: it registers a consumer)"},
	{"openid", "OpenID 2.0 sign-in to a relying party the lab plays"},
}

// labStep is one message of an exchange and what the lab computed.
type labStep struct {
	Title    string
	Request  []string
	Response []string
	Notes    []string
	Status   int
}

type labPage struct {
	Schemes []struct{ ID, Label string }
	Scheme  string
	Mistake bool
	Steps   []labStep
	Outcome string
}

// lab is one run of the lab.
type lab struct {
	cl       *call
	password string
	mistake  bool
	steps    []labStep
	me       string   // the person's own resource, the exchange's target
	hidden   []string // values never shown (a session's key), see scrub
}

// scrub replaces every hidden value in the steps with <hidden>.
func (l *lab) scrub() {
	fix := func(lines []string) {
		for i := range lines {
			for _, h := range l.hidden {
				lines[i] = strings.ReplaceAll(lines[i], h, "<hidden>")
			}
		}
	}
	for i := range l.steps {
		fix(l.steps[i].Request)
		fix(l.steps[i].Response)
		fix(l.steps[i].Notes)
	}
}

// handleLab shows the lab's form and, on POST, runs the chosen scheme.
func (c *Console) handleLab(cl *call, w http.ResponseWriter, r *http.Request) {
	page := labPage{Schemes: labSchemes, Scheme: "digest"}
	if r.Method == http.MethodPost {
		f := r.PostForm
		page.Scheme, page.Mistake = f.Get("scheme"), f.Get("mistake") != ""
		l := &lab{cl: cl, password: f.Get("password"), mistake: page.Mistake, me: "/v1/people/" + seg(cl.user.UserID)}
		run := map[string]func() bool{"basic": l.basic, "session": l.session,
			"digest": func() bool { return l.digest(auth.DigestSHA256) }, "digest-md5": func() bool { return l.digest(auth.DigestMD5) },
			"tokens": l.tokens, "pktoken": l.pkToken, "signed": l.signed, "oauth": l.oauth, "openid": l.openID}[page.Scheme]
		if run == nil {
			cl.problem = "Choose a scheme."
		} else if run() {
			page.Outcome = "The API accepted the credentials."
		} else {
			page.Outcome = "The API refused (see the last message)."
		}
		l.scrub()
		page.Steps = l.steps
	}
	c.render(w, r, cl, http.StatusOK, "lab", "Authentication lab", page)
}

// exchange sends one request without the console's session (unless
// session), records it as a step and returns the answer.
func (l *lab) exchange(title string, q request, shown []string, notes ...string) result {
	res := l.cl.send(q)
	step := labStep{Title: title, Request: append([]string{q.method + " " + l.cl.c.cfg.BaseURL + cmp.Or(q.shown, q.path)}, shown...),
		Status: res.Status, Notes: notes}
	for _, k := range []string{"WWW-Authenticate", "Location", "Set-Cookie", "Content-Type"} {
		for _, v := range res.Header.Values(k) {
			if k == "Set-Cookie" {
				v = maskCookie(v)
			}
			step.Response = append(step.Response, k+": "+v)
		}
	}
	if len(res.Body) > 0 {
		step.Response = append(step.Response, "", excerpt(maskJSON(res.Body)))
	}
	l.steps = append(l.steps, step)
	return res
}

// note adds lines to the last step (a run notes only after its first
// exchange).
func (l *lab) note(lines ...string) {
	last := &l.steps[len(l.steps)-1]
	last.Notes = append(last.Notes, lines...)
}

func (l *lab) pw() string {
	if l.mistake {
		return l.password + "-wrong"
	}
	return l.password
}

func (l *lab) curl(opts string, path string) string {
	return "curl -i " + opts + " " + shellQuote(l.cl.c.cfg.BaseURL+path)
}

// toMe is a GET of the person's own resource with authorization (an
// Authorization header's value, or none), which curl repeats with opts.
func (l *lab) toMe(authorization, opts string) request {
	q := request{method: "GET", path: l.me, curl: l.curl(opts, l.me)}
	if authorization != "" {
		q.header = map[string]string{"Authorization": authorization}
	}
	return q
}

// login posts the person's name and password as JSON to path, which
// curl repeats with opts before its own; mark follows the shown body.
func (l *lab) login(title, path, opts, password, mark string) result {
	body, _ := json.Marshal(map[string]string{"username": l.cl.user.Name, "password": password})
	name := `{"username":` + strconv.Quote(l.cl.user.Name)
	return l.exchange(title, request{method: "POST", path: path, body: body, header: map[string]string{"Content-Type": "application/json"},
		curl: l.curl(opts+`-H 'Content-Type: application/json' -d '`+name+`,"password":"…"}'`, path)},
		[]string{"Content-Type: application/json", "", name + `,"password":"<password>"}` + mark})
}

// own sends q with the console's session (something the run needs, such
// as an API key), records it as a step, and returns the answer.
func (l *lab) own(title string, q request, shown []string, notes ...string) result {
	q.session = true
	res := l.exchange(title, q, shown, notes...)
	l.steps[len(l.steps)-1].Response = []string{excerpt(maskJSON(res.Body))}
	return res
}

// remove deletes, with the console's session, what the run made at path
// (what names it), and notes it.
func (l *lab) remove(path, what string) {
	l.cl.send(request{method: "DELETE", path: path, session: true})
	l.note("The run's " + what + " is deleted (DELETE " + path + ").")
}

// basic: the challenge, then the credentials in the Authorization header.
func (l *lab) basic() bool {
	l.exchange("1. No credentials: the challenge", l.toMe("", ""), nil,
		"The server lists the schemes it takes, one WWW-Authenticate value each.")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(l.cl.user.Name+":"+l.pw()))
	res := l.exchange("2. Basic credentials", l.toMe(basic, "-u "+shellQuote(l.cl.user.Name)),
		[]string{"Authorization: Basic base64(" + l.cl.user.Name + ":<password>)" + mistakeNote(l.mistake)},
		"The value is base64 of name:password: an encoding, not a protection; only TLS keeps it secret.")
	return res.ok()
}

func mistakeNote(m bool) string {
	if m {
		return "   ← the mistake: a wrong password"
	}
	return ""
}

// digest: the challenges, the one of the chosen algorithm (SHA-256 or
// MD5), HA1, HA2 and the response (RFC 7616 §3.4.1).
func (l *lab) digest(alg string) bool {
	res := l.exchange("1. No credentials: the challenges", l.toMe("", ""), nil)
	var params map[string]string
	var offered []string
	for _, m := range authparam.DigestChallenges(res.Header) {
		offered = append(offered, m["algorithm"])
		if strings.EqualFold(m["algorithm"], alg) {
			params = m
		}
	}
	l.note("The server offers Digest with: " + strings.Join(offered, ", ") + " (a challenge each, the preferred first, RFC 7616 §3.7).")
	if params == nil {
		l.note("No Digest " + alg + " challenge: this server does not offer it.")
		return false
	}
	if alg == auth.DigestMD5 {
		l.note("MD5 is broken for collisions; the server still offers it for clients that know no other, and a client that knows SHA-256 takes that one.")
	}
	cnonce := randomHex(8)
	const nc = "00000001"
	a := authparam.AnswerDigest(params, alg, l.cl.user.Name, l.pw(), "GET", l.me, nc, cnonce)
	l.note("The client picks the "+alg+" challenge and computes (RFC 7616 §3.4.1):",
		"HA1 = "+alg+"(\""+l.cl.user.Name+":"+params["realm"]+":<password>\") = "+a.HA1[:8]+"… (a password equivalent: not shown whole)"+mistakeNote(l.mistake),
		"HA2 = "+alg+"(\"GET:"+l.me+"\") = "+a.HA2,
		"response = "+alg+"(HA1:nonce:nc:cnonce:qop:HA2) = "+alg+"(\"…:"+params["nonce"]+":"+nc+":"+cnonce+":auth:"+a.HA2+"\")",
		"         = "+a.Response)
	res = l.exchange("2. The answer to the challenge", l.toMe(a.Authorization, "--digest -u "+shellQuote(l.cl.user.Name)), []string{"Authorization: " + a.Authorization},
		"The server recomputes the response from its stored HA1 for "+alg+" and compares; the nonce is its own (HMAC with a time), nc may not repeat.")
	return res.ok()
}

// session: POST /sessions, the cookie on a request, DELETE /sessions.
func (l *lab) session() bool {
	res := l.login("1. Start a session", "/sessions", "-c cookies.txt ", l.pw(), mistakeNote(l.mistake))
	var key string
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		if c.Name == auth.SessionCookie {
			key = c.Value
		}
	}
	if !res.ok() || key == "" {
		return false
	}
	l.hidden = append(l.hidden, key)
	l.note("The cookie is Secure, HttpOnly, SameSite=Lax; its key has 256 random bits and the store keeps only its hash.")
	cookie := map[string]string{"Cookie": auth.SessionCookie + "=" + key}
	shown := []string{"Cookie: " + auth.SessionCookie + "=<the key>"}
	res = l.exchange("2. A request with the cookie", request{method: "GET", path: l.me, header: cookie, curl: l.curl("-b cookies.txt", l.me)}, shown)
	l.exchange("3. End the session", request{method: "DELETE", path: "/sessions/" + key, shown: "/sessions/<the key>",
		header: cookie, curl: l.curl("-b cookies.txt -X DELETE", "/sessions/KEY")}, shown)
	return res.ok()
}

// jwtParts decodes a JWS's header and claims for display.
func jwtParts(token string) (header, claims string, parts []string) {
	parts = strings.Split(token, ".")
	if len(parts) != 3 {
		return "", "", nil
	}
	dec := func(s string) string {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return "(not base64url)"
		}
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") != nil {
			return string(b)
		}
		return out.String()
	}
	return dec(parts[0]), dec(parts[1]), parts
}

// tokens: login, a request with the access token, refresh, logout (or,
// as the mistake, the old refresh token again).
func (l *lab) tokens() bool {
	var pair struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	}
	if res := l.login("1. Log in", "/auth/login", "", l.password, ""); !res.decode(&pair) {
		return false
	}
	hd, cl, _ := jwtParts(pair.Access)
	l.note("The access token is a JWS: header.claims.signature, each base64url. Its header:", hd, "Its claims:", cl)
	if res := l.exchange("2. A request with the access token", l.toMe("Bearer "+pair.Access, `-H "Authorization: Bearer $ACCESS"`),
		[]string{"Authorization: Bearer <the access token>"}); !res.ok() {
		return false
	}
	// A POST to path with a refresh token.
	post := func(path, refresh string) request {
		return request{method: "POST", path: path, header: map[string]string{"Authorization": "Bearer " + refresh},
			curl: l.curl(`-X POST -H "Authorization: Bearer $REFRESH"`, path)}
	}
	old := pair.Refresh
	res := l.exchange("3. Refresh: a new pair", post("/auth/refresh", old), []string{"Authorization: Bearer <the refresh token>"},
		"A refresh token works once; the answer is a new pair with the person's current roles.")
	if !res.decode(&pair) {
		return false
	}
	if l.mistake {
		res = l.exchange("4. The mistake: the old refresh token again", post("/auth/refresh", old), []string{"Authorization: Bearer <the first refresh token, used already>"},
			"A reused refresh token revokes its whole family: the pair of step 3 is revoked too.")
		return res.ok()
	}
	res = l.exchange("4. Log out: the family revoked", post("/auth/logout", pair.Refresh), []string{"Authorization: Bearer <the new refresh token>"})
	return res.ok()
}

// pkToken: the token, the JWKS, the signature checked here, the token
// used (or, as the mistake, one with a changed claim).
func (l *lab) pkToken() bool {
	var tok struct {
		Token string `json:"token"`
	}
	if res := l.login("1. Ask for a public-key token", "/auth/pk-token", "", l.password, ""); !res.decode(&tok) {
		return false
	}
	hd, claims, parts := jwtParts(tok.Token)
	if parts == nil {
		l.note("The token is not a JWS.")
		return false
	}
	l.note("Header:", hd, "Claims:", claims)
	var head struct{ Kid string }
	_ = json.Unmarshal([]byte(hd), &head)
	var jwks struct {
		Keys []struct{ Kid, Kty, Crv, X string }
	}
	res := l.exchange("2. The server's public keys", request{method: "GET", path: "/.well-known/jwks.json", curl: l.curl("", "/.well-known/jwks.json")}, nil)
	_ = json.Unmarshal(res.Body, &jwks)
	payload := parts[1]
	if l.mistake {
		var m map[string]any
		b, _ := base64.RawURLEncoding.DecodeString(payload)
		_ = json.Unmarshal(b, &m)
		m["exp"] = time.Now().Add(24 * 365 * time.Hour).Unix()
		b, _ = json.Marshal(m)
		payload = base64.RawURLEncoding.EncodeToString(b)
	}
	signed := parts[0] + "." + payload
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	verdict := "no key with kid " + head.Kid + " in the JWKS"
	for _, k := range jwks.Keys {
		if k.Kid != head.Kid || k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			continue
		}
		if ed25519.Verify(ed25519.PublicKey(pub), []byte(signed), sig) {
			verdict = "valid: Ed25519 over header.claims with the key " + k.Kid
		} else {
			verdict = "NOT valid: the signature does not cover these bytes"
		}
	}
	l.note("The console checks the signature with the JWKS key whose kid the header names: "+verdict+".",
		"A server started with only the public key (or the JWKS URL) checks tokens the same way, without the store.")
	shown := "Authorization: Bearer <the token>"
	if l.mistake {
		shown = "Authorization: Bearer <the token with exp pushed a year on, the signature unchanged>   ← the mistake"
	}
	res = l.exchange("3. A request with the token", l.toMe("Bearer "+signed+"."+parts[2], `-H "Authorization: Bearer $TOKEN"`), []string{shown})
	return res.ok()
}

// signed: an API key made for the run, the canonical string, the
// signature, the request (or, as the mistake, one signed with a stale
// timestamp), and the key deleted.
func (l *lab) signed() bool {
	var key struct{ APIKey, Secret string }
	res := l.own("1. An API key for this run (with the console's session)", request{method: "POST", path: "/apikeys"}, nil,
		"The secret is shown once to the client; here it is used and not shown.")
	if !res.decode(&key) || key.APIKey == "" {
		return false
	}
	defer l.remove("/apikeys/"+seg(key.APIKey), "API key")
	signedAt := time.Now()
	if l.mistake {
		signedAt = signedAt.Add(-10 * time.Minute)
	}
	ts := strconv.FormatInt(signedAt.Unix(), 10)
	pairs := [][2]string{{"apiKey", key.APIKey}, {"max", "5"}, {"timestamp", ts}}
	canon := sigbase.CanonicalString("/v1/dogs", pairs)
	sig := sigbase.Sign([]byte(key.Secret), canon)
	q := url.Values{"apiKey": {key.APIKey}, "max": {"5"}, "timestamp": {ts}, "signature": {sig}}
	path := "/v1/dogs?" + q.Encode()
	notes := []string{"The canonical string: the path, ?, every pair but signature, names lower-cased, sorted, raw values:",
		canon, "signature = hex(HMAC-SHA256(secret, canonical string)) = " + sig}
	if l.mistake {
		notes = append(notes, "The mistake: a stale timestamp, 10 minutes old (the signature is right; the server accepts 300 seconds either way of its clock, and its refusal names the timestamps it accepts).")
	}
	res = l.exchange("2. The signed request", request{method: "GET", path: path, curl: l.curl("", path)}, nil, notes...)
	return res.ok()
}

// maskCookie hides a Set-Cookie's value.
func maskCookie(v string) string {
	name, rest, ok := strings.Cut(v, "=")
	if !ok {
		return v
	}
	if i := strings.IndexByte(rest, ';'); i >= 0 {
		return name + "=<hidden>" + rest[i:]
	}
	return name + "=<hidden>"
}

// maskJSON hides the secrets of a JSON answer: tokens, keys' secrets,
// passwords.
func maskJSON(b []byte) []byte {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	for _, k := range []string{"access_token", "refresh_token", "token", "secret", "password"} {
		if _, ok := m[k]; ok {
			m[k] = "<hidden>"
		}
	}
	out, _ := json.Marshal(m)
	return out
}

// excerpt is the start of a body.
func excerpt(b []byte) string {
	if len(b) > 1500 {
		return string(b[:1500]) + "…"
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
