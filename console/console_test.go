package console_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

const pw = "console test password"

// env is an API with every scheme, a backups directory, alice and bob
// (people) and root (an administrator).
type env struct {
	*apitest.Env
}

func start(t testing.TB, db *store.DB) *env {
	t.Helper()
	e := apitest.Start(t, db, apitest.WithAuthKit(t, db, nil, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(0, nil) }),
		func(d *httpapi.Deps) {
			d.Backups = &store.BackupDir{DB: db, Dir: filepath.Join(t.TempDir(), "backups"), Keep: 28}
		})
	e.CreateUser("alice", pw)
	e.CreateUser("bob", pw)
	e.CreateUser("root", pw, "admin", "user")
	return &env{e}
}

// person is a browser without JavaScript: a cookie jar, no redirects
// followed.
type person struct {
	t    testing.TB
	e    *env
	c    *http.Client
	name string
}

type page struct {
	status int
	header http.Header
	body   string
}

func (e *env) browser(t testing.TB) *person {
	jar, _ := cookiejar.New(nil)
	pool := x509.NewCertPool()
	pool.AddCert(e.Server.Certificate())
	// Not e.Server.Client(): apitest checks that client's answers against
	// the OpenAPI document, which describes the API, not the console.
	c := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &person{t: t, e: e, c: c}
}

// signIn returns a browser signed in as name through /signin.
func (e *env) signIn(t testing.TB, name string) *person {
	t.Helper()
	p := e.browser(t)
	p.name = name
	form := p.get("/signin")
	res := p.post("/signin", url.Values{"username": {name}, "password": {pw}, "next": {"/console/"}, "csrf_token": {csrf(t, form.body)}}, nil)
	if res.status != 303 {
		t.Fatalf("sign in %s: got %d, want 303\n%s", name, res.status, res.body)
	}
	return p
}

func (p *person) get(path string) page {
	p.t.Helper()
	req, _ := http.NewRequest("GET", p.e.URL+path, nil)
	return p.do(req)
}

func (p *person) post(path string, form url.Values, header map[string]string) page {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.e.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return p.do(req)
}

func (p *person) do(req *http.Request) page {
	p.t.Helper()
	resp, err := p.c.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, resp.Header, string(b)}
}

// form posts a console form: the page's CSRF token is added.
func (p *person) form(path string, form url.Values) page {
	p.t.Helper()
	form.Set("csrf_token", csrf(p.t, p.get(path).body))
	return p.post(path, form, nil)
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrf(t testing.TB, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf_token in page:\n%s", body)
	}
	return m[1]
}

// apiDog creates a dog through the API as owner and returns its id.
func (e *env) apiDog(t testing.TB, owner, name string) string {
	t.Helper()
	res := e.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: owner, Password: pw,
		Body: map[string]any{"name": name, "email": "dog@example.org"}})
	if res.StatusCode != 201 {
		t.Fatalf("create dog: %d %s", res.StatusCode, res.Body)
	}
	return res.Map(t)["id"].(string)
}

// checkPage checks what every console page must be: HTML with the
// console's policy, no inline script allowed, under 100 KB, with its API
// calls listed.
func checkPage(t *testing.T, what string, p page) {
	t.Helper()
	if !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
		t.Errorf("%s: Content-Type %q, want HTML", what, p.header.Get("Content-Type"))
	}
	csp := p.header.Get("Content-Security-Policy")
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || !strings.Contains(csp, "script-src 'self'") ||
		!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("%s: Content-Security-Policy %q", what, csp)
	}
	if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: X-Frame-Options %q, Cache-Control %q", what, p.header.Get("X-Frame-Options"), p.header.Get("Cache-Control"))
	}
	if len(p.body) >= 100<<10 {
		t.Errorf("%s: %d bytes, want under 100 KB", what, len(p.body))
	}
	if !strings.Contains(p.body, "API calls behind this page") || (!strings.Contains(p.body, "curl -i ") && !strings.Contains(p.body, "<li>None.</li>")) {
		t.Errorf("%s: no API calls panel with curl:\n%s", what, p.body)
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(p.body) || strings.Contains(p.body, " style=") || strings.Contains(p.body, "<style") {
		t.Errorf("%s: inline script or style", what)
	}
}

