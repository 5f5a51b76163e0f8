package httpapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// authEnv is a running API with every scheme, a user alice owning a dog,
// and a settable clock.
type authEnv struct {
	*apitest.Env
	kit    *auth.Kit
	clock  *storetest.Clock
	alice  *yard.User
	dogURI string
	http   *http.Client // trusts the test server, follows no redirects, validates nothing
}

func startAuth(t *testing.T, db *store.DB, mod func(*auth.Config)) *authEnv {
	t.Helper()
	clock := storetest.NewClock(time.Now())
	var kit *auth.Kit
	env := apitest.Start(t, db, apitest.WithAuthKit(t, db, &kit, func(c *auth.Config) {
		c.Now = clock.Now
		c.Limiter = auth.NewLoginLimiter(0, nil)
		if mod != nil {
			mod(c)
		}
	}))
	e := &authEnv{Env: env, kit: kit, clock: clock}
	e.alice = env.CreateUser("alice", pw)
	env.CreateUser("bob", pw)
	resp := env.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw,
		Body: map[string]any{"name": "Rex", "email": "rex@example.org"}})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %s", resp.StatusCode, resp.Body)
	}
	e.dogURI = "/v1/dogs/" + resp.Map(t)["id"].(string) + "/"
	pool := x509.NewCertPool()
	pool.AddCert(env.Server.Certificate())
	e.http = &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(e.http.CloseIdleConnections)
	return e
}

func (e *authEnv) client(a client.Authenticator) *client.Client {
	return client.New(e.URL, e.http, a)
}

// raw sends one request with the given headers and no other credentials.
func (e *authEnv) raw(t *testing.T, method, path string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, e.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func wantStatus(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %d, want %d", what, got, want)
	}
}

func TestEachSchemeReadsADog(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, nil)
		ctx := context.Background()
		anon := e.client(nil)

		session, err := client.NewSession(ctx, anon, "alice", pw)
		if err != nil {
			t.Fatal(err)
		}
		pk, err := client.NewPKToken(ctx, anon, "alice", pw, client.PKTokenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pkBound, err := client.NewPKToken(ctx, anon, "alice", pw, client.PKTokenOptions{BindIP: true, IncludePasswordHash: true})
		if err != nil {
			t.Fatal(err)
		}
		signed, err := e.client(&client.Basic{Username: "alice", Password: pw}).CreateAPIKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			a    client.Authenticator
		}{
			{"basic", &client.Basic{Username: "alice", Password: pw}},
			{"digest SHA-256", &client.Digest{Username: "alice", Password: pw}},
			{"digest MD5", &client.Digest{Username: "alice", Password: pw, Algorithm: "MD5"}},
			{"session", session},
			{"token pair", &client.TokenPair{Username: "alice", Password: pw}},
			{"pk-token", pk},
			{"pk-token bound to ip with password hash", pkBound},
			{"signed request", signed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := e.client(tc.a)
				for i := range 3 { // the second and third reuse the credentials
					var dog map[string]any
					if err := c.Get(ctx, e.dogURI, &dog); err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if dog["name"] != "Rex" {
						t.Fatalf("dog = %v", dog)
					}
				}
			})
		}
		// A write through a cookie session from a non-browser client (no
		// Origin, no Sec-Fetch-Site) is allowed.
		if err := e.client(session).JSON(ctx, "PATCH", e.dogURI, map[string]any{"name": "Rexy"}, nil); err != nil {
			t.Errorf("PATCH with session: %v", err)
		}
		if err := session.Logout(ctx, anon); err != nil {
			t.Fatal(err)
		}
		if err := e.client(&client.Session{}).Get(ctx, e.dogURI, nil); client.StatusOf(err) != 401 {
			t.Errorf("no session: got %v, want 401", err)
		}
	})
}

func TestDigestRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.NonceTTL = time.Minute })
		ctx := context.Background()

		// Both challenges in one 401.
		resp := e.raw(t, "GET", e.dogURI, nil)
		var digests []string
		for _, v := range resp.Header.Values("WWW-Authenticate") {
			if strings.HasPrefix(v, "Digest ") {
				digests = append(digests, v)
			}
		}
		if len(digests) != 2 || !strings.Contains(digests[0], "algorithm=SHA-256") || !strings.Contains(digests[1], "algorithm=MD5") ||
			!strings.Contains(digests[0], `qop="auth"`) {
			t.Fatalf("Digest challenges = %q", digests)
		}

		d := &client.Digest{Username: "alice", Password: pw}
		c := e.client(d)
		if err := c.Get(ctx, e.dogURI, nil); err != nil {
			t.Fatal(err)
		}
		// A replayed Authorization header (same nonce and nc) is refused.
		req, _ := http.NewRequest("GET", e.URL+e.dogURI, nil)
		if err := d.Apply(c, req); err != nil {
			t.Fatal(err)
		}
		hdr := req.Header.Get("Authorization")
		wantStatus(t, "first use", e.raw(t, "GET", e.dogURI, map[string]string{"Authorization": hdr}).StatusCode, 200)
		wantStatus(t, "replayed nc", e.raw(t, "GET", e.dogURI, map[string]string{"Authorization": hdr}).StatusCode, 401)
		// The same header for another URI is refused.
		wantStatus(t, "other uri", e.raw(t, "GET", "/v1/dogs", map[string]string{"Authorization": hdr}).StatusCode, 401)

		// A stale nonce: the right response gets stale=true, and the
		// client retries with the new nonce.
		e.clock.Advance(2 * time.Minute)
		req, _ = http.NewRequest("GET", e.URL+e.dogURI, nil)
		_ = d.Apply(c, req)
		resp = e.raw(t, "GET", e.dogURI, map[string]string{"Authorization": req.Header.Get("Authorization")})
		wantStatus(t, "stale nonce", resp.StatusCode, 401)
		if !strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), "|"), "stale=true") {
			t.Errorf("stale nonce: challenges %q lack stale=true", resp.Header.Values("WWW-Authenticate"))
		}
		// One Digest challenge per algorithm, each the stale one in place
		// of the plain one (docs/auth.md).
		digests = digests[:0]
		for _, c := range resp.Header.Values("WWW-Authenticate") {
			if strings.HasPrefix(c, "Digest ") {
				digests = append(digests, c)
			}
		}
		if len(digests) != 2 || !strings.Contains(digests[0], "algorithm=SHA-256") || !strings.Contains(digests[1], "algorithm=MD5") ||
			!strings.Contains(digests[0], "stale=true") || !strings.Contains(digests[1], "stale=true") {
			t.Errorf("stale nonce: Digest challenges %q, want one per algorithm, each stale", digests)
		}
		if err := c.Get(ctx, e.dogURI, nil); err != nil {
			t.Errorf("client after a stale nonce: %v", err)
		}

		// Wrong password; a nonce this server did not make.
		if err := e.client(&client.Digest{Username: "alice", Password: "wrong"}).Get(ctx, e.dogURI, nil); client.StatusOf(err) != 401 {
			t.Errorf("wrong password: got %v, want 401", err)
		}
		forged := strings.Replace(hdr, `nonce="`, `nonce="AAAA`, 1)
		wantStatus(t, "forged nonce", e.raw(t, "GET", e.dogURI, map[string]string{"Authorization": forged}).StatusCode, 401)
	})
}

// TestSchemesWithCurl uses each scheme as a new user would, with curl, a
// client written by others.
func TestSchemesWithCurl(t *testing.T) {
	t.Parallel()
	curlBin := needTool(t, "curl")
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// curl runs curl and returns the status code and the body.
	curl := func(args ...string) (string, string) {
		t.Helper()
		body := filepath.Join(dir, "body")
		out, err := exec.Command(curlBin, append([]string{"-sS", "--cacert", ca, "-o", body, "-w", "%{http_code}"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v %s", args, err, out)
		}
		b, _ := os.ReadFile(body)
		return string(out), string(b)
	}
	field := func(body, name string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		v, _ := m[name].(string)
		return v
	}
	dog := e.URL + e.dogURI
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"digest", []string{"--digest", "-u", "alice:" + pw, dog}, "200"},
		{"digest, wrong password", []string{"--digest", "-u", "alice:wrong", dog}, "401"},
		{"basic", []string{"-u", "alice:" + pw, dog}, "200"},
	} {
		if code, body := curl(tc.args...); code != tc.want {
			t.Errorf("%s: got %s, want %s (%s)", tc.name, code, tc.want, body)
		}
	}
	login := `{"username":"alice","password":"` + pw + `"}`
	jar := filepath.Join(dir, "jar")
	if code, _ := curl("-c", jar, "-H", "Content-Type: application/json", "-d", login, e.URL+"/sessions"); code != "201" {
		t.Fatalf("curl sign in: %s", code)
	}
	if code, _ := curl("-b", jar, dog); code != "200" {
		t.Errorf("curl with the session cookie: %s", code)
	}
	_, body := curl("-H", "Content-Type: application/json", "-d", login, e.URL+"/auth/login")
	if code, _ := curl("-H", "Authorization: Bearer "+field(body, "access_token"), dog); code != "200" {
		t.Errorf("curl with the access token: %s", code)
	}
	if code, _ := curl("-X", "POST", "-H", "Authorization: Bearer "+field(body, "refresh_token"), e.URL+"/auth/refresh"); code != "200" {
		t.Errorf("curl refresh: %s", code)
	}
	_, body = curl("-H", "Content-Type: application/json", "-d", login, e.URL+"/auth/pk-token")
	if code, _ := curl("-H", "Authorization: Bearer "+field(body, "token"), dog); code != "200" {
		t.Errorf("curl with the public-key token: %s", code)
	}
	_, body = curl("-u", "alice:"+pw, "-X", "POST", e.URL+"/apikeys")
	key, secret := field(body, "apiKey"), field(body, "secret")
	ts := strconv.FormatInt(e.clock.Now().Unix(), 10)
	sig := sigbase.Sign([]byte(secret), e.dogURI+"?apikey="+key+"&timestamp="+ts)
	signed := dog + "?timestamp=" + ts + "&apiKey=" + key + "&signature=" + sig
	if code, _ := curl(signed); code != "200" {
		t.Errorf("curl signed request: %s", code)
	}
	if code, _ := curl(signed); code != "401" {
		t.Errorf("curl replayed signed request: %s", code)
	}
}

