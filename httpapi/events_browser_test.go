package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/browsertest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// startLiveEvents is the API over SQLite with a running events hub, bark
// workers and the first-party schemes (cookie sessions), with alice and a
// dog of hers; it returns the environment and the dog's path.
func startLiveEvents(t *testing.T) (*barkEnv, string) {
	t.Helper()
	db := storetest.Open(t, store.SQLite)
	hub := events.New(db, events.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	env := startBarks(t, db,
		apitest.WithAuthKit(t, db, nil, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(0, nil) }),
		func(d *httpapi.Deps) { d.Events = hub })
	// The browser's streams end before the server closes (cleanups run
	// last first).
	t.Cleanup(hub.Close)
	env.CreateUser("alice", pw)
	_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
	return env, dogURI
}

// newTab opens a tab, closed when the test ends. Its first action has no
// time limit: a limit would close the tab with it.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	return tab
}

// eval runs a script in the tab and decodes its value into T.
func eval[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := browse(t, tab, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// TestDocsLiveEventsInChromium: on /docs, a visitor without a session is
// told how to sign in; signed in with the credentials box's cookie
// session, Start opens an EventSource on /v1/events and the panel lists
// the events of a bark made through the API (type and subject, as text)
// as they arrive.
func TestDocsLiveEventsInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	env, dogURI := startLiveEvents(t)
	tab := newTab(t, ctx)
	do(t, tab, chromedp.Navigate(env.URL+"/docs"), chromedp.WaitVisible(chromedp.ID("op-getEvents")))

	// No session: the panel says how to sign in, and Start is off.
	do(t, tab, chromedp.Click(chromedp.CSS("#live > summary")))
	if s := text(t, tab, "live-status"); !strings.Contains(s, "Not signed in") || !strings.Contains(s, "sign in") {
		t.Errorf("status without a session: %q", s)
	}
	if !eval[bool](t, tab, `document.getElementById("live-start").disabled`) {
		t.Error("Start is enabled without a session")
	}

	// Sign in from the page (POST /sessions), start the stream.
	eval[bool](t, tab, fmt.Sprintf(`(() => { document.getElementById("credentials").open = true;
		const s = document.getElementById("scheme"); s.value = "session"; s.dispatchEvent(new Event("change"));
		document.getElementById("cred-user").value = "alice"; document.getElementById("cred-password").value = %q;
		return true; })()`, pw))
	do(t, tab, chromedp.Click(chromedp.ID("session-signin")))
	if _, err := browse(t, tab, chromedp.Poll[bool](`!document.getElementById("live-start").disabled`)); err != nil {
		t.Fatalf("Start stays off after signing in: %v (%s; %s)", err, text(t, tab, "session-status"), text(t, tab, "live-status"))
	}
	do(t, tab, chromedp.Click(chromedp.ID("live-start")))
	if _, err := browse(t, tab, chromedp.Poll[bool](`document.getElementById("live-status").textContent.startsWith("Streaming")`)); err != nil {
		t.Fatalf("the stream did not open: %v (%s)", err, text(t, tab, "live-status"))
	}

	// A bark through the API, with Basic: its events reach the page.
	resp := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw})
	if resp.StatusCode != 201 {
		t.Fatalf("bark: %d %s", resp.StatusCode, resp.Body)
	}
	bark := resp.Header.Get("Location")
	want := fmt.Sprintf(`[...document.querySelectorAll("#live-events li")].some((li) =>
		li.querySelector(".live-type").textContent === "bark.succeeded" && li.querySelector(".live-subject").textContent === %q) &&
		document.querySelectorAll("#live-events li").length >= 3`, bark)
	if _, err := browse(t, tab, chromedp.Poll[bool](want)); err != nil {
		t.Fatalf("bark.succeeded of %s not listed: %v (%s)", bark, err, text(t, tab, "live-events"))
	}
	// All of the bark's events, in order, each once, as text.
	type item struct{ Type, Subject, ID, HTML string }
	items := eval[[]item](t, tab, `[...document.querySelectorAll("#live-events li")].map((li) => ({
		Type: li.querySelector(".live-type").textContent, Subject: li.querySelector(".live-subject").textContent,
		ID: li.dataset.id, HTML: li.innerHTML }))`)
	var got []string
	for i, it := range items {
		got = append(got, it.Type)
		if strings.Count(it.HTML, "<") != 4 {
			t.Errorf("item %d holds markup beyond its two spans: %s", i, it.HTML)
		}
		if i > 0 && it.ID <= items[i-1].ID {
			t.Errorf("item %d: id %s after %s", i, it.ID, items[i-1].ID)
		}
	}
	if strings.Join(got, " ") != "bark.created bark.succeeded dog.updated" {
		t.Errorf("listed %q, want the bark's events in order", got)
	}
	if items[0].Subject != bark {
		t.Errorf("bark.created subject %q, want %q", items[0].Subject, bark)
	}

	dir := t.TempDir()
	shotOf(t, tab, dir, "live-events", "#live")
	b, err := os.ReadFile(filepath.Join(dir, "live-events.png"))
	if err != nil || len(b) == 0 {
		t.Fatalf("screenshot: %d bytes, %v", len(b), err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("screenshot of the live events panel: %s", filepath.Join(dir, "live-events.png"))
	if os.Getenv("YARD_KEEP_SCREENSHOTS") != "" {
		_ = os.CopyFS(filepath.Join(os.Getenv("YARD_KEEP_SCREENSHOTS"), t.Name()), os.DirFS(dir))
	}

	// Stop closes the stream; signing out turns the panel off.
	do(t, tab, chromedp.Click(chromedp.ID("live-stop")))
	if s := text(t, tab, "live-status"); !strings.HasPrefix(s, "Signed in.") {
		t.Errorf("status after Stop: %q", s)
	}
	do(t, tab, chromedp.Click(chromedp.ID("session-signout")))
	if _, err := browse(t, tab, chromedp.Poll[bool](`document.getElementById("live-start").disabled &&
		document.getElementById("live-status").textContent.startsWith("Not signed in")`)); err != nil {
		t.Errorf("after signing out: %v (%s)", err, text(t, tab, "live-status"))
	}
}

// TestEventSourceWithSessionCookieInChromium: a page script's
// new EventSource('/v1/events'), with nothing but the session cookie the
// server gave (set as the browser would keep it: Secure, HttpOnly),
// receives a bark's events, ids and CloudEvent data included.
func TestEventSourceWithSessionCookieInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	env, dogURI := startLiveEvents(t)
	signin := env.Do(apitest.Request{Method: "POST", Path: "/sessions", Body: map[string]string{"username": "alice", "password": pw}})
	var key string
	for _, c := range signin.Cookies() {
		if c.Name == "sessionToken" {
			key = c.Value
		}
	}
	if signin.StatusCode != 201 || key == "" {
		t.Fatalf("POST /sessions: %d, cookie %q", signin.StatusCode, key)
	}
	tab := newTab(t, ctx)
	yes := true
	if _, err := browse(t, tab, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: "sessionToken", Value: key,
			URL: env.URL + "/", Path: "/", Secure: &yes, HTTPOnly: &yes, SameSite: network.CookieSameSiteLax})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	do(t, tab, chromedp.Navigate(env.URL+"/docs"), chromedp.WaitReady(chromedp.CSS("body")))
	// The page cannot read an HttpOnly cookie: only the browser sends it.
	if c := eval[string](t, tab, `document.cookie`); strings.Contains(c, key) {
		t.Fatalf("document.cookie shows the HttpOnly session: %q", c)
	}
	eval[bool](t, tab, `(() => {
		window.got = []; window.opened = false; window.failed = 0;
		const es = new EventSource("/v1/events");
		es.onopen = () => { window.opened = true; };
		es.onerror = () => { window.failed++; };
		for (const t of ["bark.created", "bark.succeeded", "dog.updated"]) {
			es.addEventListener(t, (e) => window.got.push({ type: e.type, id: e.lastEventId, data: JSON.parse(e.data) }));
		}
		window.stream = es;
		return true; })()`)
	if _, err := browse(t, tab, chromedp.Poll[bool](`window.opened`)); err != nil {
		t.Fatalf("the EventSource did not open: %v (errors: %d)", err, eval[int](t, tab, `window.failed`))
	}
	resp := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw})
	if resp.StatusCode != 201 {
		t.Fatalf("bark: %d %s", resp.StatusCode, resp.Body)
	}
	bark := resp.Header.Get("Location")
	if _, err := browse(t, tab, chromedp.Poll[bool](`window.got.length >= 3`)); err != nil {
		t.Fatalf("events: %v (%s)", err, eval[string](t, tab, `JSON.stringify(window.got)`))
	}
	type got struct {
		Type string
		ID   string
		Data struct {
			ID      string
			Type    string
			Subject string
			Source  string
			Data    json.RawMessage
		}
	}
	evs := eval[[]got](t, tab, `window.got`)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		if e.ID == "" || e.Data.ID != e.ID || e.Data.Type != e.Type || e.Data.Source != env.URL {
			t.Errorf("event %+v: the SSE id and type must be the CloudEvent's", e)
		}
	}
	if strings.Join(types, " ") != "bark.created bark.succeeded dog.updated" || evs[0].Data.Subject != bark || evs[2].Data.Subject != env.URL+dogURI {
		t.Errorf("got %v of %s, %s; want bark.created bark.succeeded dog.updated of %s", types, evs[0].Data.Subject, evs[2].Data.Subject, bark)
	}
	if n := eval[int](t, tab, `window.failed`); n != 0 {
		t.Errorf("the EventSource reported %d errors", n)
	}
	eval[bool](t, tab, `window.stream.close(), true`)
}

// TestDocsWithoutJavaScriptInChromium: with scripts off, /docs still
// shows its text, and the live events panel says what it needs and
// offers nothing to press.
func TestDocsWithoutJavaScriptInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	env, _ := startLiveEvents(t)
	tab := newTab(t, ctx)
	if _, err := browse(t, tab, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	do(t, tab, chromedp.Navigate(env.URL+"/docs"), chromedp.WaitReady(chromedp.ID("live")),
		chromedp.Click(chromedp.CSS("#live > summary")), chromedp.WaitVisible(chromedp.ID("live-status")))
	if s := text(t, tab, "live-status"); !strings.Contains(s, "needs JavaScript") || !strings.Contains(s, "text/event-stream") {
		t.Errorf("status without JavaScript: %q", s)
	}
	attrs, err := browse(t, tab, chromedp.Attributes(chromedp.ID("live-start")))
	if _, disabled := attrs["disabled"]; err != nil || !disabled {
		t.Errorf("Start without JavaScript: attributes %v (%v), want disabled", attrs, err)
	}
	if s := text(t, tab, "summary"); !strings.Contains(s, "/openapi.json") {
		t.Errorf("summary without JavaScript: %q", s)
	}
}
