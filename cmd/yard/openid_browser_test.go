package main

import (
	"context"
	"fmt"
	"html"
	"image"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	openidgo "github.com/yohcop/openid-go"

	"github.com/yard-api/yard/internal/browsertest"
)

// brandPixels counts the pixels of the pages' brand colour (#2f5bd3, the
// primary button): present only when the stylesheet was allowed and
// applied.
func brandPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 0x2f && g>>8 == 0x5b && bl>>8 == 0xd3 {
				n++
			}
		}
	}
	return n
}

func sameImage(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y += 2 {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x += 2 {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// openidBrowser is a real yard serve with alice and bob, a relying party
// (openid-go, served on 127.0.0.1) and headless Chromium.
type openidBrowser struct {
	t      *testing.T
	base   string // yard
	rpURL  string // the relying party
	ctx    context.Context
	shots  string // where screenshots are saved
	server *server
}

// startOpenIDBrowser starts yard, the relying party and Chromium. The
// relying party's /start?id=IDENTIFIER discovers IDENTIFIER (yard's OP
// identifier when not given) and redirects there; /back verifies the
// answer and shows the outcome in the element with id "result".
func startOpenIDBrowser(t *testing.T) *openidBrowser {
	data := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	s := startInProcess(t, "--data", data, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--base-url", base)
	addAlice(t, s)
	if resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "bob", "password": oidPassword}); resp.StatusCode != 201 {
		t.Fatalf("create bob: %d %v", resp.StatusCode, m)
	}

	rp := openidgo.NewOpenID(trusting(t, data))
	cache, nonces := openidgo.NewSimpleDiscoveryCache(), openidgo.NewSimpleNonceStore()
	var rpURL string
	rpSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/start":
			var to string
			var err error
			if id := r.URL.Query().Get("id"); id == "" {
				to, err = rp.RedirectURL(base+"/openid", rpURL+"/back", rpURL+"/")
			} else {
				// A claimed identifier: openid-go's RedirectURL leaves it
				// out after Yadis discovery (it keeps it only from HTML
				// discovery), which would ask for identifier_select, so
				// the request is built from its discovery with it.
				var endpoint, localID string
				if endpoint, localID, _, err = rp.Discover(id); err == nil {
					to, err = openidgo.BuildRedirectURL(endpoint, localID, id, rpURL+"/back", rpURL+"/")
				}
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
		case "/back":
			if q := r.URL.Query(); q.Get("openid.mode") == "cancel" {
				// A negative assertion (OpenID 2.0 §10.2): ns and mode.
				if q.Get("openid.ns") != "http://specs.openid.net/auth/2.0" {
					fmt.Fprintf(w, `<!doctype html><title>RP</title><h1 id="result">Cancelled without openid.ns: %s</h1>`, html.EscapeString(r.URL.RawQuery))
					return
				}
				fmt.Fprint(w, `<!doctype html><title>RP</title><h1 id="result">Sign-in cancelled</h1>`)
				return
			}
			id, err := rp.Verify(rpURL+r.URL.RequestURI(), cache, nonces)
			if err != nil {
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprintf(w, `<!doctype html><title>RP</title><h1 id="result">Refused: %s</h1>`, html.EscapeString(err.Error()))
				return
			}
			fmt.Fprintf(w, `<!doctype html><title>RP</title><h1 id="result">Signed in as %s</h1>`, html.EscapeString(id))
		default:
			http.NotFound(w, r)
		}
	}))
	rpSrv.StartTLS()
	t.Cleanup(rpSrv.Close)
	rpURL = rpSrv.URL

	ctx := browsertest.Start(t)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	return &openidBrowser{t: t, base: base, rpURL: rpURL, ctx: ctx, shots: t.TempDir(), server: s}
}

// text does the steps, then reads the text of sel.
func (o *openidBrowser) text(step string, sel chromedp.CSS, steps ...chromedp.Action[chromedp.Void]) string {
	o.t.Helper()
	if err := chromedp.Do(o.ctx, steps...); err != nil {
		o.t.Fatalf("%s: %v", step, err)
	}
	v, err := chromedp.Run(o.ctx, chromedp.Text(sel))
	if err != nil {
		o.t.Fatalf("%s: %v", step, err)
	}
	return v
}