func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.SessionIdle = 30 * time.Minute; c.SessionMax = 2 * time.Hour })
		ctx := context.Background()

		resp := e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice", "password": pw}})
		wantStatus(t, "sign in", resp.StatusCode, 201)
		sc := resp.Header.Get("Set-Cookie")
		for _, flag := range []string{"sessionToken=", "Path=/", "Secure", "HttpOnly", "SameSite=Lax", "Max-Age=7200"} {
			if !strings.Contains(sc, flag) {
				t.Errorf("Set-Cookie %q lacks %s", sc, flag)
			}
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control = %q, want no-store", cc)
		}
		key := resp.Map(t)["key"].(string)
		if loc := resp.Header.Get("Location"); loc != e.URL+"/sessions/"+key {
			t.Errorf("Location = %q", loc)
		}
		// Stored hashed: the key itself is nowhere in the table.
		var n int
		if err := db.Read().QueryRow(`SELECT COUNT(*) FROM sessions WHERE key_hash = $1`, key).Scan(&n); err != nil || n != 0 {
			t.Errorf("the raw key is stored (%d rows, %v)", n, err)
		}
		cookie := map[string]string{"Cookie": "sessionToken=" + key}
		wantStatus(t, "cookie", e.raw(t, "GET", e.dogURI, cookie).StatusCode, 200)
		got := e.Do(apitest.Request{Path: "/sessions/" + key})
		wantStatus(t, "read the session", got.StatusCode, 200)
		if m := got.Map(t); m["userId"] != e.alice.ID || m["key"] != nil {
			t.Errorf("GET session = %v", m)
		}

		// Form login works too.
		form := e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: "username=alice&password=" + strings.ReplaceAll(pw, " ", "+"),
			Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
		wantStatus(t, "form sign in", form.StatusCode, 201)

		// Cross-site unsafe request with the cookie: 403; same-origin: fine.
		cross := map[string]string{"Cookie": "sessionToken=" + key, "Sec-Fetch-Site": "cross-site"}
		wantStatus(t, "cross-site DELETE", e.raw(t, "DELETE", e.dogURI, cross).StatusCode, 403)
		wantStatus(t, "cross-site GET", e.raw(t, "GET", e.dogURI, cross).StatusCode, 200)
		wantStatus(t, "cross-site login", e.raw(t, "POST", "/sessions", map[string]string{"Sec-Fetch-Site": "cross-site"}).StatusCode, 403)

		// Idle time-out from the last action.
		e.clock.Advance(20 * time.Minute)
		wantStatus(t, "after 20 idle minutes", e.raw(t, "GET", e.dogURI, cookie).StatusCode, 200)
		e.clock.Advance(20 * time.Minute)
		wantStatus(t, "20 minutes after the last action", e.raw(t, "GET", e.dogURI, cookie).StatusCode, 200)
		e.clock.Advance(31 * time.Minute)
		wantStatus(t, "31 idle minutes", e.raw(t, "GET", e.dogURI, cookie).StatusCode, 401)

		// Absolute time-out, however active the session is.
		s2, err := client.NewSession(ctx, e.client(nil), "alice", pw)
		if err != nil {
			t.Fatal(err)
		}
		c2 := map[string]string{"Cookie": "sessionToken=" + s2.Key()}
		for range 4 { // 100 minutes, each step inside the idle time-out
			e.clock.Advance(25 * time.Minute)
			wantStatus(t, "active session", e.raw(t, "GET", e.dogURI, c2).StatusCode, 200)
		}
		e.clock.Advance(25 * time.Minute)
		wantStatus(t, "past the absolute limit", e.raw(t, "GET", e.dogURI, c2).StatusCode, 401)

		// Logout; unknown keys.
		s3, _ := client.NewSession(ctx, e.client(nil), "alice", pw)
		del := e.Do(apitest.Request{Method: "DELETE", Path: "/sessions/" + s3.Key()})
		wantStatus(t, "logout", del.StatusCode, 204)
		if sc := del.Header.Get("Set-Cookie"); !strings.Contains(sc, "Max-Age=0") {
			t.Errorf("logout Set-Cookie = %q, want an expired cookie", sc)
		}
		wantStatus(t, "read an ended session", e.Do(apitest.Request{Path: "/sessions/" + s3.Key()}).StatusCode, 404)
		wantStatus(t, "logged-out cookie", e.raw(t, "GET", e.dogURI, map[string]string{"Cookie": "sessionToken=" + s3.Key()}).StatusCode, 401)
		wantStatus(t, "logout twice", e.Do(apitest.Request{Method: "DELETE", Path: "/sessions/" + s3.Key()}).StatusCode, 404)
		wantStatus(t, "made-up cookie", e.raw(t, "GET", e.dogURI, map[string]string{"Cookie": "sessionToken=" + strings.Repeat("A", 43)}).StatusCode, 401)
		wantStatus(t, "wrong password", e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice", "password": "x"}}).StatusCode, 401)
		wantStatus(t, "missing password", e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice"}}).StatusCode, 400)
		wantStatus(t, "unknown field", e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice", "password": pw, "remember": "yes"}}).StatusCode, 400)
	})
}