func TestConsoleSignInRedirect(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	b := e.browser(t)
	for _, path := range []string{"/console/", "/console/dogs?max=5", "/console/dogs/x/", "/console/admin/people"} {
		p := b.get(path)
		if want := e.URL + "/signin?next=" + url.QueryEscape(path); p.status != 303 || p.header.Get("Location") != want {
			t.Errorf("GET %s: got %d Location %q, want 303 to %s", path, p.status, p.header.Get("Location"), want)
		}
	}
	// A form post without a session is refused before anything is done.
	if p := b.post("/console/dogs", url.Values{"name": {"Rex"}, "email": {"r@example.org"}}, nil); p.status != 403 {
		t.Errorf("POST /console/dogs without session or token: got %d, want 403", p.status)
	}
	// The assets are public.
	for _, a := range []string{"/console/assets/console.js", "/console/assets/console.css"} {
		if p := b.get(a); p.status != 200 || p.body == "" {
			t.Errorf("GET %s: got %d", a, p.status)
		}
	}
}

func TestConsoleDogs(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice := e.signIn(t, "alice")

	home := alice.get("/console/")
	if home.status != 200 || !strings.Contains(home.body, `id="me">alice<`) {
		t.Fatalf("GET /console/: got %d\n%s", home.status, home.body)
	}
	checkPage(t, "home", home)
	if strings.Contains(home.body, "/console/admin/") {
		t.Error("a person's console links the administration")
	}

	// Create a dog through the form, named as a script: shown as text.
	const evil = `<script>alert(1)</script>`
	p := alice.form("/console/dogs", url.Values{"name": {evil}, "email": {"rex@example.org"}, "barkEffect": {"record"}})
	if p.status != 200 || !strings.Contains(p.body, "Created the dog") {
		t.Fatalf("create: got %d\n%s", p.status, p.body)
	}
	checkPage(t, "dogs after create", p)
	if strings.Contains(p.body, evil) || !strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the dog's name is not rendered inert:\n%s", p.body)
	}
	for _, want := range []string{"POST</span> <code class=\"url\">" + e.URL + "/v1/dogs</code>", "<strong>201</strong>",
		"GET</span> <code class=\"url\">" + e.URL + "/v1/dogs?offset=0&amp;max=20</code>", "curl -i -u alice -X POST"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the panel lacks %q", want)
		}
	}
	if strings.Contains(p.body, "sessionToken") {
		t.Error("the page shows the session cookie")
	}
	id := regexp.MustCompile(`href="/console/dogs/([^/"]+)/"`).FindStringSubmatch(p.body)
	if id == nil {
		t.Fatalf("no dog link:\n%s", p.body)
	}
	dogPath := "/console/dogs/" + id[1] + "/"

	d := alice.get(dogPath)
	if d.status != 200 || strings.Contains(d.body, evil) || !strings.Contains(d.body, `data-events="/v1/events?types=bark.*"`) {
		t.Fatalf("GET %s: got %d\n%s", dogPath, d.status, d.body)
	}
	checkPage(t, "dog", d)

	// Edit it.
	p = alice.form(dogPath, url.Values{"op": {"edit"}, "name": {"Rex"}, "email": {"rex@example.org"}, "barkEffect": {"email-count"}})
	if p.status != 200 || !strings.Contains(p.body, "Saved.") || !strings.Contains(p.body, "<h1>Rex</h1>") || !strings.Contains(p.body, "PATCH") {
		t.Fatalf("edit: got %d\n%s", p.status, p.body)
	}
	// A bad edit shows the API's problem with its status.
	p = alice.form(dogPath, url.Values{"op": {"edit"}, "name": {"Rex"}, "email": {"not an address"}})
	if p.status != 400 || !strings.Contains(p.body, `id="problem"`) {
		t.Errorf("bad edit: got %d, want 400 with the problem", p.status)
	}
	// Schedule, then stop it.
	p = alice.form(dogPath, url.Values{"op": {"schedule"}, "next": {""}, "frequency": {"30"}})
	if p.status != 200 || !strings.Contains(p.body, "Every 30 minutes") {
		t.Fatalf("schedule: got %d\n%s", p.status, p.body)
	}
	p = alice.form(dogPath, url.Values{"op": {"unschedule"}})
	if p.status != 200 || !strings.Contains(p.body, "No schedule.") {
		t.Fatalf("unschedule: got %d\n%s", p.status, p.body)
	}

	// Paging through the API's Link header.
	for i := range 3 {
		e.apiDog(t, "alice", "pup"+string(rune('a'+i)))
	}
	l := alice.get("/console/dogs?max=2")
	if !strings.Contains(l.body, `href="/console/dogs?offset=2&amp;max=2" rel="next"`) || !strings.Contains(l.body, "1–2 of 4") {
		t.Errorf("paging: no next link:\n%s", l.body)
	}

	// Delete it.
	p = alice.form(dogPath, url.Values{"op": {"delete"}})
	if p.status != 200 || !strings.Contains(p.body, "The dog is deleted.") {
		t.Fatalf("delete: got %d\n%s", p.status, p.body)
	}
	if p = alice.get(dogPath); p.status != 404 {
		t.Errorf("GET the deleted dog: got %d, want 404", p.status)
	}
}