// shot captures the page, saves it and checks it shows a rendered page.
func (o *openidBrowser) shot(name string) image.Image {
	o.t.Helper()
	buf, err := chromedp.Run(o.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		o.t.Fatalf("screenshot %s: %v", name, err)
	}
	return browsertest.CheckScreenshot(o.t, o.shots, name, buf)
}

// location is the address Chromium shows.
func (o *openidBrowser) location() string {
	o.t.Helper()
	loc, err := chromedp.Run(o.ctx, chromedp.Location())
	if err != nil {
		o.t.Fatal(err)
	}
	return loc
}

// signInAs fills in the sign-in form shown and sends it; the next page
// must show wait.
func (o *openidBrowser) signInAs(name string, wait chromedp.CSS) {
	o.t.Helper()
	steps := []chromedp.Action[chromedp.Void]{}
	if name != "" {
		steps = append(steps, chromedp.SendKeys(chromedp.CSS("#username"), name))
	}
	steps = append(steps, chromedp.SendKeys(chromedp.CSS("#password"), oidPassword), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(wait))
	if err := chromedp.Do(o.ctx, steps...); err != nil {
		o.t.Fatalf("sign in as %s: %v", name, err)
	}
}

// TestOpenIDInChromium signs in to a relying party (openid-go, served on
// 127.0.0.1) with headless Chromium against a real yard serve: the
// relying party redirects to yard, Chromium fills in the sign-in form and
// presses Sign in on the confirmation page, and the relying party's
// Verify accepts the assertion. A second sign-in is cancelled. Each page
// is captured as a screenshot and checked.
func TestOpenIDInChromium(t *testing.T) {
	t.Parallel()
	o := startOpenIDBrowser(t)
	base, rpURL := o.base, o.rpURL

	o.text("to the sign-in page", "h1", chromedp.Navigate(rpURL+"/start"), chromedp.WaitVisible(chromedp.CSS("#username")))
	if location := o.location(); !strings.HasPrefix(location, base+"/signin?next=") {
		t.Fatalf("the relying party sent Chromium to %s, want yard's sign-in page", location)
	}
	signinImg := o.shot("signin.png")
	if n := brandPixels(signinImg); n < 500 {
		t.Fatalf("signin.png has %d pixels of the Sign in button's colour: the stylesheet did not apply", n)
	}

	o.signInAs("alice", "#allow")
	party, user := o.text("read the party", "#party"), o.text("read the user", "#user")
	if party != rpURL+"/" || user != "alice" {
		t.Fatalf("confirmation page names %q for user %q, want %q and alice", party, user, rpURL+"/")
	}
	consentImg := o.shot("consent.png")
	if n := brandPixels(consentImg); n < 500 {
		t.Fatalf("consent.png has %d pixels of the Sign in button's colour: the stylesheet did not apply", n)
	}
	if sameImage(signinImg, consentImg) {
		t.Fatal("the sign-in and confirmation screenshots are the same")
	}

	outcome := o.text("confirm", "#result", chromedp.Click(chromedp.CSS("#allow")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if want := "Signed in as " + base + "/openid/id/alice"; outcome != want {
		t.Fatalf("the relying party says %q, want %q", outcome, want)
	}
	o.shot("result.png")

	// Signed in already: straight to the confirmation page; Cancel.
	outcome = o.text("cancel", "#result", chromedp.Navigate(rpURL+"/start"), chromedp.WaitVisible(chromedp.CSS("#deny")),
		chromedp.Click(chromedp.CSS("#deny")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if outcome != "Sign-in cancelled" {
		t.Fatalf("after Cancel the relying party says %q", outcome)
	}
}

// TestOpenIDWrongUserInChromium: the relying party asks for bob's
// identifier while alice is signed in. yard shows the wrong-user page
// (screenshot checked); Cancel brings the browser back to the relying party
// with openid.mode=cancel; the second time, "Sign in as someone else"
// signs alice out and shows the sign-in form filled in with bob, and after
// bob signs in and confirms, the relying party's Verify accepts bob.
func TestOpenIDWrongUserInChromium(t *testing.T) {
	t.Parallel()
	o := startOpenIDBrowser(t)
	base, rpURL := o.base, o.rpURL
	forBob := rpURL + "/start?id=" + url.QueryEscape(base+"/openid/id/bob")

	// alice signs in to the relying party first.
	o.text("to the sign-in page", "h1", chromedp.Navigate(rpURL+"/start"), chromedp.WaitVisible(chromedp.CSS("#username")))
	o.signInAs("alice", "#allow")
	if outcome := o.text("confirm as alice", "#result", chromedp.Click(chromedp.CSS("#allow")), chromedp.WaitVisible(chromedp.CSS("#result"))); outcome != "Signed in as "+base+"/openid/id/alice" {
		t.Fatalf("alice: the relying party says %q", outcome)
	}

	// Asked for bob: the wrong-user page names both.
	wanted := o.text("to the wrong-user page", "#wanted", chromedp.Navigate(forBob), chromedp.WaitVisible(chromedp.CSS("#switch")))
	user, party := o.text("read the user", "#user"), o.text("read the party", "#party")
	if wanted != "bob" || user != "alice" || party != rpURL+"/" {
		t.Fatalf("the wrong-user page names %q asked for by %q, signed in as %q; want bob, %q, alice", wanted, party, user, rpURL+"/")
	}
	if loc := o.location(); !strings.HasPrefix(loc, base+"/openid/login?") {
		t.Fatalf("the wrong-user page is at %s", loc)
	}
	wrongImg := o.shot("wronguser.png")
	if n := brandPixels(wrongImg); n < 500 {
		t.Fatalf("wronguser.png has %d pixels of the primary button's colour: the stylesheet did not apply", n)
	}

	// Cancel: back at the relying party with a negative assertion.
	if outcome := o.text("cancel", "#result", chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#result"))); outcome != "Sign-in cancelled" {
		t.Fatalf("after Cancel the relying party says %q", outcome)
	}
	if loc := o.location(); !strings.HasPrefix(loc, rpURL+"/back?") || !strings.Contains(loc, "openid.mode=cancel") {
		t.Errorf("after Cancel Chromium is at %s", loc)
	}
	cancelImg := o.shot("wronguser-cancelled.png")
	if sameImage(wrongImg, cancelImg) {
		t.Fatal("the wrong-user page and the relying party's page are the same screenshot")
	}

	// Sign in as someone else: the sign-in form, filled in with bob.
	o.text("to the wrong-user page again", "#wanted", chromedp.Navigate(forBob), chromedp.WaitVisible(chromedp.CSS("#switch")))
	if err := chromedp.Do(o.ctx, chromedp.Click(chromedp.CSS("#switch")), chromedp.WaitVisible(chromedp.CSS("#password"))); err != nil {
		t.Fatalf("sign in as someone else: %v", err)
	}
	name, err := chromedp.Run(o.ctx, chromedp.Value(chromedp.CSS("#username")))
	if err != nil {
		t.Fatal(err)
	}
	if loc := o.location(); name != "bob" || !strings.HasPrefix(loc, base+"/signin?") {
		t.Fatalf("after Sign in as someone else: %s with the name %q, want the sign-in form with bob", loc, name)
	}
	switchImg := o.shot("wronguser-signin.png")
	if sameImage(wrongImg, switchImg) {
		t.Fatal("the wrong-user page and the sign-in form are the same screenshot")
	}
	o.signInAs("", "#allow") // the name is filled in
	if user := o.text("read the user", "#user"); user != "bob" {
		t.Fatalf("the confirmation page after signing in as bob names %q", user)
	}
	o.shot("wronguser-consent.png")
	if outcome := o.text("confirm as bob", "#result", chromedp.Click(chromedp.CSS("#allow")), chromedp.WaitVisible(chromedp.CSS("#result"))); outcome != "Signed in as "+base+"/openid/id/bob" {
		t.Fatalf("bob: the relying party says %q", outcome)
	}
	o.shot("wronguser-result.png")
}