// TestTokenPairTransitions walks the spec's state table: valid → expired
// (400) → refreshed (new pair) → reused refresh (400, family revoked) →
// login again.
func TestTokenPairTransitions(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.AccessTTL = 30 * time.Minute; c.RefreshTTL = 24 * time.Hour })
		ctx := context.Background()

		login := e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": pw}})
		wantStatus(t, "login", login.StatusCode, 200)
		if cc := login.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("login Cache-Control = %q", cc)
		}
		var pair client.Tokens
		login.JSON(t, &pair)
		if pair.TokenType != "Bearer" || pair.ExpiresIn != 1800 || pair.RefreshExpiresIn != 86400 {
			t.Fatalf("pair = %+v", pair)
		}
		bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

		// valid
		wantStatus(t, "valid access token", e.raw(t, "GET", e.dogURI, bearer(pair.AccessToken)).StatusCode, 200)
		// expired: 400 with the problem type and the Bearer challenge
		e.clock.Advance(31 * time.Minute)
		req, _ := http.NewRequest("GET", e.URL+e.dogURI, nil)
		req.Header.Set("Authorization", "Bearer "+pair.AccessToken)
		res, err := e.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p client.Problem
		body := readAll(res)
		wantStatus(t, "expired access token", res.StatusCode, 400)
		if !strings.Contains(body, "/problems/token-expired") || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("expired access token: body %s, WWW-Authenticate %q", body, res.Header.Get("WWW-Authenticate"))
		}
		_ = p
		// refreshed: a new pair that works
		ref := e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair.RefreshToken)})
		wantStatus(t, "refresh", ref.StatusCode, 200)
		var pair2 client.Tokens
		ref.JSON(t, &pair2)
		if pair2.AccessToken == pair.AccessToken || pair2.RefreshToken == pair.RefreshToken {
			t.Fatal("refresh returned the old tokens")
		}
		wantStatus(t, "refreshed access token", e.raw(t, "GET", e.dogURI, bearer(pair2.AccessToken)).StatusCode, 200)
		// reused refresh: 400, and the whole family is revoked
		reuse := e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair.RefreshToken)})
		wantStatus(t, "reused refresh token", reuse.StatusCode, 400)
		if !strings.Contains(string(reuse.Body), "/problems/refresh-token-invalid") || !strings.Contains(reuse.Header.Get("WWW-Authenticate"), "invalid_token") {
			t.Errorf("reuse: %s %q", reuse.Body, reuse.Header.Get("WWW-Authenticate"))
		}
		wantStatus(t, "newest refresh token of a revoked family",
			e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair2.RefreshToken)}).StatusCode, 400)
		// login again
		again := e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": pw}})
		wantStatus(t, "login again", again.StatusCode, 200)

		// The client goes through the same states by itself.
		tp := &client.TokenPair{Username: "alice", Password: pw}
		c := e.client(tp)
		if err := c.Get(ctx, e.dogURI, nil); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(31 * time.Minute)
		if err := c.Get(ctx, e.dogURI, nil); err != nil || tp.Refreshes != 1 {
			t.Fatalf("client after expiry: %v, %d refreshes", err, tp.Refreshes)
		}
		e.clock.Advance(25 * time.Hour)
		if err := c.Get(ctx, e.dogURI, nil); err != nil || tp.Logins != 2 {
			t.Fatalf("client after the refresh token expired: %v, %d logins", err, tp.Logins)
		}
		if err := tp.Logout(ctx, c); err != nil {
			t.Fatal(err)
		}
	})
}

