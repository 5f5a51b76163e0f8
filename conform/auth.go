package conform

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/yard-api/yard/internal/authparam"
)

// me is the path of the owner's own record, which every scheme reads.
func (t *T) me() string { return "/v1/people/" + url.PathEscape(t.owner().id) }

func basicChecks() []Check {
	const p, doc = "basic", "docs/auth.md#basic"
	return []Check{
		def(p, "ok", Must, doc, "GET /v1/people/{id} with Authorization: Basic (the person's own record)",
			"200 with the record", func(t *T) {
				r := t.Expect(200, "GET", t.me(), basic(t.owner()))
				t.Check(r.Str("id") == t.owner().id, "the record's id %q, want %q", r.Str("id"), t.owner().id)
			}),
		def(p, "wrong-password", Must, doc, "the same with a wrong password",
			"401 problem with a Basic challenge", func(t *T) {
				wrong := &person{name: t.owner().name, password: "wrong-" + randomHex(4)}
				r := t.Do("GET", t.me(), basic(wrong))
				t.Problem(r, 401, "unauthorized")
				wantChallenges(t, r.Header, "Basic")
			}),
		def(p, "two-authorization", Must, "docs/api.md#http", "two Authorization headers (Basic twice)",
			"400", func(t *T) {
				req := func(r *http.Request, _ *reqBody) {
					r.SetBasicAuth(t.owner().name, t.owner().password)
					r.Header.Add("Authorization", r.Header.Get("Authorization"))
				}
				t.Expect(400, "GET", t.me(), req)
			}),
	}
}

// digestChallenge fetches the Digest challenge of the algorithm.
func (t *T) digestChallenge(target, algorithm string) map[string]string {
	r := t.Expect(401, "GET", target)
	for _, ch := range authparam.DigestChallenges(r.Header) {
		if strings.EqualFold(ch["algorithm"], algorithm) {
			return ch
		}
	}
	t.Fatalf("no Digest challenge with algorithm=%s in %q", algorithm, r.Header.Values("WWW-Authenticate"))
	return nil
}

// digestAuth answers a challenge as the owner for a GET of uri (RFC 7616
// §3.4, qop=auth).
func (t *T) digestAuth(ch map[string]string, algorithm, password, uri string, nc int, cnonce string) opt {
	a := authparam.AnswerDigest(ch, algorithm, t.owner().name, password, "GET", uri, fmt.Sprintf("%08x", nc), cnonce)
	return header("Authorization", a.Authorization)
}

func digestChecks() []Check {
	const p, doc = "digest", "docs/auth.md#digest-rfc-7616"
	ok := func(alg string) func(t *T) {
		return func(t *T) {
			ch := t.digestChallenge(t.me(), alg)
			r := t.Expect(200, "GET", t.me(), t.digestAuth(ch, alg, t.owner().password, t.me(), 1, randomHex(8)))
			t.Check(r.Str("id") == t.owner().id, "the record's id %q", r.Str("id"))
		}
	}
	return []Check{
		def(p, "challenge", Must, doc, "GET /v1/people/{id} without credentials",
			"401 with Digest challenges for SHA-256 and MD5, each with realm, nonce and qop auth", func(t *T) {
				for _, alg := range []string{"SHA-256", "MD5"} {
					ch := t.digestChallenge(t.me(), alg)
					t.Check(ch["realm"] != "" && ch["nonce"] != "" && strings.Contains(ch["qop"], "auth"), "the %s challenge %v lacks realm, nonce or qop=auth", alg, ch)
				}
			}),
		def(p, "sha-256", Must, doc, "the request again with Digest SHA-256 credentials (qop=auth, nc=1)", "200", ok("SHA-256")),
		def(p, "md5", Must, doc, "the request again with Digest MD5 credentials", "200", ok("MD5")),
		def(p, "nc-replay", Must, doc, "the same Digest Authorization (same nonce and nc) twice, then nc=2",
			"200, 401 for the replay, then 200", func(t *T) {
				ch := t.digestChallenge(t.me(), "SHA-256")
				cn := randomHex(8)
				a := t.digestAuth(ch, "SHA-256", t.owner().password, t.me(), 1, cn)
				t.Expect(200, "GET", t.me(), a)
				t.Expect(401, "GET", t.me(), a)
				t.Expect(200, "GET", t.me(), t.digestAuth(ch, "SHA-256", t.owner().password, t.me(), 2, cn))
			}),
		def(p, "wrong-uri", Must, doc, "Digest credentials computed for another uri than the request's",
			"401 (or 400)", func(t *T) {
				ch := t.digestChallenge(t.me(), "SHA-256")
				t.Status(t.Do("GET", t.me(), t.digestAuth(ch, "SHA-256", t.owner().password, "/v1/dogs", 1, randomHex(8))), 401, 400)
			}),
		def(p, "wrong-password", Must, doc, "Digest credentials made with a wrong password",
			"401", func(t *T) {
				ch := t.digestChallenge(t.me(), "SHA-256")
				t.Expect(401, "GET", t.me(), t.digestAuth(ch, "SHA-256", "wrong-"+randomHex(4), t.me(), 1, randomHex(8)))
			}),
	}
}

