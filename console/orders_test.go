package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

var orderRE = regexp.MustCompile(`href="/console/orders/([^"]+)"`)

func TestConsoleOrders(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	alice, bob, root := e.signIn(t, "alice"), e.signIn(t, "bob"), e.signIn(t, "root")

	place := func() string {
		t.Helper()
		p := alice.form("/console/orders", url.Values{})
		checkPage(t, "orders", p)
		ids := orderRE.FindAllStringSubmatch(p.body, -1)
		if p.status != 200 || !strings.Contains(p.body, "Placed the order") || ids == nil {
			t.Fatalf("place: got %d\n%s", p.status, p.body)
		}
		return regexp.MustCompile(`Placed the order ([^ <]+)\.`).FindStringSubmatch(p.body)[1]
	}

	// Cancel by a PUT of the XML representation.
	first := place()
	path := "/console/orders/" + first
	p := alice.get(path)
	checkPage(t, "order", p)
	if !strings.Contains(p.body, "&lt;order&gt;") || !strings.Contains(p.body, `&#34;status&#34;:&#34;placed&#34;`) {
		t.Errorf("the order's representations:\n%s", p.body)
	}
	p = alice.form(path, url.Values{"op": {"cancel-put"}})
	if p.status != 200 || !strings.Contains(p.body, `id="order-canceled">yes`) || !strings.Contains(p.body, "-X PUT -H &#39;Accept: application/xml&#39; -H &#39;Content-Type: application/xml&#39; -d &#39;&lt;order&gt;") {
		t.Fatalf("cancel by PUT: got %d\n%s", p.status, p.body)
	}

	// Another person does not see it, and cannot cancel it.
	if p = bob.get(path); p.status != 404 {
		t.Errorf("bob's GET of alice's order: %d, want 404", p.status)
	}
	second := place()
	tok := csrf(t, bob.get("/console/orders").body)
	if p = bob.post("/console/orders/"+second, url.Values{"op": {"cancel-post"}, "csrf_token": {tok}}, nil); p.status != 404 {
		t.Errorf("bob's cancel of alice's order: %d, want 404", p.status)
	}
	// Shipped (by the administrator), it cannot be canceled: the 409 is shown.
	if p = root.form("/console/orders/"+second, url.Values{"op": {"status"}, "status": {"shipped"}}); p.status != 200 || !strings.Contains(p.body, `id="order-status">shipped`) {
		t.Fatalf("ship: got %d\n%s", p.status, p.body)
	}
	p = alice.form("/console/orders/"+second, url.Values{"op": {"cancel-post"}})
	if p.status != 409 || !strings.Contains(p.body, `id="problem"`) || !strings.Contains(p.body, `id="order-canceled">no`) {
		t.Errorf("cancel of a shipped order: got %d, want 409 shown\n%s", p.status, p.body)
	}
	p = alice.form("/console/orders/"+second, url.Values{"op": {"cancel-put"}})
	if p.status != 409 || !strings.Contains(p.body, `id="problem"`) {
		t.Errorf("cancel by PUT of a shipped order: got %d, want 409 shown", p.status)
	}
	// The third way round: a placed order canceled by POST.
	third := place()
	if p = alice.form("/console/orders/"+third, url.Values{"op": {"cancel-post"}}); p.status != 200 || !strings.Contains(p.body, `id="order-canceled">yes`) {
		t.Errorf("cancel by POST: got %d", p.status)
	}
	// A person has no status form; their PUT of a status is the API's refusal.
	if p = alice.get("/console/orders/" + third); strings.Contains(p.body, `id="set-status"`) {
		t.Error("a person is offered the status form")
	}
}