func readAll(res *http.Response) string {
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestTokenPairRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, nil)
		ctx := context.Background()
		bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
		tp := &client.TokenPair{Username: "alice", Password: pw}
		if err := tp.Login(ctx, e.client(nil)); err != nil {
			t.Fatal(err)
		}
		pair := tp.Tokens()
		parts := strings.Split(pair.AccessToken, ".")
		evil := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + e.alice.ID + `","exp":9999999999,"roles":["admin"],"token_use":"access"}`))
		none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
		for _, tc := range []struct {
			name string
			tok  string
			want int
		}{
			{"tampered payload", parts[0] + "." + evil + "." + parts[2], 401},
			{"alg none", none + "." + parts[1] + ".", 401},
			{"garbage", "not-a-token", 401},
			{"refresh token as access token", pair.RefreshToken, 401},
		} {
			resp := e.raw(t, "GET", e.dogURI, bearer(tc.tok))
			wantStatus(t, tc.name, resp.StatusCode, tc.want)
			// RFC 6750 §3.1: a presented token that is refused is named.
			if !slices.Contains(resp.Header.Values("WWW-Authenticate"), `Bearer realm="yard", error="invalid_token"`) {
				t.Errorf("%s: challenges %q, want the Bearer one with error=\"invalid_token\"", tc.name, resp.Header.Values("WWW-Authenticate"))
			}
		}
		wantStatus(t, "access token at /auth/refresh", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(pair.AccessToken)}).StatusCode, 400)
		wantStatus(t, "garbage at /auth/refresh", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer("x.y.z")}).StatusCode, 400)
		wantStatus(t, "no refresh token", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh"}).StatusCode, 401)
		wantStatus(t, "missing credentials at login", e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{}}).StatusCode, 400)
		wantStatus(t, "wrong password at login", e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "alice", "password": "nope"}}).StatusCode, 401)

		// Roles are reloaded on refresh: alice becomes admin; her old
		// access token keeps the old rights, the refreshed one has the new.
		admin := []string{yard.RoleAdmin, yard.RoleUser}
		if _, err := db.UpdateUser(ctx, e.alice.ID, yard.UserUpdate{Roles: &admin}); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "old token, admin endpoint", e.raw(t, "GET", "/v1/people", bearer(pair.AccessToken)).StatusCode, 403)
		c := e.client(tp)
		if err := tp.Refresh(ctx, c); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "refreshed token, admin endpoint", e.raw(t, "GET", "/v1/people", bearer(tp.Tokens().AccessToken)).StatusCode, 200)

		// Logout revokes the family.
		before := tp.Tokens()
		if err := tp.Logout(ctx, c); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "refresh after logout", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(before.RefreshToken)}).StatusCode, 400)

		// A disabled user is refused at refresh, and their access token
		// stops working.
		if err := tp.Login(ctx, c); err != nil {
			t.Fatal(err)
		}
		disabled := true
		if _, err := db.UpdateUser(ctx, e.alice.ID, yard.UserUpdate{Disabled: &disabled}); err != nil {
			t.Fatal(err)
		}
		e.kit.ForgetUser(e.alice.ID)
		wantStatus(t, "disabled user's access token", e.raw(t, "GET", e.dogURI, bearer(tp.Tokens().AccessToken)).StatusCode, 401)
		wantStatus(t, "disabled user's refresh", e.Do(apitest.Request{Method: "POST", Path: "/auth/refresh", Headers: bearer(tp.Tokens().RefreshToken)}).StatusCode, 400)
	})
}

