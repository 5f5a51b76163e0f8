package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestConsoleBackups: the server page lists the backups (GET /v1/backups)
// and makes one ("Back up now", POST /v1/backups), each call in the panel
// with its curl; a second within the minute shows the API's 429; a person
// gets 403 and no backup is made.
func TestConsoleBackups(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	backups := func() string {
		t.Helper()
		res := e.Do(apitest.Request{Path: "/v1/backups", User: "root", Password: pw})
		if res.StatusCode != 200 {
			t.Fatalf("GET /v1/backups: %d %s", res.StatusCode, res.Body)
		}
		return string(res.Body)
	}

	alice := e.signIn(t, "alice")
	tok := csrf(t, alice.get("/console/dogs").body)
	if p := alice.post("/console/admin/server", url.Values{"op": {"backup"}, "csrf_token": {tok}}, nil); p.status != 403 {
		t.Errorf("a person's Back up now: got %d, want 403", p.status)
	}
	if p := alice.get("/console/admin/server"); p.status != 403 || strings.Contains(p.body, "backup-now") {
		t.Errorf("a person's server page: got %d, want 403 without the form", p.status)
	}
	if got := backups(); !strings.Contains(got, `"total":0`) {
		t.Fatalf("a person made a backup: %s", got)
	}

	root := e.signIn(t, "root")
	p := root.get("/console/admin/server")
	checkPage(t, "server", p)
	if p.status != 200 || !strings.Contains(p.body, `id="nobackups"`) || !strings.Contains(p.body, `id="backup-now"`) ||
		!strings.Contains(p.body, "curl -i -u root &#39;"+e.URL+"/v1/backups?offset=0&amp;max=20&#39;") {
		t.Fatalf("the server page without backups: %d\n%s", p.status, p.body)
	}

	p = root.form("/console/admin/server", url.Values{"op": {"backup"}})
	checkPage(t, "server, backed up", p)
	name := regexp.MustCompile(`Backed up into (yard-\d{8}T\d{6}Z\.db) \(`).FindStringSubmatch(p.body)
	if p.status != 200 || name == nil || !strings.Contains(p.body, "curl -i -u root -X POST "+e.URL+"/v1/backups") ||
		!strings.Contains(p.body, `<td class="wrap"><code>`+name[1]+`</code></td>`) {
		t.Fatalf("Back up now: %d\n%s", p.status, p.body)
	}
	if got := backups(); !strings.Contains(got, `"total":1`) || !strings.Contains(got, `"name":"`+name[1]+`"`) {
		t.Fatalf("after Back up now, the API lists %s", got)
	}

	p = root.form("/console/admin/server", url.Values{"op": {"backup"}})
	if p.status != 429 || !strings.Contains(p.body, "Too Many Requests") || !strings.Contains(p.body, name[1]) {
		t.Errorf("a second within the minute: got %d, want 429 with the problem and the list\n%s", p.status, p.body)
	}
	if got := backups(); !strings.Contains(got, `"total":1`) {
		t.Errorf("the refused backup was made: %s", got)
	}
}
