package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/yard-api/yard/internal/browsertest"
)

// axeVersion is the axe-core the console's pages are checked with.
const axeVersion = "axe-core@4.10.3"

// consoleShots is where a test's screenshots go: a temporary directory,
// or the directory named by YARD_CONSOLE_SHOTS, which docs/console.md's
// pictures come from (YARD_CONSOLE_SHOTS=$PWD/docs/console go test -run
// TestConsole ./cmd/yard).
func consoleShots(t *testing.T) string {
	if dir := os.Getenv("YARD_CONSOLE_SHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// consoleTab is a tab of headless Chromium on a real yard serve, with the
// messages its pages write to the browser's console.
type consoleTab struct {
	t    *testing.T
	base string
	ctx  context.Context
	axe  string // axe.min.js, or "" to skip the audit

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

func newConsoleTab(t *testing.T, s *server, base, axe string, javascript bool) *consoleTab {
	t.Helper()
	ctx := browsertest.Start(t)
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	c := &consoleTab{t: t, base: base, ctx: tab, axe: axe}
	msgs := chromedp.Console(tab)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.messages = append(c.messages, m)
			c.mu.Unlock()
		}
	}()
	if !javascript {
		c.run(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}))
	}
	return c
}

// run does steps with a time limit.
func (c *consoleTab) run(steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		c.t.Fatalf("%v", err)
	}
}

func (c *consoleTab) eval(js string) bool {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		c.t.Fatalf("%s: %v", js, err)
	}
	return v
}

func (c *consoleTab) text(sel string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		body, _ := chromedp.Run(c.ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		c.t.Fatalf("text of %s: %v\n%s", sel, err, body)
	}
	return v
}

