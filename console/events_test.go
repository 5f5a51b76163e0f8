package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestConsoleEvents(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice, bob := e.signIn(t, "alice"), e.signIn(t, "bob")
	e.apiDog(t, "alice", "Rex")
	alice.form("/console/orders", url.Values{})

	p := alice.get("/console/events")
	checkPage(t, "events", p)
	if !strings.Contains(p.body, "<td>dog.created</td>") || !strings.Contains(p.body, "<td>order.created</td>") {
		t.Errorf("alice's events:\n%s", p.body)
	}
	if !regexp.MustCompile(`<a href="/console/dogs/[^"/]+/"><code>` + regexp.QuoteMeta(e.URL) + `/v1/dogs/`).MatchString(p.body) {
		t.Errorf("the dog's event does not link to its page:\n%s", p.body)
	}
	// The stream the script opens resumes after the page's last event.
	m := regexp.MustCompile(`data-stream="/v1/events\?after=([0-9a-f]+)"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no stream resuming after the page:\n%s", p.body)
	}
	if p = alice.get("/console/events?types=order.*"); strings.Contains(p.body, "<td>dog.created</td>") || !strings.Contains(p.body, "<td>order.created</td>") ||
		!strings.Contains(p.body, `value="order.*" checked`) {
		t.Errorf("order.* only:\n%s", p.body)
	}
	// After the last id: nothing yet; a new event shows on refresh.
	p = alice.get("/console/events?after=" + m[1])
	if !strings.Contains(p.body, `id="noevents"`) {
		t.Errorf("after the last event:\n%s", p.body)
	}
	e.apiDog(t, "alice", "Fido")
	if p = alice.get("/console/events?after=" + m[1]); strings.Count(p.body, "<td>dog.created</td>") != 1 {
		t.Errorf("the new event after a refresh:\n%s", p.body)
	}
	// Bob sees none of them.
	if p = bob.get("/console/events"); strings.Contains(p.body, "dog.created") || strings.Contains(p.body, "order.created") {
		t.Errorf("bob sees alice's events:\n%s", p.body)
	}
	if p = alice.get("/console/events?types=cat.*"); p.status != 400 {
		t.Errorf("an unknown type: %d, want 400", p.status)
	}
}

func TestConsoleWebhooks(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice, bob := e.signIn(t, "alice"), e.signIn(t, "bob")
	p := alice.form("/console/webhooks", url.Values{"url": {"https://hooks.example.org/yard"}, "types": {"bark.*, dog.updated"}})
	checkPage(t, "webhooks", p)
	if p.status != 200 || !strings.Contains(p.body, `<code id="secret">whsec_`) {
		t.Fatalf("create: got %d\n%s", p.status, p.body)
	}
	link := regexp.MustCompile(`href="(/console/webhooks/[^"]+)"`).FindStringSubmatch(p.body)
	if link == nil {
		t.Fatalf("no webhook listed:\n%s", p.body)
	}
	p = alice.get(link[1])
	checkPage(t, "webhook", p)
	if strings.Contains(p.body, "whsec_") || !strings.Contains(p.body, `id="hook-state">enabled`) || !strings.Contains(p.body, `id="nodeliveries"`) {
		t.Errorf("the webhook:\n%s", p.body)
	}
	if p = alice.form(link[1], url.Values{"op": {"disable"}}); !strings.Contains(p.body, `id="hook-state">disabled`) {
		t.Errorf("disable: %d\n%s", p.status, p.body)
	}
	if p = alice.form(link[1], url.Values{"op": {"enable"}}); !strings.Contains(p.body, `id="hook-state">enabled`) {
		t.Errorf("enable: %d", p.status)
	}
	// A refused URL is the API's 400, shown.
	if p = alice.form("/console/webhooks", url.Values{"url": {"https://127.0.0.1/h"}}); p.status != 400 || !strings.Contains(p.body, "public address") {
		t.Errorf("a private address: %d", p.status)
	}
	// Bob cannot see or change it.
	if p = bob.get(link[1]); p.status != 404 && p.status != 403 {
		t.Errorf("bob's GET of alice's webhook: %d", p.status)
	}
	tok := csrf(t, bob.get("/console/webhooks").body)
	if p = bob.post(link[1], url.Values{"op": {"delete"}, "csrf_token": {tok}}, nil); p.status != 404 && p.status != 403 {
		t.Errorf("bob's delete of alice's webhook: %d", p.status)
	}
	if p = alice.form(link[1], url.Values{"op": {"delete"}}); p.status != 200 || !strings.Contains(p.body, "The webhook is deleted.") {
		t.Errorf("delete: %d", p.status)
	}
}