// A person reaches nobody else's dog through the console: the API
// answers for the person, and nothing changes.
func TestConsoleOthersDog(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := start(t, db)
		bobs := e.apiDog(t, "bob", "Bobs")
		alice := e.signIn(t, "alice")
		path := "/console/dogs/" + bobs + "/"
		if p := alice.get(path); p.status != 403 && p.status != 404 {
			t.Errorf("GET bob's dog: got %d, want 403 or 404", p.status)
		} else if strings.Contains(p.body, "Bobs") {
			t.Error("the page shows bob's dog")
		}
		// Alice's own page gives her a CSRF token to try with.
		tok := csrf(t, alice.get("/console/dogs").body)
		for _, op := range []url.Values{
			{"op": {"edit"}, "name": {"Mine"}, "email": {"a@example.org"}},
			{"op": {"delete"}},
			{"op": {"schedule"}, "frequency": {"5"}},
		} {
			op.Set("csrf_token", tok)
			if p := alice.post(path, op, nil); p.status != 403 && p.status != 404 {
				t.Errorf("%s bob's dog: got %d, want 403 or 404", op.Get("op"), p.status)
			}
		}
		if list := alice.get("/console/dogs"); strings.Contains(list.body, "Bobs") {
			t.Error("alice's list shows bob's dog")
		}
		res := e.Do(apitest.Request{Path: "/v1/dogs/" + bobs + "/", User: "bob", Password: pw})
		if m := res.Map(t); res.StatusCode != 200 || m["name"] != "Bobs" || m["barks"] != nil {
			t.Errorf("bob's dog after alice's attempts: %d %s", res.StatusCode, res.Body)
		}
	})
}

func TestConsoleSignOut(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice := e.signIn(t, "alice")
	tok := csrf(t, alice.get("/console/").body)
	if p := alice.post("/console/signout", url.Values{"csrf_token": {tok}}, nil); p.status != 303 || p.header.Get("Location") != e.URL+"/signin?next=%2Fconsole%2F" {
		t.Fatalf("sign out: got %d %q", p.status, p.header.Get("Location"))
	}
	if p := alice.get("/console/"); p.status != 303 {
		t.Errorf("after signing out: got %d, want 303 to /signin", p.status)
	}
}

