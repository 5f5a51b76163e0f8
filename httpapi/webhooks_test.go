package httpapi_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
	"github.com/yard-api/yard/webhooks"
)

type webhookJSON struct {
	ID             string   `json:"id"`
	Owner          string   `json:"owner"`
	URL            string   `json:"url"`
	Types          []string `json:"types"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabledReason"`
	Secret         string   `json:"secret"`
}

// TestWebhooksAPI holds the subscription endpoints to their statuses: 201
// with Location and the secret once, never again; 404 for another
// person's; 400 naming a bad url, types or unknown field; 409 past the
// bound; 204 on delete.
func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := apitest.Start(t, db, func(d *httpapi.Deps) { d.Webhooks = webhooks.PolicyChecker{} })
		alice := env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)
		env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
		as := func(user string, r apitest.Request) apitest.Request { r.User, r.Password = user, pw; return r }

		resp := env.Do(as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks",
			Body: map[string]any{"url": "https://hooks.example.org/yard", "types": []string{"bark.*", "dog.updated", "bark.*"}}}))
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		var created webhookJSON
		resp.JSON(t, &created)
		loc := resp.Header.Get("Location")
		if loc != env.URL+"/v1/webhooks/"+created.ID || !regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{40,}=*$`).MatchString(created.Secret) ||
			!created.Enabled || created.Owner != alice.ID || !slices.Equal(created.Types, []string{"bark.*", "dog.updated"}) ||
			created.DisabledReason != nil || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("create: Location %q, %s", loc, resp.Body)
		}
		hook := "/v1/webhooks/" + created.ID

		run(t, env, []scenario{
			{"GET: the subscription, without its secret", as("alice", apitest.Request{Path: hook}), 200,
				map[string]string{"ETag": ""}, []string{`"url":"https://hooks.example.org/yard"`, `"enabled":true`, `"failingSince":null`}},
			{"an administrator sees it", as("root", apitest.Request{Path: hook}), 200, nil, []string{`"id":"` + created.ID}},
			{"another person's is not found", as("bob", apitest.Request{Path: hook}), 404, nil, nil},
			{"nor changed", as("bob", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"enabled": false}}), 404, nil, nil},
			{"nor its deliveries", as("bob", apitest.Request{Path: hook + "/deliveries"}), 404, nil, nil},
			{"nor deleted", as("bob", apitest.Request{Method: "DELETE", Path: hook}), 404, nil, nil},
			{"unknown id", as("alice", apitest.Request{Path: "/v1/webhooks/nope"}), 404, nil, nil},
			{"no credentials", apitest.Request{Path: "/v1/webhooks"}, 401, nil, nil},
			{"list: one's own", as("alice", apitest.Request{Path: "/v1/webhooks"}), 200,
				map[string]string{"Link": `rel="first"`}, []string{`"total":1`, `"id":"` + created.ID}},
			{"list: bob has none", as("bob", apitest.Request{Path: "/v1/webhooks"}), 200, nil, []string{`"total":0`, `"items":[]`}},
			{"list: an administrator's has all", as("root", apitest.Request{Path: "/v1/webhooks"}), 200, nil, []string{`"total":1`}},
			{"private address", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://127.0.0.1/h"}}), 400,
				nil, []string{`"field":"url"`, `not a public address`}},
			{"localhost", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://localhost:8443/h"}}), 400,
				nil, []string{`"field":"url"`}},
			{"plain http", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "http://hooks.example.org/h"}}), 400,
				nil, []string{`"field":"url"`, `https://`}},
			{"user information", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://a:b@hooks.example.org/h"}}), 400,
				nil, []string{`"field":"url"`}},
			{"a control character", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: `{"url":"https://hooks.example.org/\u0007"}`}), 400,
				nil, []string{`"field":"url"`}},
			{"too long", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/" + strings.Repeat("x", 2000)}}), 400,
				nil, []string{`"field":"url"`}},
			{"no url", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"types": []string{"*"}}}), 400,
				nil, []string{`"field":"url"`}},
			{"null url", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: `{"url":null}`}), 400,
				nil, []string{`"field":"url"`}},
			{"unknown type", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/h", "types": []string{"cat.*"}}}), 400,
				nil, []string{`"field":"types"`, `cat.*`}},
			{"types of the wrong kind", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: `{"url":"https://hooks.example.org/h","types":"bark.*"}`}), 400,
				nil, []string{`"field":"types"`}},
			{"unknown field", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/h", "secret": "whsec_AAAA"}}), 400,
				nil, []string{`"field":"secret"`}},
			{"enabled is not set on create", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/h", "enabled": false}}), 400,
				nil, []string{`"field":"enabled"`}},
			{"malformed", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: `{"url":`}), 400, nil, nil},
			{"not JSON", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: "url=x", Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}), 415, nil, nil},
			{"PATCH: disable", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"enabled": false}}), 200,
				nil, []string{`"enabled":false`, `"disabledReason":null`}},
			{"PATCH: types null is every type", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: `{"types":null,"enabled":true}`,
				Headers: map[string]string{"Content-Type": "application/merge-patch+json"}}), 200, nil, []string{`"types":[]`, `"enabled":true`}},
			{"PATCH: a new url", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"url": "https://other.example.org/h"}}), 200,
				nil, []string{`"url":"https://other.example.org/h"`}},
			{"PATCH: a private url", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"url": "https://10.0.0.1/h"}}), 400,
				nil, []string{`"field":"url"`}},
			{"PATCH: url null", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: `{"url":null}`}), 400, nil, []string{`"field":"url"`}},
			{"PATCH: the secret cannot be set", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"secret": "x"}}), 400,
				nil, []string{`"field":"secret"`}},
			{"PATCH: unknown type", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"types": []string{"bark"}}}), 400,
				nil, []string{`"field":"types"`}},
			{"the secret is never shown again", as("alice", apitest.Request{Path: "/v1/webhooks"}), 200, nil, []string{`"url":"https://other.example.org/h"`}},
		})
		for _, r := range []apitest.Request{{Path: hook}, {Path: "/v1/webhooks"}, {Method: "PATCH", Path: hook, Body: map[string]any{}}} {
			if body := string(env.Do(as("alice", r)).Body); strings.Contains(body, "whsec_") || strings.Contains(body, `"secret"`) {
				t.Fatalf("%s %s shows the secret: %s", r.Method, r.Path, body)
			}
		}

		// Conditional writes (RFC 9110 §13.1): 412 and nothing changed, or
		// applied with the validators a GET gives; a patch that changes
		// nothing leaves updatedAt and the tag.
		cur := env.Do(as("alice", apitest.Request{Path: hook}))
		tag := cur.Header.Get("ETag")
		run(t, env, []scenario{
			{"PATCH, If-Match of another tag", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"enabled": false},
				Headers: map[string]string{"If-Match": `"nope"`}}), 412, nil, []string{"/problems/precondition-failed", "webhook changed"}},
			{"DELETE, If-Match of another tag", as("alice", apitest.Request{Method: "DELETE", Path: hook, Headers: map[string]string{"If-Match": `"nope"`}}), 412, nil, nil},
			{"PATCH, If-Unmodified-Since before it", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"enabled": false},
				Headers: map[string]string{"If-Unmodified-Since": "Thu, 01 Jan 2015 00:00:00 GMT"}}), 412, nil, nil},
			{"an empty patch changes nothing", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{}}), 200,
				map[string]string{"ETag": "^" + regexp.QuoteMeta(tag) + "$", "Last-Modified": cur.Header.Get("Last-Modified")}, nil},
			{"PATCH, If-Match of the current tag", as("alice", apitest.Request{Method: "PATCH", Path: hook, Body: map[string]any{"enabled": true},
				Headers: map[string]string{"If-Match": tag}}), 200, map[string]string{"ETag": "^" + regexp.QuoteMeta(tag) + "$"}, nil},
		})
		if after := env.Do(as("alice", apitest.Request{Path: hook})); after.Header.Get("ETag") != tag || !strings.Contains(string(after.Body), `"enabled":true`) {
			t.Fatalf("refused or empty writes changed the subscription: %s", after.Body)
		}

		// The bound: 20 per person, 409 past it.
		for i := 1; i < yard.MaxWebhooksPerPerson; i++ {
			if r := env.Do(as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/" + strconv.Itoa(i)}})); r.StatusCode != 201 {
				t.Fatalf("subscription %d: %d %s", i+1, r.StatusCode, r.Body)
			}
		}
		run(t, env, []scenario{
			{"past 20 subscriptions", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/21"}}), 409,
				nil, []string{`/problems/conflict"`, `20 webhook subscriptions`}},
			{"a page of them", as("alice", apitest.Request{Path: "/v1/webhooks?offset=5&max=5"}), 200,
				map[string]string{"Link": `offset=10&max=5>; rel="next"`}, []string{`"total":20`, `"offset":5`, `"max":5`}},
			{"bad paging", as("alice", apitest.Request{Path: "/v1/webhooks?max=x"}), 400, nil, []string{`"field":"max"`}},
			{"delete", as("alice", apitest.Request{Method: "DELETE", Path: hook}), 204, nil, nil},
			{"gone", as("alice", apitest.Request{Path: hook}), 404, nil, nil},
			{"room for one more", as("alice", apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/21"}}), 201, nil, nil},
		})
	})
}

