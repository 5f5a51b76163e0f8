package httpapi_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/browsertest"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestDocsTryItInChromium drives "Try it" on the reference page (/docs)
// in headless Chromium: the car query grammar's "," and "!" reach the
// server as typed; a redirect (303 after an email-count bark, 308 on the
// slash-less dog path) shows the final answer and where it came from; a
// 401 shows its status and challenges without the browser asking for a
// password; every scheme of the credentials box authenticates; a long Link
// header wraps inside the answer.
func TestDocsTryItInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		data := t.TempDir()
		svc := jobs.New(jobs.Config{DB: db, Effects: &jobs.Effects{
			Mailer: &notify.MailOutbox{Dir: filepath.Join(data, "outbox", "mail")},
			Texter: &notify.TextOutbox{Dir: filepath.Join(data, "outbox", "sms")},
			Users:  db, DataDir: data, From: "yard@yard.test", Domain: "yard.test"}})
		var kit *auth.Kit
		env := apitest.Start(t, db,
			apitest.WithAuthKit(t, db, &kit, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(0, nil) }),
			func(d *httpapi.Deps) { d.Barks = svc })
		alice := env.CreateUser("alice", pw)
		env.CreateUser("root", pw, yard.RoleAdmin)
		as := func(r apitest.Request, user string) *apitest.Response {
			r.User, r.Password = user, pw
			return env.Do(r)
		}
		dog := as(apitest.Request{Method: "POST", Path: "/v1/dogs", Body: map[string]any{"name": "Rex", "email": "rex@example.org"}}, "alice")
		if dog.StatusCode != 201 {
			t.Fatalf("create dog: %d %s", dog.StatusCode, dog.Body)
		}
		dogID := dog.Map(t)["id"].(string)
		for _, c := range []map[string]any{
			{"color": "red", "type": "sedan", "doors": 4, "make": "Ford", "model": "Focus", "year": 2015},
			{"color": "blue", "type": "suv", "doors": 5, "make": "Toyota", "model": "RAV4", "year": 2019},
			{"color": "green", "type": "coupe", "doors": 2, "make": "Ford", "model": "Mustang", "year": 2021},
		} {
			if r := as(apitest.Request{Method: "POST", Path: "/cars", Body: c}, "root"); r.StatusCode != 201 {
				t.Fatalf("create car: %d %s", r.StatusCode, r.Body)
			}
		}
		// Credentials of every scheme, made the way a reader makes them.
		login := env.Do(apitest.Request{Method: "POST", Path: "/auth/login", Body: map[string]any{"username": "alice", "password": pw}})
		if login.StatusCode != 200 {
			t.Fatalf("login: %d %s", login.StatusCode, login.Body)
		}
		access := login.Map(t)["access_token"].(string)
		key := as(apitest.Request{Method: "POST", Path: "/apikeys"}, "alice")
		if key.StatusCode != 201 {
			t.Fatalf("api key: %d %s", key.StatusCode, key.Body)
		}
		apiKey, apiSecret := key.Map(t)["apiKey"].(string), key.Map(t)["secret"].(string)
		pool := x509.NewCertPool()
		pool.AddCert(env.Server.Certificate())
		oe := &oauthEnv{authEnv: &authEnv{Env: env, kit: kit, alice: alice, http: &http.Client{
			Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}}
		oe.key, oe.secret, _ = oe.register(t, "Photo Printer <Pro>", "")
		oe.browserOfAlice = browser(t, env)
		o := oe.flow(t, "PLAINTEXT", "oob")

		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		// The browser would ask for a user name and password where the
		// DevTools protocol reports authRequired: record each one, and
		// let every request go on.
		var mu sync.Mutex
		var prompts []string
		paused, authReq := make(chan fetch.RequestID, 64), make(chan fetch.RequestID, 64)
		if err := chromedp.Listen(tab, func(ev any) {
			switch ev := ev.(type) {
			case *fetch.EventRequestPaused:
				paused <- ev.RequestID
			case *fetch.EventAuthRequired:
				mu.Lock()
				prompts = append(prompts, ev.Request.URL)
				mu.Unlock()
				authReq <- ev.RequestID
			}
		}); err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				select {
				case id := <-paused:
					_, _ = chromedp.Call(tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
				case id := <-authReq:
					_, _ = chromedp.Call(tab, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: id,
						AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}})
				case <-tab.Done():
					return
				}
			}
		}()
		yes := true
		if _, err := browse(t, tab, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &yes})
			return err
		})); err != nil {
			t.Fatal(err)
		}
		do(t, tab, chromedp.Navigate(env.URL+"/docs"), chromedp.WaitVisible(chromedp.ID("op-listCars")))
		dir := t.TempDir()

		// setCredentials picks a scheme in the box and fills its fields.
		setCredentials := func(scheme string, fields map[string]string) {
			t.Helper()
			if fields == nil {
				fields = map[string]string{}
			}
			f, _ := json.Marshal(fields)
			js := fmt.Sprintf(`(() => { document.getElementById("credentials").open = true;
				const s = document.getElementById("scheme"); s.value = %q;
				s.dispatchEvent(new Event("change"));
				for (const [id, v] of Object.entries(%s)) document.getElementById(id).value = v;
				return true; })()`, scheme, f)
			if _, err := browse(t, tab, chromedp.Evaluate[bool](js)); err != nil {
				t.Fatal(err)
			}
		}
		// try fills the operation's form, presses its button and returns
		// the answer as the page shows it.
		try := func(op string, inputs map[string]string, body string) string {
			t.Helper()
			f, _ := json.Marshal(inputs)
			js := fmt.Sprintf(`(() => { const d = document.getElementById(%q); d.open = true;
				for (const [n, v] of Object.entries(%s)) d.querySelector('[name="' + n + '"]').value = v;
				const b = d.querySelector('textarea[name="body"]'); if (b) b.value = %q;
				d.querySelector("pre.answer").textContent = "";
				return true; })()`, "op-"+op, f, body)
			if _, err := browse(t, tab, chromedp.Evaluate[bool](js)); err != nil {
				t.Fatal(err)
			}
			do(t, tab, chromedp.Click(chromedp.CSS("#op-"+op+` button[type="submit"]`)))
			out, err := browse(t, tab, chromedp.Poll[string](fmt.Sprintf(
				`(() => { const t = document.querySelector("#op-%s pre.answer").textContent; return t && t !== "…" ? t : ""; })()`, op)))
			if err != nil {
				t.Fatalf("%s: no answer: %v", op, err)
			}
			return out
		}
		// answer splits the page's answer into its first line, the
		// redirect note, the status line, the headers and the body.
		type answer struct {
			request, redirect, status, headers, body string
		}
		parse := func(out string) answer {
			var a answer
			head, rest, _ := strings.Cut(out, "\n\n")
			a.request, a.redirect, _ = strings.Cut(head, "\n")
			hs, body, _ := strings.Cut(rest, "\n\n")
			a.status, a.headers, _ = strings.Cut(hs, "\n")
			a.body = body
			return a
		}
		total := func(t *testing.T, a answer) float64 {
			t.Helper()
			var page struct{ Total float64 }
			if err := json.Unmarshal([]byte(a.body), &page); err != nil {
				t.Fatalf("body of %s: %v\n%s", a.request, err, a.body)
			}
			return page.Total
		}

		// The grammar's comma and "!", sent as typed.
		setCredentials("none", nil)
		a := parse(try("listCars", map[string]string{"color": "red,blue"}, ""))
		if a.request != "GET /cars?color=red,blue" || a.status != "200 OK" || total(t, a) != 2 {
			t.Errorf("color=red,blue: %q %q total %v, want GET /cars?color=red,blue 200 with 2 cars", a.request, a.status, total(t, a))
		}
		a = parse(try("listCars", map[string]string{"color": "", "make": "!ford", "max": "1"}, ""))
		if a.request != "GET /cars?max=1&make=!ford" || a.status != "200 OK" || total(t, a) != 1 {
			t.Errorf("make=!ford: %q %q total %v, want 1 car", a.request, a.status, total(t, a))
		}
		a = parse(try("listCars", map[string]string{"make": "", "max": "", "query": "color=red,blue,green;make=!toyota&max=1"}, ""))
		if a.request != "GET /cars?color=red,blue,green;make=!toyota&max=1" || total(t, a) != 2 {
			t.Errorf("typed query: %q total %v, want 2 cars", a.request, total(t, a))
		}
		if ns := parse(try("namedSearch", map[string]string{"name": "color=red,blue"}, "")); ns.request != "GET /search/color=red,blue" || total(t, ns) != 2 {
			t.Errorf("query in the path: %q total %v, want 2 cars", ns.request, total(t, ns))
		}
		// The Link header of a page is long: it wraps inside the answer.
		if !strings.Contains(a.headers, `rel="next"`) {
			t.Errorf("no next link in %q", a.headers)
		}
		overflow, err := browse(t, tab, chromedp.Evaluate[bool](`(() => { const p = document.querySelector("#op-listCars pre.answer"); return p.scrollWidth > p.clientWidth; })()`))
		if err != nil || overflow {
			t.Errorf("the answer with a long Link header overflows its box (%v)", err)
		}
		shotOf(t, tab, dir, "cars", "#op-listCars")

		// A 401: the status, the challenges, and no password dialog.
		setCredentials("basic", map[string]string{"cred-user": "alice", "cred-password": "wrong"})
		a = parse(try("getDog", map[string]string{"dog_id": dogID}, ""))
		if a.status != "401 Unauthorized" || !strings.Contains(a.headers, `www-authenticate: Basic realm="yard"`) || !strings.Contains(a.body, "unauthorized") {
			t.Errorf("wrong password: %q\n%s\n%s", a.status, a.headers, a.body)
		}
		shotOf(t, tab, dir, "401", "#op-getDog")
		// The session scheme sends cookies, with which a 401 would bring
		// the dialog: without a live session the page sends nothing.
		setCredentials("session", nil)
		if out := try("getDog", map[string]string{"dog_id": dogID}, ""); !strings.HasPrefix(out, "Not sent: there is no live session.") {
			t.Errorf("session scheme before signing in: %q", out)
		}

		// Every scheme of the credentials box.
		for _, c := range []struct {
			scheme string
			fields map[string]string
		}{
			{"basic", map[string]string{"cred-user": "alice", "cred-password": pw}},
			{"digest", map[string]string{"cred-user": "alice", "cred-password": pw}},
			{"bearer", map[string]string{"cred-token": access}},
			{"session", map[string]string{"cred-user": "alice", "cred-password": pw}},
			{"signed", map[string]string{"cred-apikey": apiKey, "cred-secret": apiSecret}},
			{"oauth", map[string]string{"cred-ckey": oe.key, "cred-csecret": oe.secret, "cred-otoken": o.Token, "cred-osecret": o.TokenSecret}},
			{"header", map[string]string{"authz": "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pw))}},
		} {
			setCredentials(c.scheme, c.fields)
			if c.scheme == "session" {
				// A wrong password first: a 401 in the box, no dialog.
				setCredentials("session", map[string]string{"cred-user": "alice", "cred-password": "wrong"})
				do(t, tab, chromedp.Click(chromedp.ID("session-signin")))
				if _, err := browse(t, tab, chromedp.Poll[bool](`document.getElementById("session-status").textContent.startsWith("401")`)); err != nil {
					t.Fatalf("session sign-in with a wrong password: %v (%s)", err, text(t, tab, "session-status"))
				}
				setCredentials(c.scheme, c.fields)
				do(t, tab, chromedp.Click(chromedp.ID("session-signin")))
				if _, err := browse(t, tab, chromedp.Poll[bool](`document.getElementById("session-status").textContent.startsWith("signed in")`)); err != nil {
					t.Fatalf("session sign-in: %v (%s)", err, text(t, tab, "session-status"))
				}
			}
			a = parse(try("getDog", map[string]string{"dog_id": dogID}, ""))
			if a.status != "200 OK" || !strings.Contains(a.body, `"name":"Rex"`) {
				t.Errorf("%s: %q %s\n%s", c.scheme, a.status, a.request, a.body)
			}
			// A redirect: Digest answers the redirected GET too.
			if c.scheme == "digest" {
				a = parse(try("getDogRedirect", map[string]string{"dog_id": dogID}, ""))
				if !strings.Contains(a.redirect, "redirect to "+env.URL+"/v1/dogs/"+dogID+"/") || a.status != "200 OK" {
					t.Errorf("digest, slash-less dog path: %q %q\n%s", a.redirect, a.status, a.body)
				}
			}
			// A write as well: the signed request binds the method and body.
			if c.scheme == "signed" || c.scheme == "oauth" || c.scheme == "digest" {
				a = parse(try("createBark", map[string]string{"dog_id": dogID}, `{"effect":"email"}`))
				if a.status != "200 OK" {
					t.Errorf("%s, POST a bark: %q %s\n%s", c.scheme, a.status, a.request, a.body)
				}
			}
		}

		// Signed out, the session scheme sends nothing again.
		setCredentials("session", nil)
		do(t, tab, chromedp.Click(chromedp.ID("session-signout")))
		if _, err := browse(t, tab, chromedp.Poll[bool](`document.getElementById("session-status").textContent.startsWith("signed out (204)")`)); err != nil {
			t.Fatalf("sign out: %v (%s)", err, text(t, tab, "session-status"))
		}
		if out := try("getDog", map[string]string{"dog_id": dogID}, ""); !strings.HasPrefix(out, "Not sent: there is no live session.") {
			t.Errorf("session scheme after signing out: %q", out)
		}

		// Redirects: the final answer and where it came from.
		setCredentials("basic", map[string]string{"cred-user": "alice", "cred-password": pw})
		a = parse(try("createBark", map[string]string{"dog_id": dogID}, `{"effect":"email-count"}`))
		dogURL := env.URL + "/v1/dogs/" + dogID + "/"
		if !strings.Contains(a.redirect, "redirect to "+dogURL) || a.status != "200 OK" || !strings.Contains(a.body, `"barkCount":1`) {
			t.Errorf("email-count bark (303 to the dog): %q %q\n%s", a.redirect, a.status, a.body)
		}
		shotOf(t, tab, dir, "303", "#op-createBark")
		a = parse(try("getDogRedirect", map[string]string{"dog_id": dogID}, ""))
		if a.request != "GET /v1/dogs/"+dogID || !strings.Contains(a.redirect, "redirect to "+dogURL) || a.status != "200 OK" {
			t.Errorf("slash-less dog path (308): %q %q %q", a.request, a.redirect, a.status)
		}

		mu.Lock()
		if len(prompts) > 0 {
			t.Errorf("the browser asked for credentials for %v", prompts)
		}
		mu.Unlock()
		if os.Getenv("YARD_KEEP_SCREENSHOTS") != "" {
			_ = os.CopyFS(filepath.Join(os.Getenv("YARD_KEEP_SCREENSHOTS"), filepath.Base(t.Name())), os.DirFS(dir))
		}
	})
}

// shotOf saves a screenshot of one element of the page in dir and checks
// that it is a rendered image no wider than the window (1000 pixels: the
// answer wraps rather than widening the page) with more than one colour
// in it.
func shotOf(t *testing.T, ctx context.Context, dir, name, sel string) {
	t.Helper()
	b, err := browse(t, ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	r := img.Bounds()
	if r.Dx() > 1000 || r.Dy() < 50 {
		t.Errorf("screenshot %s is %dx%d, want at most 1000 wide and a rendered element", name, r.Dx(), r.Dy())
	}
	colours := map[color.Color]bool{}
	for y := r.Min.Y; y < r.Max.Y && len(colours) < 3; y += 7 {
		for x := r.Min.X; x < r.Max.X; x += 7 {
			colours[img.At(x, y)] = true
		}
	}
	if len(colours) < 3 {
		t.Errorf("screenshot %s is blank", name)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
