// Package browsertest starts Debian's headless Chromium for the tests that
// drive yard's pages in a real browser (sign-in, consent, /docs), and checks
// their screenshots. Only tests import it; scripts/test installs Chromium.
package browsertest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Start returns a browser context running headless Chromium with a fresh
// profile, ended when the test ends. Without Chromium the test is skipped,
// except under CI=true, where it fails. The browser trusts any certificate
// (the test servers' are their own) and resolves every name but the
// loopback address to nothing. extra options come after the defaults.
func Start(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed (scripts/test installs Debian's chromium)")
		}
		t.Skip("SKIPPING BROWSER TEST: Chromium is not installed; scripts/test installs it")
	}
	// Chromium's own temporary files (the directory of its singleton
	// socket, which a browser stopped rather than closed leaves behind) go
	// to a directory of the test's, removed after the browser's end: a run
	// of the suite leaves nothing in /tmp.
	tmp, err := os.MkdirTemp("", "yard-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the browser's cleanups, so it runs after them.
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR=" + tmp),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1000, 800),
	}, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first call starts the browser; it takes no time limit, or the
	// limit would stop the browser too.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// CheckScreenshot decodes a PNG screenshot, saves it in dir as name and
// checks that it shows a rendered page: at least 300×200 pixels and more
// than a few colours.
func CheckScreenshot(t *testing.T, dir, name string, buf []byte) image.Image {
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
