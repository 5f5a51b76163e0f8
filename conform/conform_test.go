package conform

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// slug is the anchor GitHub gives a Markdown heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var headingRe = regexp.MustCompile(`(?m)^#+ (.*)$`)

// TestChecksTable: every check has a unique id of its part, a level,
// what it sends and expects, and a rule that names a page (and a section
// of it) that exists.
func TestChecksTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks() {
		if seen[c.ID] {
			t.Errorf("%s: a second check with this id", c.ID)
		}
		seen[c.ID] = true
		if !strings.HasPrefix(c.ID, c.Part+".") || !slices.Contains(Parts(), c.Part) {
			t.Errorf("%s: part %q", c.ID, c.Part)
		}
		if c.Level != Must && c.Level != Should {
			t.Errorf("%s: level %q", c.ID, c.Level)
		}
		if c.Sends == "" || c.Expects == "" || c.run == nil {
			t.Errorf("%s: no sends, expects or run", c.ID)
		}
		file, anchor, _ := strings.Cut(c.Doc, "#")
		page, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Errorf("%s: rule %s: %v", c.ID, c.Doc, err)
			continue
		}
		if anchor != "" && !slices.ContainsFunc(headingRe.FindAllStringSubmatch(string(page), -1), func(m []string) bool { return slug(m[1]) == anchor }) {
			t.Errorf("%s: rule %s: no such section in %s", c.ID, c.Doc, file)
		}
	}
	for _, p := range Parts() {
		if !slices.ContainsFunc(Checks(), func(c Check) bool { return c.Part == p }) {
			t.Errorf("part %s has no check", p)
		}
	}
}

// checksMarkdown is the check table as the Markdown of
// docs/conformance.md: a section per part, a row per check.
func checksMarkdown() string {
	checks := Checks()
	cell := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace
	var b strings.Builder
	fmt.Fprintf(&b, "%d checks in %d parts.\n", len(checks), len(Parts()))
	for _, p := range Parts() {
		fmt.Fprintf(&b, "\n### %s\n\n| id | level | sends | expects | rule |\n|---|---|---|---|---|\n", p)
		for _, c := range checks {
			if c.Part == p {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | [%s](%s) |\n", c.ID, c.Level, cell(c.Sends), cell(c.Expects), c.Doc, strings.TrimPrefix(c.Doc, "docs/"))
			}
		}
	}
	return b.String()
}

// TestConformanceDoc: the check list of docs/conformance.md is the check
// table (checksMarkdown), so the two cannot drift apart.
func TestConformanceDoc(t *testing.T) {
	page, err := os.ReadFile("../docs/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- checks: generated from conform.Checks by checksMarkdown (conform/conform_test.go) -->\n", "<!-- end of checks -->"
	_, rest, ok1 := strings.Cut(string(page), begin)
	got, _, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("docs/conformance.md lacks the markers %q and %q", begin, end)
	}
	want := checksMarkdown()
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("docs/conformance.md's check list differs from the check table; write this between the markers:\n%s", want)
	}
}

// TestSelectChecks: --only keeps the parts named, --skip needs a known id,
// and names it does not know are refused.
func TestSelectChecks(t *testing.T) {
	got, err := selectChecks([]string{"orders", "signed"}, []string{"orders.xml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Part != "orders" && c.Part != "signed" {
			t.Errorf("--only orders,signed kept %s", c.ID)
		}
	}
	if _, err := selectChecks([]string{"cats"}, nil); err == nil || !strings.Contains(err.Error(), `unknown part "cats"`) {
		t.Errorf("--only cats: %v", err)
	}
	if _, err := selectChecks(nil, []string{"dogs.fly"}); err == nil || !strings.Contains(err.Error(), `unknown check "dogs.fly"`) {
		t.Errorf("--skip dogs.fly: %v", err)
	}
}

// TestExchangeRedacted: a recorded exchange hides credentials, cookies,
// passwords, tokens and signatures, and keeps the rest.
func TestExchangeRedacted(t *testing.T) {
	u, _ := url.Parse("https://example.org/v1/dogs?apiKey=ak_1&timestamp=5&signature=deadbeef")
	req := &http.Request{Method: "POST", URL: u, Header: http.Header{
		"Authorization": {"Basic c2VjcmV0OnNlY3JldA=="}, "Cookie": {"sessionToken=KEY123"}, "X-Password": {"hunter2"}}}
	resp := &http.Response{Proto: "HTTP/2.0", Status: "201 Created", Header: http.Header{"Set-Cookie": {"sessionToken=KEY456; Path=/; Secure"}}}
	ex := formatExchange(req, []byte(`{"username":"a","password":"hunter2"}`), resp,
		[]byte(`{"access_token":"eyJ.x.y","refresh_token":"eyJ.r.s","secret":"sk_9","token":"tok","name":"Rex"}`))
	for _, secret := range []string{"c2VjcmV0", "KEY123", "KEY456", "hunter2", "deadbeef", "eyJ", "sk_9", `"tok"`} {
		if strings.Contains(ex, secret) {
			t.Errorf("the exchange shows %q:\n%s", secret, ex)
		}
	}
	for _, kept := range []string{"Authorization: Basic [redacted]", "sessionToken=[redacted]; Path=/; Secure", `"name":"Rex"`, "apiKey=ak_1", "201 Created"} {
		if !strings.Contains(ex, kept) {
			t.Errorf("the exchange lacks %q:\n%s", kept, ex)
		}
	}
	if got := redact("oauth_token=t&oauth_token_secret=s3cr3t&oauth_callback_confirmed=true"); strings.Contains(got, "s3cr3t") {
		t.Errorf("a form body: %s", got)
	}
}

// TestReports: the text report (FAIL lines, the table, the summary), the
// JSON and the JUnit XML of one run with a pass, a failure and a skip.
func TestReports(t *testing.T) {
	rep := &Report{URL: "https://example.org", Duration: 1500 * time.Millisecond}
	cs := Checks()
	rep.add(cs[0], Passed, "", "", time.Millisecond)
	rep.add(cs[1], Failed, "got status 500,\nwant 200", "GET https://example.org/openapi.json\n--\nHTTP/2.0 500", time.Millisecond)
	rep.add(cs[2], Skipped, "left out by --skip", "", 0)
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, want := range []string{
		"FAIL " + cs[1].ID + " " + cs[1].Part + " " + string(cs[1].Level) + ": got status 500, want 200\n",
		"    | HTTP/2.0 500\n", "SKIP " + cs[2].ID, "\ndiscovery  3       1       1       1        ",
		"\n1 passed, 1 failed, 1 skipped (1.5s)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text report lacks %q:\n%s", want, out)
		}
	}
	if rep.MustFailed() != (cs[1].Level == Must) {
		t.Errorf("MustFailed %v for a failed %s check", rep.MustFailed(), cs[1].Level)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != 3 || back.Results[1].Status != Failed || back.Failed != 1 {
		t.Errorf("the JSON report: %v\n%s", err, js.String())
	}
	var ju bytes.Buffer
	if err := rep.WriteJUnit(&ju); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(ju.Bytes(), &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Fails != 1 || suites.Suites[0].Skips != 1 ||
		suites.Suites[0].Cases[1].Failure == nil || suites.Suites[0].Cases[2].Skipped == nil {
		t.Errorf("the JUnit report: %v\n%s", err, ju.String())
	}
}
