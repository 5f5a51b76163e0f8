package main

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	openidgo "github.com/yohcop/openid-go"
)

// chromium returns the path of the Chromium binary. Without one the test
// is skipped, except under CI=true, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is required under CI=true (apt-get install chromium)")
	}
	t.Skip("SKIPPING BROWSER TEST: no Chromium (apt-get install chromium)")
	return ""
}

// checkScreenshot decodes a PNG screenshot, saves it in dir and checks
// that it shows a rendered page: a real size and more than a few colours.
func checkScreenshot(t *testing.T, dir, name string, buf []byte) image.Image {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", name, err)
	}
	b := img.Bounds()
	if b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("%s: %dx%d is too small for a page", name, b.Dx(), b.Dy())
	}
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 8 {
		t.Fatalf("%s: only %d colours: a blank page?", name, len(colours))
	}
	return img
}

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

// TestOpenIDInChromium signs in to a relying party (openid-go, served on
// 127.0.0.1) with headless Chromium against a real yard serve: the
// relying party redirects to yard, Chromium fills in the sign-in form and
// presses Sign in on the confirmation page, and the relying party's
// Verify accepts the assertion. A second sign-in is cancelled. Each page
// is captured as a screenshot and checked.
func TestOpenIDInChromium(t *testing.T) {
	exe := chromium(t)
	data := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	s := startInProcess(t, "--data", data, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--base-url", base)
	addAlice(t, s)

	// The relying party: /start discovers yard and redirects there,
	// /back verifies the answer.
	rp := openidgo.NewOpenID(trusting(t, data))
	cache, nonces := openidgo.NewSimpleDiscoveryCache(), openidgo.NewSimpleNonceStore()
	var rpURL string
	rpSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/start":
			to, err := rp.RedirectURL(base+"/openid", rpURL+"/back", rpURL+"/")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
		case "/back":
			if r.URL.Query().Get("openid.mode") == "cancel" {
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
	defer rpSrv.Close()
	rpURL = rpSrv.URL

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Both servers have self-signed certificates.
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	shots := t.TempDir()
	// run does the steps, then reads one value.
	text := func(step string, sel chromedp.CSS, steps ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return v
	}
	shot := func(name string) image.Image {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		return checkScreenshot(t, shots, name, buf)
	}

	text("to the sign-in page", "h1", chromedp.Navigate(rpURL+"/start"), chromedp.WaitVisible(chromedp.CSS("#username")))
	location, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(location, base+"/signin?next=") {
		t.Fatalf("the relying party sent Chromium to %s, want yard's sign-in page", location)
	}
	signinImg := shot("signin.png")
	if n := brandPixels(signinImg); n < 500 {
		t.Fatalf("signin.png has %d pixels of the Sign in button's colour: the stylesheet did not apply", n)
	}

	party := text("sign in", "#party",
		chromedp.SendKeys(chromedp.CSS("#username"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#password"), oidPassword),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#allow")))
	user := text("read the user", "#user")
	if party != rpURL+"/" || user != "alice" {
		t.Fatalf("confirmation page names %q for user %q, want %q and alice", party, user, rpURL+"/")
	}
	consentImg := shot("consent.png")
	if n := brandPixels(consentImg); n < 500 {
		t.Fatalf("consent.png has %d pixels of the Sign in button's colour: the stylesheet did not apply", n)
	}
	if sameImage(signinImg, consentImg) {
		t.Fatal("the sign-in and confirmation screenshots are the same")
	}

	outcome := text("confirm", "#result", chromedp.Click(chromedp.CSS("#allow")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if want := "Signed in as " + base + "/openid/id/alice"; outcome != want {
		t.Fatalf("the relying party says %q, want %q", outcome, want)
	}
	shot("result.png")

	// Signed in already: straight to the confirmation page; Cancel.
	outcome = text("cancel", "#result", chromedp.Navigate(rpURL+"/start"), chromedp.WaitVisible(chromedp.CSS("#deny")),
		chromedp.Click(chromedp.CSS("#deny")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if outcome != "Sign-in cancelled" {
		t.Fatalf("after Cancel the relying party says %q", outcome)
	}
}