func TestPKTokens(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, func(c *auth.Config) { c.PKTokenTTL = time.Hour })
		ctx := context.Background()
		bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

		jwks := e.Do(apitest.Request{Path: "/.well-known/jwks.json"})
		wantStatus(t, "jwks", jwks.StatusCode, 200)
		keys, err := auth.ParseJWKS(jwks.Body)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := keys[e.kit.PK.Ring.Active().ID]; !ok {
			t.Errorf("JWKS lacks the signing key %s", e.kit.PK.Ring.Active().ID)
		}

		res := e.Do(apitest.Request{Method: "POST", Path: "/auth/pk-token", Body: map[string]any{"username": "alice", "password": pw, "include_password_hash": true}})
		wantStatus(t, "pk-token", res.StatusCode, 200)
		if res.Header.Get("Cache-Control") != "no-store" {
			t.Error("pk-token answer is cacheable")
		}
		tok := res.Map(t)["token"].(string)
		wantStatus(t, "no X-Password", e.raw(t, "GET", e.dogURI, bearer(tok)).StatusCode, 401)
		h := bearer(tok)
		h["X-Password"] = "wrong"
		wantStatus(t, "wrong X-Password", e.raw(t, "GET", e.dogURI, h).StatusCode, 401)
		h["X-Password"] = pw
		wantStatus(t, "right X-Password", e.raw(t, "GET", e.dogURI, h).StatusCode, 200)
		// The password hash in the token is a fresh salted hash, not the stored one.
		creds, _ := db.FindCredentials(ctx, e.alice.ID)
		payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
		if !strings.Contains(string(payload), `"pwh":"$argon2id$`) || strings.Contains(string(payload), creds.PasswordHash) {
			t.Errorf("pwh claim: %s", payload)
		}

		// Bound to another address.
		other, _, err := e.kit.PK.Issue(e.alice, auth.PKOptions{BindIP: "192.0.2.7"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "token bound to another ip", e.raw(t, "GET", e.dogURI, bearer(other)).StatusCode, 401)

		// Tampered, expired.
		plain, err := client.NewPKToken(ctx, e.client(nil), "alice", pw, client.PKTokenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(plain.Token, ".")
		evil := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + e.alice.ID + `","exp":9999999999}`))
		wantStatus(t, "tampered pk-token", e.raw(t, "GET", e.dogURI, bearer(parts[0]+"."+evil+"."+parts[2])).StatusCode, 401)

		// Rotation: the old key keeps verifying until its tokens expire.
		oldKey := e.kit.PK.Ring.Active().ID
		e.clock.Advance(time.Minute)
		if err := e.kit.PK.Ring.Rotate(); err != nil {
			t.Fatal(err)
		}
		fresh, err := client.NewPKToken(ctx, e.client(nil), "alice", pw, client.PKTokenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "old-key token after rotation", e.raw(t, "GET", e.dogURI, bearer(plain.Token)).StatusCode, 200)
		wantStatus(t, "new-key token", e.raw(t, "GET", e.dogURI, bearer(fresh.Token)).StatusCode, 200)
		keys, _ = auth.ParseJWKS(e.Do(apitest.Request{Path: "/.well-known/jwks.json"}).Body)
		if _, ok := keys[oldKey]; !ok || len(keys) != 2 {
			t.Errorf("JWKS during the overlap holds %d keys", len(keys))
		}
		e.clock.Advance(2 * time.Hour)
		wantStatus(t, "expired pk-token", e.raw(t, "GET", e.dogURI, bearer(plain.Token)).StatusCode, 400)
		keys, _ = auth.ParseJWKS(e.Do(apitest.Request{Path: "/.well-known/jwks.json"}).Body)
		if _, ok := keys[oldKey]; ok {
			t.Error("the rotated-out key is still published after its tokens expired")
		}
	})
}

