package conform

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/sigbase"
)

// jwtPart decodes part i (0 header, 1 claims) of a compact JWS.
func jwtPart(tok string, i int) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// tamper changes the last character of the token's signature.
func tamper(tok string) string {
	if tok == "" {
		return "x"
	}
	last := tok[len(tok)-2]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return tok[:len(tok)-2] + string(repl) + tok[len(tok)-1:]
}

// pair signs in at /auth/login as p.
func (t *T) pair(p *person) (access, refresh string) {
	r := t.Expect(200, "POST", "/auth/login", login(p))
	access, refresh = r.Str("access_token"), r.Str("refresh_token")
	t.Check(access != "" && refresh != "", "the login answered no access_token or refresh_token")
	// Logging out revokes the family, whichever of its tokens is current.
	t.k.created("token family", "POST", "/auth/logout", []opt{bearer(refresh)}, 204, 400, 401)
	return access, refresh
}

func tokenPairChecks() []Check {
	const p, doc = "token-pair", "docs/auth.md#token-pair-jwt"
	return []Check{
		def(p, "login", Must, doc, `POST /auth/login {"username","password"}`,
			`200 {"access_token","refresh_token","token_type":"Bearer","expires_in","refresh_expires_in"}, both JWTs with sub = the user id and an exp`, func(t *T) {
				r := t.Expect(200, "POST", "/auth/login", login(t.owner()))
				t.Check(r.Str("token_type") == "Bearer", "token_type %q", r.Str("token_type"))
				t.Check(r.Num("expires_in") > 0 && r.Num("refresh_expires_in") > r.Num("expires_in"), "expires_in %v refresh_expires_in %v", r.JSON()["expires_in"], r.JSON()["refresh_expires_in"])
				for _, name := range []string{"access_token", "refresh_token"} {
					c := jwtPart(r.Str(name), 1)
					t.Check(c != nil && c["sub"] == t.owner().id && c["exp"] != nil, "%s is not a JWT with sub %q and exp: %v", name, t.owner().id, c)
				}
			}),
		def(p, "access", Must, doc, "GET /v1/people/{id} with Authorization: Bearer <access token>",
			"200", func(t *T) {
				a, _ := t.pair(t.owner())
				t.Expect(200, "GET", t.me(), bearer(a))
			}),
		def(p, "refresh", Must, doc, "POST /auth/refresh with Authorization: Bearer <refresh token>",
			"200 with a new access and refresh token; the new access token works", func(t *T) {
				a, rt := t.pair(t.owner())
				r := t.Expect(200, "POST", "/auth/refresh", bearer(rt))
				t.Check(r.Str("refresh_token") != "" && r.Str("refresh_token") != rt && r.Str("access_token") != "" && r.Str("access_token") != a, "the refresh did not issue a new pair")
				t.Expect(200, "GET", t.me(), bearer(r.Str("access_token")))
			}),
		def(p, "reuse", Must, doc, "refresh, then present the old refresh token again, then the new one",
			`400 problem …/problems/refresh-token-invalid with WWW-Authenticate: Bearer error="invalid_token"; the new one is refused too (the family is revoked)`, func(t *T) {
				_, rt := t.pair(t.owner())
				r := t.Expect(200, "POST", "/auth/refresh", bearer(rt))
				again := t.Do("POST", "/auth/refresh", bearer(rt))
				t.Problem(again, 400, "refresh-token-invalid")
				t.Check(strings.Contains(strings.Join(again.Header.Values("WWW-Authenticate"), ","), `error="invalid_token"`), "WWW-Authenticate %q lacks error=\"invalid_token\"", again.Header.Values("WWW-Authenticate"))
				t.Problem(t.Do("POST", "/auth/refresh", bearer(r.Str("refresh_token"))), 400, "refresh-token-invalid")
			}),
		def(p, "access-as-refresh", Must, doc, "POST /auth/refresh with the access token",
			"400 problem …/problems/refresh-token-invalid", func(t *T) {
				a, _ := t.pair(t.owner())
				t.Problem(t.Do("POST", "/auth/refresh", bearer(a)), 400, "refresh-token-invalid")
			}),
		def(p, "tampered", Must, doc, "an access token with its signature altered",
			"401", func(t *T) {
				a, _ := t.pair(t.owner())
				t.Expect(401, "GET", t.me(), bearer(tamper(a)))
			}),
		def(p, "logout", Must, doc, "POST /auth/logout with the refresh token, then refresh with it",
			"204, then 400", func(t *T) {
				_, rt := t.pair(t.owner())
				t.Expect(204, "POST", "/auth/logout", bearer(rt))
				t.Expect(400, "POST", "/auth/refresh", bearer(rt))
			}),
		def(p, "rights-on-refresh", Must, doc, "sign in as a person, make them an administrator, use the old access token, then refresh",
			"the old access token keeps the old rights (403 on GET /v1/people); the refreshed one has the new (200)", func(t *T) {
				q := t.newPerson("rights")
				a, rt := t.pair(q)
				t.Expect(403, "GET", "/v1/people?max=1", bearer(a))
				t.Status(t.Do("PATCH", "/v1/people/"+q.id, basic(t.k.admin), jsonBody(map[string]any{"roles": []string{"user", "admin"}})), 200, 204)
				t.Expect(403, "GET", "/v1/people?max=1", bearer(a))
				r := t.Expect(200, "POST", "/auth/refresh", bearer(rt))
				t.Expect(200, "GET", "/v1/people?max=1", bearer(r.Str("access_token")))
			}),
		def(p, "wrong-password", Must, doc, "POST /auth/login with a wrong password",
			"401", func(t *T) {
				t.Expect(401, "POST", "/auth/login", login(&person{name: t.owner().name, password: "wrong-" + randomHex(4)}))
			}),
	}
}