// poll waits until js is true.
func (c *consoleTab) poll(what, js string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// settle waits until js is true across a navigation (an evaluation the
// navigation interrupts is tried again).
func (c *consoleTab) settle(what, js string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerHTML.slice(0, 3000)`))
			cancel()
			c.t.Fatalf("%s: %v (value %v)\n%s", what, err, ok, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signIn goes to the console, is sent to /signin and comes back signed
// in.
func (c *consoleTab) signIn(name, password string) {
	c.t.Helper()
	c.run(chromedp.Navigate(c.base+"/console/dogs"), chromedp.WaitVisible(chromedp.ID("username")))
	c.run(chromedp.SendKeys(chromedp.ID("username"), name), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("create")))
}

// audit runs axe-core on the page shown (light and dark): no violation of
// impact serious or critical.
func (c *consoleTab) audit(page string) {
	c.t.Helper()
	if c.axe == "" {
		return
	}
	for _, scheme := range []string{"light", "dark"} {
		c.scheme(scheme)
		if !c.eval(`typeof axe !== "undefined"`) {
			c.eval(c.axe + "; true")
		}
		ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
		type report struct {
			Bad    []string
			Passes int
		}
		found, err := chromedp.Run(ctx, chromedp.Evaluate[report](`axe.run(document).then((r) => ({
			bad: r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
				.map((v) => v.id + " (" + v.impact + "): " + v.nodes.map((n) => n.target.join(" ")).join(", ")),
			passes: r.passes.length}))`, chromedp.EvalAwaitPromise))
		cancel()
		if err != nil {
			c.t.Fatalf("axe on %s: %v", page, err)
		}
		if found.Passes < 10 {
			c.t.Errorf("axe on %s passed only %d rules: did it run?", page, found.Passes)
		}
		for _, v := range found.Bad {
			c.t.Errorf("axe, %s (%s): %s", page, scheme, v)
		}
	}
	c.scheme("light")
}

// scheme makes the page prefer a light or dark colour scheme.
func (c *consoleTab) scheme(s string) {
	c.t.Helper()
	c.run(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}})
		return err
	}))
}

// shot is one way of capturing a page: its width and colour scheme.
type shot struct {
	width  int64
	scheme string
	suffix string
}

// shots saves the page in each way named ("1280", "390", "390-dark"; all
// three when none is) into docs/console, checks each shows a rendered
// page, and that the page needs no sideways scrolling at 390 px.
func (c *consoleTab) shots(name string, ways ...string) {
	c.t.Helper()
	all := []shot{{1280, "light", "1280"}, {390, "light", "390"}, {390, "dark", "390-dark"}}
	for _, v := range all {
		if len(ways) > 0 && !slices.Contains(ways, v.suffix) {
			continue
		}
		c.scheme(v.scheme)
		c.run(chromedp.EmulateViewport(v.width, 900))
		if v.width == 390 && !c.eval(`document.documentElement.scrollWidth <= 390`) {
			c.t.Errorf("%s is wider than 390 px", name)
		}
		ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
		buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		cancel()
		if err != nil {
			c.t.Fatal(err)
		}
		browsertest.CheckScreenshot(c.t, consoleShots(c.t), name+"-"+v.suffix+".png", buf)
	}
	c.scheme("light")
	c.run(chromedp.EmulateViewport(1280, 900))
}

// noErrors fails on any error or exception the pages wrote to the
// browser's console.
func (c *consoleTab) noErrors() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.messages {
		if strings.HasSuffix(m.URL, "/favicon.ico") {
			continue // the sign-in page's (package pages has no icon), not the console's
		}
		if m.Type == chromedp.ConsoleError || m.IsException() || m.Type == chromedp.ConsoleWarning {
			c.t.Errorf("browser console: %s (%s)", m, m.URL)
		}
	}
}

// startConsole starts yard (with extra flags) with alice and cars in two
// garages, and with axe installs axe-core and returns its script.
func startConsole(t *testing.T, axe bool, flags ...string) (*server, string, string) {
	t.Helper()
	data := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	s := startInProcess(t, append([]string{"--data", data, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--base-url", base}, flags...)...)
	addAlice(t, s)
	// Cars in two garages, for the search pages.
	var garages []string
	for _, g := range []map[string]any{{"name": "Bay", "state": "CA"}, {"name": "Hudson", "state": "NY"}} {
		resp, m := call(t, "POST", s.URL+"/garages", "admin", s.Password, g)
		if resp.StatusCode != 201 {
			t.Fatalf("create garage: %d %v", resp.StatusCode, m)
		}
		garages = append(garages, m["id"].(string))
	}
	for i, mk := range []string{"Ford", "Ford", "Honda", "Toyota", "Toyota", "Fiat"} {
		car := map[string]any{"make": mk, "model": "M" + strconv.Itoa(i), "color": []string{"red", "blue"}[i%2], "type": "sedan",
			"doors": 2 + 2*(i%2), "year": 2010 + i, "garage": garages[i%2]}
		if resp, m := call(t, "POST", s.URL+"/cars", "admin", s.Password, car); resp.StatusCode != 201 {
			t.Fatalf("create car: %d %v", resp.StatusCode, m)
		}
	}
	if !axe {
		return s, base, ""
	}
	script, err := os.ReadFile(filepath.Join(npmInstall(t, []string{axeVersion}), "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	return s, base, string(script)
}

// TestConsoleInChromium walks through the console with scripts on: sign
// in, create a dog, open it, bark, see a task made elsewhere appear and
// finish live, cancel nothing, edit the schedule, copy a curl command;
// every page audited by axe-core and captured at 1280 and 390 px.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	s, base, axe := startConsole(t, true)
	c := newConsoleTab(t, s, base, axe, true)
	c.signIn("alice", oidPassword)
	c.audit("dogs (empty)")

	// Create a dog whose name is a script: shown as text.
	c.run(chromedp.SendKeys(chromedp.ID("new-name"), `<script>alert(1)</script>Rex`), chromedp.SendKeys(chromedp.ID("new-email"), "rex@example.org"),
		chromedp.Click(chromedp.ID("create")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if got := c.text("#dogs tbody td a"); got != `<script>alert(1)</script>Rex` {
		t.Errorf("the dog's name shows as %q", got)
	}
	if !c.eval(`!document.querySelector("button.copy").hidden`) {
		t.Error("the copy buttons stay hidden with scripts on")
	}
	c.audit("dogs")
	c.shots("dogs", "1280", "390")

	// The dog's page: its stream opens.
	c.run(chromedp.Click(chromedp.CSS("#dogs tbody td a")), chromedp.WaitVisible(chromedp.ID("bark")))
	c.poll("the event stream opens", `document.getElementById("live").dataset.state === "open"`)
	c.eval(`window.sameDocument = true`)

	// A bark made elsewhere (the API, with Basic) appears and finishes
	// on this page without a reload.
	dogPath := strings.TrimPrefix(c.eval2(`location.pathname`), "/console")
	if status, m := callPrefer(t, s.URL+"/v1"+dogPath+"barks", map[string]any{"effect": "record"}); status != 202 {
		t.Fatalf("bark through the API: %d %v", status, m)
	}
	c.poll("the task appears and succeeds live", `window.sameDocument === true && [...document.querySelectorAll("#tasks td.status")].some((td) => td.textContent === "succeeded")`)

	// Bark from the page, as a task.
	c.run(chromedp.Click(chromedp.ID("async")), chromedp.Click(chromedp.ID("bark")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if n := c.text(".notice"); !strings.Contains(n, "202") {
		t.Errorf("bark as a task: notice %q, want 202", n)
	}
	c.poll("the page's own task succeeds", `document.querySelectorAll("#tasks tbody tr").length === 2 &&
		[...document.querySelectorAll("#tasks td.status")].every((td) => td.textContent === "succeeded")`)

	// Schedule it.
	c.run(chromedp.SetValue(chromedp.ID("frequency"), "15"), chromedp.Click(chromedp.ID("save-schedule")), chromedp.WaitVisible(chromedp.ID("stop-schedule")))
	if got := c.text("#schedule"); !strings.Contains(got, "Every 15 minutes") {
		t.Errorf("schedule: %q", got)
	}
	c.audit("dog")
	c.shots("dog")

	// The home page, by keyboard: the first Tab reaches the skip link,
	// and the link moves on to the content.
	c.run(chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.ID("me")))
	c.audit("home")
	c.run(chromedp.KeyEvent("\t"))
	if !c.eval(`document.activeElement.classList.contains("skip") && getComputedStyle(document.activeElement).left !== "-999px"`) {
		t.Error("the first Tab does not show the skip link")
	}
	c.run(chromedp.KeyEvent("\r"))
	c.poll("the skip link leads to the content", `location.hash === "#main"`)

	// Cars: a facet narrows the list, the query box runs the grammar.
	c.cars()
	c.shots("cars", "1280", "390")
	c.audit("cars")
	c.run(chromedp.Click(chromedp.CSS("#cars tbody a")), chromedp.WaitVisible(chromedp.ID("car")))
	c.audit("car")
	c.run(chromedp.Click(chromedp.ID("garage")), chromedp.WaitVisible(chromedp.ID("gc-h")))
	c.audit("garage")
	c.run(chromedp.Navigate(base+"/console/garages"), chromedp.WaitVisible(chromedp.ID("garages")))
	c.audit("garages")

	// Orders: place one, cancel it by a PUT of its XML.
	c.orders("cancel-put")
	c.audit("order")

	// Events: a dog made elsewhere appears live; after a reload it is
	// listed once, and the stream resumes after it.
	c.run(chromedp.Navigate(base+"/console/events"), chromedp.WaitVisible(chromedp.ID("events")))
	c.poll("the events stream opens", `document.getElementById("tail-state").dataset.state === "open"`)
	c.eval(`window.sameDocument = true`)
	if resp, m := call(t, "POST", s.URL+"/v1/dogs", "alice", oidPassword, map[string]any{"name": "Fido", "email": "fido@example.org"}); resp.StatusCode != 201 {
		t.Fatalf("create Fido: %d %v", resp.StatusCode, m)
	}
	c.poll("dog.created of Fido appears live", `window.sameDocument === true &&
		[...document.querySelectorAll("#events tbody tr td:first-child")].filter((td) => td.textContent === "dog.created").length === 2`)
	c.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("events")))
	c.poll("the stream resumes after a reload", `document.getElementById("tail-state").dataset.state === "open" && window.sameDocument === undefined &&
		[...document.querySelectorAll("#events tbody tr td:first-child")].filter((td) => td.textContent === "dog.created").length === 2`)
	c.audit("events")
	c.shots("events", "390")

	// Webhooks: create one (its secret shown once), disable it.
	c.run(chromedp.Navigate(base+"/console/webhooks"), chromedp.WaitVisible(chromedp.ID("hook-url")),
		chromedp.SendKeys(chromedp.ID("hook-url"), "https://hooks.example.org/yard"), chromedp.SendKeys(chromedp.ID("hook-types"), "bark.*"),
		chromedp.Click(chromedp.ID("create-hook")), chromedp.WaitVisible(chromedp.CSS(".notice, #problem")))
	if got := c.text("main"); !strings.Contains(got, "whsec_") {
		t.Fatalf("create a webhook: %s", got)
	}
	c.audit("webhooks")
	c.run(chromedp.Click(chromedp.CSS("#webhooks tbody a")), chromedp.WaitVisible(chromedp.ID("toggle-hook")),
		chromedp.Click(chromedp.ID("toggle-hook")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if got := c.text("#hook-state"); got != "disabled" {
		t.Errorf("after Disable: %q", got)
	}
	c.audit("webhook")

	// The authentication lab: Digest, then a mistake.
	c.lab("digest", false)
	c.audit("lab")
	c.shots("lab", "1280")
	c.lab("pktoken", true)
	c.lab("openid", false)

	// The administrator's pages.
	c.run(chromedp.Navigate(base+"/signin?next=/console/admin/people"), chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "admin"), chromedp.SendKeys(chromedp.ID("password"), s.Password),
		chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("people")))
	c.run(chromedp.SendKeys(chromedp.ID("name"), "carol"), chromedp.SendKeys(chromedp.ID("email"), "carol@example.org"),
		chromedp.Click(chromedp.ID("create-person")), chromedp.WaitVisible(chromedp.ID("secret")))
	c.audit("people")
	c.shots("people", "1280")
	c.run(chromedp.Navigate(base+"/console/searches"), chromedp.WaitVisible(chromedp.ID("ss-h")))
	c.audit("searches")
	c.run(chromedp.Navigate(base+"/console/admin/server"), chromedp.WaitVisible(chromedp.ID("health")))
	if got := c.text("main"); !strings.Contains(got, "go_goroutines") || !strings.Contains(got, "process_resident_memory_bytes") {
		c.t.Errorf("the server page shows no process gauges:\n%s", got)
	}
	c.audit("server")
	c.run(chromedp.Navigate(base+"/console/admin/oauth"), chromedp.WaitVisible(chromedp.ID("consumer-name")),
		chromedp.SendKeys(chromedp.ID("consumer-name"), "Printer"), chromedp.Click(chromedp.ID("create-consumer")),
		chromedp.WaitVisible(chromedp.ID("consumers")))
	c.audit("oauth")
	c.lab("oauth", false)
	c.audit("lab (OAuth 1.0a)")
	c.noErrors()
}

// lab runs the authentication lab's scheme as alice, with or without a
// mistake, and checks the outcome.
func (c *consoleTab) lab(scheme string, mistake bool) {
	c.t.Helper()
	c.run(chromedp.Navigate(c.base+"/console/lab"), chromedp.WaitVisible(chromedp.ID("run-lab")),
		chromedp.Click(chromedp.ID("scheme-"+scheme)), chromedp.SendKeys(chromedp.ID("lab-password"), oidPassword))
	if mistake {
		c.run(chromedp.Click(chromedp.ID("mistake")))
	}
	c.run(chromedp.Click(chromedp.ID("run-lab")), chromedp.WaitVisible(chromedp.ID("outcome")))
	if got, want := c.text("#outcome"), map[bool]string{false: "accepted", true: "refused"}[mistake]; !strings.Contains(got, want) {
		c.t.Errorf("lab %s (mistake %v): %q, want %s", scheme, mistake, got, want)
	}
}

// orders places an order and cancels it the way named (the id of its
// button: cancel-put or cancel-post).
func (c *consoleTab) orders(how string) {
	c.t.Helper()
	c.run(chromedp.Navigate(c.base+"/console/orders"), chromedp.WaitVisible(chromedp.ID("place")),
		chromedp.Click(chromedp.ID("place")), chromedp.WaitVisible(chromedp.ID("orders")))
	c.audit("orders")
	c.run(chromedp.Click(chromedp.CSS("#orders tbody a")), chromedp.WaitVisible(chromedp.ID(how)),
		chromedp.Click(chromedp.ID(how)), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if got := c.text("#order-canceled"); got != "yes" {
		c.t.Errorf("after %s the order's canceled is %q", how, got)
	}
}

// cars chooses the make facet's first value and then runs a query typed
// in the grammar box, from the car search page.
func (c *consoleTab) cars() {
	c.t.Helper()
	c.run(chromedp.Navigate(c.base+"/console/cars"), chromedp.WaitVisible(chromedp.ID("r-h")))
	if got := c.text("#r-h"); got != "6 cars" {
		c.t.Errorf("cars: %q, want 6 cars", got)
	}
	c.run(chromedp.Click(chromedp.CSS(`#f-make + ul a`)), chromedp.WaitVisible(chromedp.CSS(".facet a.on")))
	if got := c.text("#r-h"); got != "2 cars" {
		c.t.Errorf("after the first make: %q, want 2 cars", got)
	}
	c.run(chromedp.SetValue(chromedp.ID("grammar"), "color=red;q.year.ge=2012"), chromedp.Click(chromedp.ID("run")))
	c.settle("the query box's page", `location.search.startsWith("?grammar=") && document.readyState === "complete" && !!document.getElementById("r-h")`)
	if got := c.text("#r-h"); got != "2 cars" {
		c.t.Errorf("color=red;q.year.ge=2012: %q, want 2 cars", got)
	}
}

// eval2 evaluates js to a string.
func (c *consoleTab) eval2(js string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		c.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// TestConsoleWithoutJavaScriptInChromium: the same flow with scripts off
// works through forms and the refresh link.
func TestConsoleWithoutJavaScriptInChromium(t *testing.T) {
	t.Parallel()
	s, base, _ := startConsole(t, false)
	c := newConsoleTab(t, s, base, "", false)
	c.signIn("alice", oidPassword)
	c.run(chromedp.SendKeys(chromedp.ID("new-name"), "Rex"), chromedp.SendKeys(chromedp.ID("new-email"), "rex@example.org"),
		chromedp.Click(chromedp.ID("create")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	c.run(chromedp.Click(chromedp.CSS("#dogs tbody td a")), chromedp.WaitVisible(chromedp.ID("bark")))
	if got := c.text("#live"); !strings.Contains(got, "Refresh") {
		t.Errorf("without scripts the task list says %q, want a refresh link", got)
	}
	c.run(chromedp.Click(chromedp.ID("async")), chromedp.Click(chromedp.ID("bark")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if n := c.text(".notice"); !strings.Contains(n, "202") {
		t.Errorf("bark as a task: notice %q, want 202", n)
	}
	// Refresh until the task has finished.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(c.text("#tasks tbody"), "succeeded") {
		if time.Now().After(deadline) {
			t.Fatalf("the task never showed succeeded: %s", c.text("#tasks tbody"))
		}
		c.run(chromedp.Click(chromedp.ID("refresh")), chromedp.WaitVisible(chromedp.ID("bark")))
	}
	c.run(chromedp.SetValue(chromedp.ID("frequency"), "15"), chromedp.Click(chromedp.ID("save-schedule")), chromedp.WaitVisible(chromedp.ID("stop-schedule")))
	c.run(chromedp.Click(chromedp.ID("delete")), chromedp.WaitVisible(chromedp.ID("onward")))
	c.run(chromedp.Click(chromedp.ID("onward")), chromedp.WaitVisible(chromedp.ID("nodogs")))
	// DevTools evaluates even with scripts off; the page's own script
	// did not run: the copy buttons stay hidden.
	if !c.eval(`document.querySelector("button.copy").hidden`) {
		t.Error("copy buttons shown without scripts")
	}
	c.shots("dogs-nojs", "390")
	c.cars()
	c.orders("cancel-post")
	c.lab("signed", false)
	c.lab("basic", true)
	// The events page without scripts: a new event shows on Refresh.
	c.run(chromedp.Navigate(base+"/console/events"), chromedp.WaitVisible(chromedp.ID("refresh")))
	before := strings.Count(c.text("#events tbody"), "dog.created")
	if resp, m := call(t, "POST", s.URL+"/v1/dogs", "alice", oidPassword, map[string]any{"name": "Fido", "email": "fido@example.org"}); resp.StatusCode != 201 {
		t.Fatalf("create Fido: %d %v", resp.StatusCode, m)
	}
	c.run(chromedp.Click(chromedp.ID("refresh")))
	c.settle("the new event after Refresh", fmt.Sprintf(`document.readyState === "complete" && !!document.getElementById("events") &&
		document.getElementById("events").tBodies[0].textContent.split("dog.created").length - 1 === %d`, before+1))
}

// TestConsoleStreamRefusedInChromium: with one stream a person allowed,
// a second page's stream is refused (429) and that page shows its
// Refresh link again.
func TestConsoleStreamRefusedInChromium(t *testing.T) {
	t.Parallel()
	s, base, _ := startConsole(t, false, "--events-per-person", "1")
	c := newConsoleTab(t, s, base, "", true)
	c.signIn("alice", oidPassword)
	c.run(chromedp.Navigate(base+"/console/events"), chromedp.WaitVisible(chromedp.ID("events")))
	c.poll("the first stream opens", `document.getElementById("tail-state").dataset.state === "open"`)
	// A second tab of the same browser (the same session).
	tab, cancel := chromedp.NewContext(c.ctx)
	defer cancel()
	// The tab's first action has no time limit: a limit would close it.
	if err := chromedp.Do(tab); err != nil {
		t.Fatal(err)
	}
	second := &consoleTab{t: t, base: base, ctx: tab}
	second.run(chromedp.Navigate(base+"/console/events"), chromedp.WaitVisible(chromedp.ID("events")))
	second.settle("the refused stream gives the Refresh link back", `!!document.getElementById("refresh") && document.getElementById("tail-state").dataset.state === "closed"`)
	if !c.eval(`document.getElementById("tail-state").dataset.state === "open"`) {
		t.Error("the first page's stream closed")
	}
}