func TestSignedRequests(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := startAuth(t, db, nil)
		ctx := context.Background()
		created := e.Do(apitest.Request{Method: "POST", Path: "/apikeys", User: "alice", Password: pw})
		wantStatus(t, "create key", created.StatusCode, 201)
		if created.Header.Get("Cache-Control") != "no-store" {
			t.Error("API key answer is cacheable")
		}
		k := created.Map(t)
		apiKey, secret := k["apiKey"].(string), k["secret"].(string)
		if created.Header.Get("Location") != e.URL+"/apikeys/"+apiKey {
			t.Errorf("Location = %q", created.Header.Get("Location"))
		}
		wantStatus(t, "unknown field", e.Do(apitest.Request{Method: "POST", Path: "/apikeys", User: "alice", Password: pw, Body: map[string]any{"scope": "all"}}).StatusCode, 400)
		wantStatus(t, "no credentials", e.Do(apitest.Request{Method: "POST", Path: "/apikeys"}).StatusCode, 401)
		// The secret is not stored in the clear.
		var sealed string
		if err := db.Read().QueryRow(`SELECT sealed_secret FROM api_keys WHERE id = $1`, apiKey).Scan(&sealed); err != nil || strings.Contains(sealed, secret) {
			t.Errorf("stored secret %q (%v)", sealed, err)
		}
		// Shown once: reading the key does not show it.
		got := e.Do(apitest.Request{Path: "/apikeys/" + apiKey, User: "alice", Password: pw})
		wantStatus(t, "read key", got.StatusCode, 200)
		if strings.Contains(string(got.Body), secret) {
			t.Error("GET shows the secret")
		}
		wantStatus(t, "another user's key", e.Do(apitest.Request{Path: "/apikeys/" + apiKey, User: "bob", Password: pw}).StatusCode, 403)

		sign := func(path, rawQuery string, ts int64) string {
			pairs, _ := sigbase.ParseRawQuery(rawQuery)
			pairs = append(pairs, [2]string{"timestamp", itoa(ts)}, [2]string{"apiKey", apiKey})
			q := rawQuery
			if q != "" {
				q += "&"
			}
			return path + "?" + q + "timestamp=" + itoa(ts) + "&apiKey=" + apiKey + "&signature=" + sigbase.Sign([]byte(secret), sigbase.CanonicalString(path, pairs))
		}
		now := e.clock.Now().Unix()
		u := sign(e.dogURI, "Note=hello%20there&a=2&a=1", now)
		wantStatus(t, "signed", e.raw(t, "GET", u, nil).StatusCode, 200)
		wantStatus(t, "replayed", e.raw(t, "GET", u, nil).StatusCode, 401)
		// The scheme's query variables (apiKey, signature, timestamp, in
		// any letter case) are taken out before an endpoint's own grammar
		// reads the query; the signature still covers the whole query.
		wantStatus(t, "signed order list with filters", e.raw(t, "GET", sign("/orders", "canceled=false&status=placed", now+3), nil).StatusCode, 200)
		wantStatus(t, "tampered filter", e.raw(t, "GET", strings.Replace(sign("/orders", "status=placed", now+4), "placed", "shipped", 1), nil).StatusCode, 401)
		wantStatus(t, "signed car list with filters", e.raw(t, "GET", sign("/cars", "color=red&max=5", now+3), nil).StatusCode, 200)
		// On a public list they are credentials too, in any letter case:
		// wrong ones are refused, not read as filters nor ignored.
		wantStatus(t, "car list with other letter cases", e.raw(t, "GET", "/cars?color=red&APIKEY=k;Signature=ab&timestamp=1&method=GET&bodyhash=x", nil).StatusCode, 401)
		wantStatus(t, "a look-alike name is a field", e.raw(t, "GET", "/cars?%C5%BFignature=ab", nil).StatusCode, 400)
		wantStatus(t, "a variable without a value", e.raw(t, "GET", "/cars?signature", nil).StatusCode, 400)
		wantStatus(t, "tampered query", e.raw(t, "GET", strings.Replace(sign(e.dogURI, "a=1", now+1), "a=1", "a=2", 1), nil).StatusCode, 401)
		wantStatus(t, "other path", e.raw(t, "GET", strings.Replace(sign(e.dogURI, "", now+2), e.dogURI, "/v1/dogs", 1), nil).StatusCode, 401)
		wantStatus(t, "timestamp 301 s old", e.raw(t, "GET", sign(e.dogURI, "", now-301), nil).StatusCode, 401)
		wantStatus(t, "timestamp 301 s ahead", e.raw(t, "GET", sign(e.dogURI, "", now+301), nil).StatusCode, 401)
		wantStatus(t, "timestamp 299 s old", e.raw(t, "GET", sign(e.dogURI, "", now-299), nil).StatusCode, 200)
		upper := sign(e.dogURI, "x=3", now)
		i := strings.LastIndex(upper, "=")
		wantStatus(t, "upper-case hex", e.raw(t, "GET", upper[:i+1]+strings.ToUpper(upper[i+1:]), nil).StatusCode, 401)
		wantStatus(t, "unknown key", e.raw(t, "GET", strings.Replace(sign(e.dogURI, "y=1", now), apiKey, "ak_nope", 1), nil).StatusCode, 401)
		wantStatus(t, "no signature", e.raw(t, "GET", e.dogURI+"?apiKey="+apiKey+"&timestamp="+itoa(now), nil).StatusCode, 401)

		// The client signs by itself, and waits rather than repeat a signature.
		c := e.client(&client.Signed{APIKey: apiKey, Secret: secret})
		for range 2 {
			if err := c.Get(ctx, e.dogURI, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Deleting the key ends it.
		wantStatus(t, "bob deletes alice's key", e.Do(apitest.Request{Method: "DELETE", Path: "/apikeys/" + apiKey, User: "bob", Password: pw}).StatusCode, 403)
		wantStatus(t, "delete key", e.Do(apitest.Request{Method: "DELETE", Path: "/apikeys/" + apiKey, User: "alice", Password: pw}).StatusCode, 204)
		wantStatus(t, "deleted key", e.raw(t, "GET", sign(e.dogURI, "z=1", now), nil).StatusCode, 401)
		wantStatus(t, "delete again", e.Do(apitest.Request{Method: "DELETE", Path: "/apikeys/" + apiKey, User: "alice", Password: pw}).StatusCode, 404)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestNoFallback: credentials that are present but wrong are refused even
// when the request also carries good ones of another kind.
func TestNoFallback(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	ctx := context.Background()
	s, err := client.NewSession(ctx, e.client(nil), "alice", pw)
	if err != nil {
		t.Fatal(err)
	}
	good := "sessionToken=" + s.Key()
	basicBad := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:wrong"))
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{"good cookie alone", e.dogURI, map[string]string{"Cookie": good}, 200},
		{"wrong Basic with a good cookie", e.dogURI, map[string]string{"Authorization": basicBad, "Cookie": good}, 401},
		{"garbage Bearer with a good cookie", e.dogURI, map[string]string{"Authorization": "Bearer x.y.z", "Cookie": good}, 401},
		{"Basic payload under Digest", e.dogURI, map[string]string{"Authorization": "Digest " + base64.StdEncoding.EncodeToString([]byte("alice:"+pw))}, 401},
		{"bad signature with a good cookie", e.dogURI + "?apiKey=ak_x&timestamp=1&signature=00", map[string]string{"Cookie": good}, 401},
		{"unknown scheme with a good cookie", e.dogURI, map[string]string{"Authorization": "Negotiate abc", "Cookie": good}, 401},
		{"empty Authorization with a good cookie", e.dogURI, map[string]string{"Authorization": "", "Cookie": good}, 401},
		{"blank Authorization with a good cookie", e.dogURI, map[string]string{"Authorization": " ", "Cookie": good}, 401},
	} {
		wantStatus(t, tc.name, e.raw(t, "GET", tc.path, tc.header).StatusCode, tc.want)
	}
}

// TestPlainHTTPRefused: over plain HTTP every credential is refused unchecked.
func TestPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, nil)
	plain := httptest.NewServer(e.API.Handler())
	defer plain.Close()
	c := client.New(plain.URL, plain.Client(), &client.Basic{Username: "alice", Password: pw})
	if err := c.Get(context.Background(), e.dogURI, nil); client.StatusOf(err) != 401 {
		t.Errorf("Basic over HTTP: got %v, want 401", err)
	}
	s, err := client.NewSession(context.Background(), e.client(nil), "alice", pw)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("DELETE", plain.URL+"/sessions/"+s.Key(), nil)
	resp, err := plain.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantStatus(t, "logout over HTTP", resp.StatusCode, 401)
	for _, path := range []string{"/sessions", "/auth/login", "/auth/pk-token"} {
		resp, err := plain.Client().Post(plain.URL+path, "application/json", strings.NewReader(`{"username":"alice","password":"`+pw+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wantStatus(t, "sign-in over HTTP at "+path, resp.StatusCode, 401)
	}
}

// TestLoginRateLimitAndLogs: the sign-in endpoints share the login limit
// (429 with Retry-After even for the right password), and no credential of
// any scheme ever reaches the log.
func TestLoginRateLimitAndLogs(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	e := startAuth(t, db, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(3, nil) })
	ctx := context.Background()
	var secrets []string

	// Collect one credential of every scheme, used once each.
	tp := &client.TokenPair{Username: "alice", Password: pw}
	if err := e.client(tp).Get(ctx, e.dogURI, nil); err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, tp.Tokens().AccessToken, tp.Tokens().RefreshToken)
	s, err := client.NewSession(ctx, e.client(nil), "alice", pw)
	if err != nil {
		t.Fatal(err)
	}
	_ = e.client(s).Get(ctx, e.dogURI, nil)
	secrets = append(secrets, s.Key())
	signed, err := e.client(&client.Basic{Username: "alice", Password: pw}).CreateAPIKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = e.client(signed).Get(ctx, e.dogURI, nil)
	secrets = append(secrets, signed.Secret, signed.APIKey)
	// A key in a path is masked too (GET and DELETE /apikeys/{apiKey}).
	_ = e.raw(t, "GET", "/apikeys/"+signed.APIKey, nil)
	// And in a path the mux cleans (a redirect): //sessions/KEY.
	_ = e.raw(t, "DELETE", "//sessions/"+s.Key(), nil)
	pk, _ := client.NewPKToken(ctx, e.client(nil), "alice", pw, client.PKTokenOptions{})
	_ = e.client(pk).Get(ctx, e.dogURI, nil)
	secrets = append(secrets, pk.Token)
	_ = e.client(&client.Digest{Username: "alice", Password: pw}).Get(ctx, e.dogURI, nil)
	_ = s.Logout(ctx, e.client(nil))
	// A request that fails inside the server must not log credentials either.
	_ = e.raw(t, "GET", e.dogURI+"?apiKey=ak_x&timestamp=1&signature=00", map[string]string{"Cookie": "sessionToken=" + s.Key()})

	// Rate limit: 3 failures for bob, then 429 even with the right password.
	for range 3 {
		wantStatus(t, "wrong password", e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "bob", "password": "nope"}}).StatusCode, 401)
	}
	res := e.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "bob", "password": pw}})
	wantStatus(t, "right password past the limit", res.StatusCode, 429)
	if res.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	wantStatus(t, "Digest past the limit", e.raw(t, "GET", e.dogURI, nil).StatusCode, 401) // a challenge, not a check
	e.kit.Limiter.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	wantStatus(t, "after the window", e.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]string{"username": "bob", "password": pw}}).StatusCode, 200)

	logs := e.Logs()
	if !strings.Contains(logs, `"path":"`+e.dogURI+`"`) {
		t.Fatalf("the log holds no requests: %.300s", logs)
	}
	for _, s := range append(secrets, pw, "nope") {
		if strings.Contains(logs, s) {
			t.Errorf("the log contains a credential %.12s…", s)
		}
	}
}