// login is the JSON body of the sign-in endpoints.
func login(p *person) opt {
	return jsonBody(map[string]any{"username": p.name, "password": p.password})
}

// session signs in with POST /sessions and returns the key, the cookie
// header and the response.
func (t *T) session() (key, cookie string, r *Resp) {
	r = t.Expect(201, "POST", "/sessions", login(t.owner()))
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "sessionToken" {
			cookie = "sessionToken=" + c.Value
			key = c.Value
		}
	}
	t.Check(cookie != "", "Set-Cookie %q has no sessionToken", r.Header.Values("Set-Cookie"))
	t.k.created("session", "DELETE", "/sessions/"+url.PathEscape(key), nil, 204, 404)
	return key, cookie, r
}

func sessionChecks() []Check {
	const p, doc = "sessions", "docs/auth.md#cookie-session"
	return []Check{
		def(p, "login", Must, doc, `POST /sessions {"username","password"}`,
			"201, Location /sessions/{key}, Set-Cookie sessionToken=<key> with Secure, HttpOnly and Path=/", func(t *T) {
				key, _, r := t.session()
				t.Location(r, "/sessions/"+key)
				sc := strings.Join(r.Header.Values("Set-Cookie"), "; ")
				for _, attr := range []string{"Secure", "HttpOnly", "Path=/"} {
					t.Check(strings.Contains(sc, attr), "Set-Cookie %q lacks %s", sc, attr)
				}
				t.Expect(204, "DELETE", "/sessions/"+key)
			}),
		def(p, "cookie", Must, doc, "GET /v1/people/{id} with Cookie: sessionToken=<key>",
			"200", func(t *T) {
				key, cookie, _ := t.session()
				t.Expect(200, "GET", t.me(), header("Cookie", cookie))
				t.Expect(204, "DELETE", "/sessions/"+key)
			}),
		def(p, "form-login", Should, doc, "POST /sessions as an HTML form (username, password)",
			"201 with the cookie", func(t *T) {
				form := url.Values{"username": {t.owner().name}, "password": {t.owner().password}}
				r := t.Do("POST", "/sessions", formBody(form))
				if loc := r.Header.Get("Location"); loc != "" {
					t.k.created("session", "DELETE", loc, nil, 204, 404)
				}
				t.Status(r, 201)
				if loc := r.Header.Get("Location"); loc != "" {
					t.Expect(204, "DELETE", loc)
				}
			}),
		def(p, "logout", Must, doc, "DELETE /sessions/{key}, then the cookie again",
			"204, then 401", func(t *T) {
				key, cookie, _ := t.session()
				t.Expect(204, "DELETE", "/sessions/"+key)
				t.Expect(401, "GET", t.me(), header("Cookie", cookie))
			}),
		def(p, "resource", Should, doc, "GET /sessions/{key} while the session lives, and after DELETE",
			"200 with the session (userId the person), then 404", func(t *T) {
				key, _, _ := t.session()
				r := t.Expect(200, "GET", "/sessions/"+key)
				t.Check(r.Str("userId") == t.owner().id, "the session's userId %q, want %q", r.Str("userId"), t.owner().id)
				t.Expect(204, "DELETE", "/sessions/"+key)
				t.Expect(404, "GET", "/sessions/"+key)
			}),
		def(p, "unknown-key", Must, doc, "Cookie: sessionToken=<a key that was never issued>",
			"401", func(t *T) {
				t.Expect(401, "GET", t.me(), header("Cookie", "sessionToken="+randomHex(32)))
			}),
		def(p, "no-fallback", Must, "docs/auth.md#which-credentials-count", "a valid session cookie with a malformed Authorization: Bearer token",
			"401: credentials present but wrong are refused, never passed over", func(t *T) {
				key, cookie, _ := t.session()
				t.Expect(401, "GET", t.me(), header("Cookie", cookie), bearer("not-a-token"))
				t.Expect(204, "DELETE", "/sessions/"+key)
			}),
	}
}
