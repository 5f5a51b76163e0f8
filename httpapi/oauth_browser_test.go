package httpapi_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/yard-api/yard/client"
	"github.com/yard-api/yard/internal/browsertest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// browse runs one action with a time limit.
func browse[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// do runs steps in order with a time limit.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if _, err := browse(t, ctx, chromedp.Steps(steps...)); err != nil {
		t.Fatal(err)
	}
}

// text returns the text of the element with an id.
func text(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	s, err := browse(t, ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		t.Fatalf("text of #%s: %v", id, err)
	}
	return s
}

// location returns the URL the tab shows.
func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := browse(t, ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shot saves a full screenshot of the page in dir and checks it shows a
// rendered page.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := browse(t, ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	browsertest.CheckScreenshot(t, dir, name+".png", png)
}

// TestOAuthPagesInChromium: a person in a real browser signs in, sees the
// consumer's name, allows, and lands on the consumer's callback with a
// verifier that the consumer exchanges; then denies a second request.
func TestOAuthPagesInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t)
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		// The consumer's own site, on the loopback address.
		consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>Printer</title><h1>Back at the printer</h1><p id="verifier">%s</p><p id="problem">%s</p>`,
				html.EscapeString(q.Get("oauth_verifier")), html.EscapeString(q.Get("oauth_problem")))
		}))
		t.Cleanup(consumer.Close)
		cb := consumer.URL + "/callback"
		e := startOAuth(t, db, cb)
		dir := t.TempDir()
		bg := context.Background()
		o := &client.OAuth1{ConsumerKey: e.key, ConsumerSecret: e.secret}
		anon := e.client(nil)

		// A fresh tab per engine.
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		if err := chromedp.Do(tab); err != nil {
			t.Fatal(err)
		}

		rt, rs, err := o.RequestToken(bg, anon, cb)
		if err != nil {
			t.Fatal(err)
		}
		do(t, tab, chromedp.Navigate(e.URL+client.OAuthAuthorizePath(rt)), chromedp.WaitVisible(chromedp.ID("username")))
		shot(t, tab, dir, "signin")
		do(t, tab,
			chromedp.SendKeys(chromedp.ID("username"), "alice"),
			chromedp.SendKeys(chromedp.ID("password"), pw),
			chromedp.Click(chromedp.ID("signin")),
			chromedp.WaitVisible(chromedp.ID("allow")),
		)
		if party, user := text(t, tab, "party"), text(t, tab, "user"); party != "Photo Printer <Pro>" || user != "alice" {
			t.Errorf("consent page names %q for %q, want %q for alice", party, user, "Photo Printer <Pro>")
		}
		shot(t, tab, dir, "consent")
		do(t, tab, chromedp.Click(chromedp.ID("allow")), chromedp.WaitVisible(chromedp.ID("verifier")))
		landed, verifier := location(t, tab), text(t, tab, "verifier")
		shot(t, tab, dir, "callback-allowed")
		u, _ := url.Parse(landed)
		if !strings.HasPrefix(landed, cb+"?") || u.Query().Get("oauth_token") != rt || verifier == "" || u.Query().Get("oauth_verifier") != verifier {
			t.Fatalf("allowed: landed on %q with verifier %q", landed, verifier)
		}
		if err := o.AccessToken(bg, anon, rt, rs, verifier); err != nil {
			t.Fatalf("exchange the browser's verifier: %v", err)
		}
		if err := e.client(o).Get(bg, e.dogURI, nil); err != nil {
			t.Fatalf("signed call: %v", err)
		}

		// Deny: still signed in, the consent page comes at once.
		rt2, _, err := o.RequestToken(bg, anon, cb)
		if err != nil {
			t.Fatal(err)
		}
		do(t, tab, chromedp.Navigate(e.URL+client.OAuthAuthorizePath(rt2)), chromedp.WaitVisible(chromedp.ID("deny")))
		if body, err := browse(t, tab, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(body, "Photo Printer <Pro>") {
			t.Errorf("second consent page lacks the consumer's name: %v\n%s", err, body)
		}
		shot(t, tab, dir, "consent-again")
		do(t, tab, chromedp.Click(chromedp.ID("deny")), chromedp.WaitVisible(chromedp.ID("problem")))
		landed, problem := location(t, tab), text(t, tab, "problem")
		shot(t, tab, dir, "callback-denied")
		if problem != "user_refused" || !strings.HasPrefix(landed, cb+"?") || strings.Contains(landed, "oauth_verifier") {
			t.Errorf("denied: landed on %q with oauth_problem %q", landed, problem)
		}
		if os.Getenv("YARD_KEEP_SCREENSHOTS") != "" {
			_ = os.CopyFS(filepath.Join(os.Getenv("YARD_KEEP_SCREENSHOTS"), filepath.Base(t.Name())), os.DirFS(dir))
		}
	})
}