type deliveryJSON struct {
	ID        string `json:"id"`
	EventID   string `json:"eventId"`
	EventType string `json:"eventType"`
	Subject   string `json:"subject"`
	Attempt   int    `json:"attempt"`
	Status    string `json:"status"`
	Code      *int   `json:"code"`
	Error     string `json:"error"`
	Time      string `json:"time"`
}

// TestWebhookDeliveriesPage pages a subscription's delivery attempts,
// newest first, with the Link header, and shows a failed attempt with its
// code and the pending retry above it.
func TestWebhookDeliveriesPage(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	env := apitest.Start(t, db)
	env.CreateUser("alice", pw)
	as := func(r apitest.Request) apitest.Request { r.User, r.Password = "alice", pw; return r }
	resp := env.Do(as(apitest.Request{Method: "POST", Path: "/v1/webhooks", Body: map[string]any{"url": "https://hooks.example.org/h", "types": []string{"dog.created"}}}))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	var hook webhookJSON
	resp.JSON(t, &hook)
	path := "/v1/webhooks/" + hook.ID + "/deliveries"
	for i := range 5 {
		if r := env.Do(as(apitest.Request{Method: "POST", Path: "/v1/dogs", Body: map[string]any{"name": "Dog" + strconv.Itoa(i), "email": "d@example.org"}})); r.StatusCode != 201 {
			t.Fatalf("dog: %d %s", r.StatusCode, r.Body)
		}
	}
	if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 5 {
		t.Fatalf("fan-out: %d, %v", n, err)
	}

	page := func(query string) ([]deliveryJSON, *apitest.Response) {
		t.Helper()
		r := env.Do(as(apitest.Request{Path: path + query}))
		if r.StatusCode != 200 {
			t.Fatalf("GET %s%s: %d %s", path, query, r.StatusCode, r.Body)
		}
		var p struct {
			Items []deliveryJSON `json:"items"`
			Total int            `json:"total"`
		}
		r.JSON(t, &p)
		if p.Total != 5 && p.Total != 6 {
			t.Fatalf("total %d", p.Total)
		}
		return p.Items, r
	}
	first, r := page("?max=2")
	if len(first) != 2 || !strings.Contains(r.Header.Get("Link"), `offset=2&max=2>; rel="next"`) || !strings.Contains(r.Header.Get("Link"), `offset=4&max=2>; rel="last"`) {
		t.Fatalf("first page: %d items, Link %q", len(first), r.Header.Get("Link"))
	}
	second, _ := page("?max=2&offset=2")
	last, r := page("?max=2&offset=4")
	if len(last) != 1 || strings.Contains(r.Header.Get("Link"), `rel="next"`) {
		t.Fatalf("last page: %d items, Link %q", len(last), r.Header.Get("Link"))
	}
	all := append(append(first, second...), last...)
	for i, d := range all {
		if d.EventType != yard.EventDogCreated || d.Attempt != 1 || d.Status != "pending" || d.Code != nil ||
			!regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(d.EventID) || !strings.HasPrefix(d.Subject, env.URL+"/v1/dogs/") {
			t.Fatalf("delivery %d: %+v", i, d)
		}
		if i > 0 && all[i-1].EventID <= d.EventID {
			t.Fatalf("not newest first: %s then %s", all[i-1].EventID, d.EventID)
		}
	}

	// One attempt fails: it shows its code, and its retry comes first.
	cs, err := db.ClaimWebhookDeliveries(ctx, 1, time.Minute, yard.DeliveryBounds{})
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %v %v", cs, err)
	}
	if _, lost, err := db.FinishWebhookDeliveries(ctx, cs, []yard.DeliveryOutcome{{Code: 502, Error: "answered 502", RetryIn: time.Minute}}); err != nil || lost[0] {
		t.Fatalf("finish: lost %v, %v", lost, err)
	}
	top, _ := page("?max=2")
	if top[0].Attempt != 2 || top[0].Status != "pending" || top[0].EventID != cs[0].Delivery.Event.ID.String() ||
		top[1].Attempt != 1 || top[1].Status != "failed" || top[1].Code == nil || *top[1].Code != 502 || top[1].Error != "answered 502" {
		t.Fatalf("after a failure: %+v", top)
	}
	if _, err := time.Parse(time.RFC3339, top[0].Time); err != nil {
		t.Fatalf("time %q", top[0].Time)
	}
	if r := env.Do(as(apitest.Request{Path: path + "?offset=-1"})); r.StatusCode != 400 {
		t.Fatalf("bad offset: %d", r.StatusCode)
	}
}