func TestConsoleAdminPages(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice := e.signIn(t, "alice")
	if p := alice.get("/console/admin/people"); p.status != 403 || strings.Contains(p.body, "root") {
		t.Errorf("a person's GET of the people page: got %d, want 403", p.status)
	}
	tok := csrf(t, alice.get("/console/dogs").body)
	if p := alice.post("/console/admin/people", url.Values{"name": {"eve"}, "email": {"eve@example.org"}, "csrf_token": {tok}}, nil); p.status != 403 {
		t.Errorf("a person's POST of the people page: got %d, want 403", p.status)
	}
	root := e.signIn(t, "root")
	p := root.get("/console/admin/people")
	if p.status != 200 || !strings.Contains(p.body, "alice") {
		t.Fatalf("the administrator's people page: got %d\n%s", p.status, p.body)
	}
	checkPage(t, "people", p)
	p = root.form("/console/admin/people", url.Values{"name": {"carol"}, "email": {"carol@example.org"}})
	if p.status != 200 || !strings.Contains(p.body, `id="secret"`) || !strings.Contains(p.body, "Created carol.") {
		t.Fatalf("create carol: got %d\n%s", p.status, p.body)
	}
	if p = root.get("/console/admin/people"); strings.Contains(p.body, `id="secret"`) {
		t.Error("the password is shown again")
	}
	if p = alice.get("/console/admin/people"); p.status != 403 {
		t.Errorf("got %d", p.status)
	}

	// The server's health and metrics.
	p = root.get("/console/admin/server")
	checkPage(t, "server", p)
	if p.status != 200 || !strings.Contains(p.body, `id="healthz">ok`) || !strings.Contains(p.body, `id="readyz">ready (sqlite)`) ||
		!regexp.MustCompile(`id="requests">[1-9]\d* requests: 2xx [1-9]`).MatchString(p.body) {
		t.Errorf("the server page:\n%s", p.body)
	}
	// OAuth consumers: registered (secret once), listed, deleted.
	p = root.form("/console/admin/oauth", url.Values{"op": {"create"}, "name": {"Printer"}, "callbackUrl": {"https://printer.example.org/cb"}})
	checkPage(t, "oauth", p)
	if p.status != 200 || !strings.Contains(p.body, `id="secret"`) || !strings.Contains(p.body, "<td class=\"wrap\">Printer</td>") {
		t.Fatalf("register a consumer: %d\n%s", p.status, p.body)
	}
	key := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(p.body)
	if p = root.form("/console/admin/oauth", url.Values{"op": {"delete"}, "key": {key[1]}}); p.status != 200 || !strings.Contains(p.body, `id="noconsumers"`) {
		t.Errorf("delete the consumer: %d", p.status)
	}
	for _, path := range []string{"/console/admin/server", "/console/admin/oauth"} {
		if p = alice.get(path); p.status != 403 {
			t.Errorf("a person's GET %s: %d, want 403", path, p.status)
		}
	}
}

// Cross-site form posts are refused and change nothing.
func TestConsoleCrossSiteRefused(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice := e.signIn(t, "alice")
	tok := csrf(t, alice.get("/console/dogs").body)
	form := func(token string) url.Values {
		v := url.Values{"name": {"Forged"}, "email": {"f@example.org"}}
		if token != "" {
			v.Set("csrf_token", token)
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", form(""), nil},
		{"wrong token", form(strings.Repeat("A", 43)), nil},
		{"foreign origin", form(tok), map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"cross-site fetch", form(tok), map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		if p := alice.post("/console/dogs", tc.form, tc.header); p.status != 403 {
			t.Errorf("%s: got %d, want 403", tc.name, p.status)
		}
	}
	res := e.Do(apitest.Request{Path: "/v1/dogs", User: "alice", Password: pw})
	if m := res.Map(t); m["total"] != float64(0) {
		t.Errorf("after the refused posts alice has %v dogs, want 0", m["total"])
	}
	// The same form from the site itself works.
	if p := alice.post("/console/dogs", form(tok), map[string]string{"Sec-Fetch-Site": "same-origin"}); p.status != 200 {
		t.Errorf("same-origin post: got %d, want 200", p.status)
	}
}

// The largest pages (a hundred rows, their forms and the panel) stay under
// 100 KB.
func TestConsolePageSizes(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	for i := range 100 {
		e.apiDog(t, "root", strings.Repeat("n", 60)+strconv.Itoa(i))
	}
	for i := range 100 {
		body := map[string]any{"make": "Make" + strconv.Itoa(i), "model": strings.Repeat("m", 40), "color": "c" + strconv.Itoa(i%50), "type": "t" + strconv.Itoa(i%30),
			"doors": i % 6, "year": 1990 + i%30}
		if res := e.Do(apitest.Request{Method: "POST", Path: "/cars", User: "root", Password: pw, Body: body}); res.StatusCode != 201 {
			t.Fatalf("create car: %d %s", res.StatusCode, res.Body)
		}
	}
	root := e.signIn(t, "root")
	for _, path := range []string{"/console/dogs?max=100", "/console/cars?max=100", "/console/events?max=100", "/console/admin/people?max=100"} {
		p := root.get(path)
		if p.status != 200 {
			t.Errorf("%s: %d", path, p.status)
		}
		checkPage(t, path, p)
		t.Logf("%s: %d bytes", path, len(p.body))
	}
}