// pkToken asks /auth/pk-token for a token with the options.
func (t *T) pkToken(opts map[string]any) string {
	body := map[string]any{"username": t.owner().name, "password": t.owner().password}
	maps.Copy(body, opts)
	r := t.Expect(200, "POST", "/auth/pk-token", jsonBody(body))
	t.Check(r.Str("token") != "", "no token in the answer")
	return r.Str("token")
}

func pkTokenChecks() []Check {
	const p, doc = "pk-token", "docs/auth.md#public-key-token"
	return []Check{
		def(p, "issue", Must, doc, `POST /auth/pk-token {"username","password"}`,
			`200 {"token"}: a JWS with alg EdDSA, a kid, and exp in its claims`, func(t *T) {
				tok := t.pkToken(nil)
				h, c := jwtPart(tok, 0), jwtPart(tok, 1)
				t.Check(h != nil && h["alg"] == "EdDSA" && h["kid"] != nil, "the token's header %v, want alg EdDSA and a kid", h)
				t.Check(c != nil && c["exp"] != nil, "the token's claims %v have no exp", c)
			}),
		def(p, "jwks", Must, doc, "GET /.well-known/jwks.json; verify the token's signature with the key its kid names",
			"an OKP Ed25519 key with that kid, and the signature verifies", func(t *T) {
				tok := t.pkToken(nil)
				kid, _ := jwtPart(tok, 0)["kid"].(string)
				r := t.Expect(200, "GET", "/.well-known/jwks.json")
				keys, _ := r.JSON()["keys"].([]any)
				for _, k := range keys {
					m, _ := k.(map[string]any)
					if m["kid"] != kid {
						continue
					}
					t.Check(m["kty"] == "OKP" && m["crv"] == "Ed25519", "the key %v is not OKP Ed25519", m)
					x, err := base64.RawURLEncoding.DecodeString(m["x"].(string))
					t.Check(err == nil && len(x) == ed25519.PublicKeySize, "the key's x is not an Ed25519 public key")
					i := strings.LastIndexByte(tok, '.')
					sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
					t.Check(err == nil && ed25519.Verify(ed25519.PublicKey(x), []byte(tok[:i]), sig), "the token's signature does not verify with the JWKS key %s", kid)
					return
				}
				t.Fatalf("the JWKS has no key with kid %q", kid)
			}),
		def(p, "use", Must, doc, "GET /v1/people/{id} with Authorization: Bearer <pk token>",
			"200", func(t *T) {
				t.Expect(200, "GET", t.me(), bearer(t.pkToken(nil)))
			}),
		def(p, "tampered", Must, doc, "a pk token whose claims were changed (exp a year later), signature kept",
			"401", func(t *T) {
				tok := t.pkToken(nil)
				parts := strings.Split(tok, ".")
				c := jwtPart(tok, 1)
				c["exp"] = time.Now().Add(365 * 24 * time.Hour).Unix()
				b, _ := json.Marshal(c)
				parts[1] = base64.RawURLEncoding.EncodeToString(b)
				t.Expect(401, "GET", t.me(), bearer(strings.Join(parts, ".")))
			}),
		def(p, "password-hash", Must, doc, `a token made with "include_password_hash":true, sent without X-Password, with a wrong one, with the right one`,
			"a pwh claim; 401, 401, then 200", func(t *T) {
				tok := t.pkToken(map[string]any{"include_password_hash": true})
				t.Check(jwtPart(tok, 1)["pwh"] != nil, "the token has no pwh claim")
				t.Expect(401, "GET", t.me(), bearer(tok))
				t.Expect(401, "GET", t.me(), bearer(tok), header("X-Password", "wrong-"+randomHex(4)))
				t.Expect(200, "GET", t.me(), bearer(tok), header("X-Password", t.owner().password))
			}),
		def(p, "bind-ip", Should, doc, `a token made with "bind_ip":true, used from the same address`,
			"an ip claim; 200", func(t *T) {
				tok := t.pkToken(map[string]any{"bind_ip": true})
				t.Check(jwtPart(tok, 1)["ip"] != nil, "the token has no ip claim")
				t.Expect(200, "GET", t.me(), bearer(tok))
			}),
	}
}

