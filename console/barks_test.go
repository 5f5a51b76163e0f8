package console_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// Barks from a dog's page: at once, and as a task, which stays pending
// (the runner's workers are not started) until the page cancels it.
func TestConsoleBarks(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	svc := jobs.New(jobs.Config{DB: db, Poll: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond,
		Effects: &jobs.Effects{Users: db, DataDir: t.TempDir(), From: "yard@yard.test", Domain: "yard.test"}})
	api := apitest.Start(t, db, apitest.WithAuthKit(t, db, nil, func(c *auth.Config) { c.Limiter = auth.NewLoginLimiter(0, nil) }),
		func(d *httpapi.Deps) { d.Barks = svc })
	api.CreateUser("alice", pw)
	e := &env{api}
	id := e.apiDog(t, "alice", "Rex")
	alice := e.signIn(t, "alice")
	path := "/console/dogs/" + id + "/"

	p := alice.form(path, url.Values{"op": {"bark"}, "effect": {"record"}})
	if p.status != 200 || !strings.Contains(p.body, "The dog barked (201 Created).") || !strings.Contains(p.body, `id="bark-count">1<`) {
		t.Fatalf("a bark at once: got %d\n%s", p.status, p.body)
	}
	p = alice.form(path, url.Values{"op": {"bark"}, "effect": {"record"}, "async": {"1"}})
	if p.status != 200 || !strings.Contains(p.body, "The dog barked (202 Accepted).") || !strings.Contains(p.body, "-H &#39;Prefer: respond-async&#39;") {
		t.Fatalf("a bark as a task: got %d\n%s", p.status, p.body)
	}
	pending := regexp.MustCompile(`<tr data-bark="([^"]+)">.*<td class="status">pending</td>`).FindStringSubmatch(p.body)
	if pending == nil || !strings.Contains(p.body, `name="op" value="cancel"`) {
		t.Fatalf("no pending task with a Cancel button:\n%s", p.body)
	}
	p = alice.form(path, url.Values{"op": {"cancel"}, "bark": {pending[1]}})
	if p.status != 200 || !strings.Contains(p.body, "The task is canceled.") ||
		!regexp.MustCompile(`<tr data-bark="`+pending[1]+`">.*<td class="status">canceled</td>`).MatchString(p.body) {
		t.Fatalf("cancel: got %d\n%s", p.status, p.body)
	}
	if ran, err := svc.RunOne(context.Background()); err != nil || ran {
		t.Errorf("after the cancel the runner ran %v (%v), want nothing", ran, err)
	}
}