// apiKey is a key and secret of POST /apikeys.
type apiKey struct{ key, secret string }

func (t *T) apiKey() apiKey {
	r := t.Expect(201, "POST", "/apikeys", basic(t.owner()))
	k := apiKey{r.Str("apiKey"), r.Str("secret")}
	t.Check(k.key != "" && k.secret != "", "the answer holds no apiKey and secret")
	t.Location(r, "/apikeys/"+k.key)
	t.k.created("API key", "DELETE", "/apikeys/"+url.PathEscape(k.key), []opt{basic(t.owner())})
	return k
}

// signed returns path?query with timestamp, apiKey and signature added
// (docs/auth.md, "Signed requests").
func (k apiKey) signed(path, query string, ts time.Time) string {
	q := query
	if q != "" {
		q += "&"
	}
	q += "timestamp=" + strconv.FormatInt(ts.Unix(), 10) + "&apiKey=" + url.QueryEscape(k.key)
	pairs, _ := sigbase.ParseRawQuery(q)
	sig := sigbase.Sign([]byte(k.secret), sigbase.CanonicalString(path, pairs))
	return path + "?" + q + "&signature=" + sig
}

func signedChecks() []Check {
	const p, doc = "signed", "docs/auth.md#signed-requests"
	return []Check{
		def(p, "key", Must, doc, "POST /apikeys as a person",
			`201, Location /apikeys/{apiKey}, {"apiKey","secret"}`, func(t *T) { t.apiKey() }),
		def(p, "ok", Must, doc, "GET /v1/dogs?max=5&offset=0 signed: timestamp, apiKey, signature = hex HMAC-SHA256 of the path and the sorted, lower-cased pairs",
			"200", func(t *T) {
				t.Expect(200, "GET", t.apiKey().signed("/v1/dogs", "max=5&offset=0", time.Now()))
			}),
		def(p, "replay", Must, doc, "the same signed request twice",
			"200, then 401", func(t *T) {
				k := t.apiKey()
				u := k.signed(t.me(), "", time.Now())
				t.Expect(200, "GET", u)
				t.Expect(401, "GET", u)
			}),
		def(p, "expired", Must, doc, "a signed request with a timestamp 1000 s old",
			"401", func(t *T) {
				t.Expect(401, "GET", t.apiKey().signed(t.me(), "", time.Now().Add(-1000*time.Second)))
			}),
		def(p, "bad-signature", Must, doc, "a signed request whose query was changed after signing",
			"401", func(t *T) {
				k := t.apiKey()
				u := k.signed("/v1/dogs", "max=5", time.Now())
				t.Expect(401, "GET", strings.Replace(u, "max=5", "max=6", 1))
			}),
		def(p, "method-binding", Must, "docs/auth.md#binding-the-method-and-the-body", "a signed GET whose signed query holds method=POST",
			"401: the bound method does not match", func(t *T) {
				t.Expect(401, "GET", t.apiKey().signed(t.me(), "method=POST", time.Now()))
			}),
		def(p, "deleted-key", Must, doc, "DELETE /apikeys/{apiKey}, then a signed request with it",
			"204, then 401", func(t *T) {
				k := t.apiKey()
				t.Expect(204, "DELETE", "/apikeys/"+k.key, basic(t.owner()))
				t.Expect(401, "GET", k.signed(t.me(), "", time.Now()))
			}),
	}
}
