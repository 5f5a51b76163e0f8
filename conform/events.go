package conform

import (
	"bufio"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// events reads the JSON page of /v1/events with the query as the person.
func (t *T) events(p *person, query string) []map[string]any {
	r := t.Expect(200, "GET", "/v1/events?"+query, basic(p), header("Accept", "application/json"))
	items, ok := r.JSON()["items"].([]any)
	t.Check(ok, "GET /v1/events is not a page {items, next}")
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// waitEvent polls the events of the query until one of type typ appears
// (at most 10 s) and returns it, or nil.
func (t *T) waitEvent(p *person, query, typ string) map[string]any {
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, e := range t.events(p, query) {
			if e["type"] == typ {
				return e
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func eventChecks() []Check {
	const p, doc = "events", "docs/events.md"
	return []Check{
		def(p, "cloudevent", Must, doc+"#an-event", "create a dog, then GET /v1/events?subject=<dog> (Accept: application/json)",
			`a page {"items","next"} holding dog.created: specversion 1.0, id, source = the base URL, subject = the dog's URL, time, datacontenttype application/json, data = the dog`, func(t *T) {
				dog := t.newDog()
				e := t.waitEvent(t.owner(), "subject="+url.QueryEscape(dog), "dog.created")
				t.Check(e != nil, "no dog.created event for %s within 10 s", dog)
				data, _ := e["data"].(map[string]any)
				t.Check(e["specversion"] == "1.0" && e["id"] != nil && e["source"] == t.k.base.String() && e["subject"] == dog && e["time"] != nil && e["datacontenttype"] == "application/json",
					"the event's attributes %v", e)
				t.Check(data != nil && data["id"] != nil && dog == t.k.abs("/v1/dogs/"+data["id"].(string)+"/"), "the event's data %v is not the dog", e["data"])
			}),
		def(p, "types-filter", Must, doc+"#filters", "PATCH a dog, GET /v1/events?subject=<dog>&types=dog.updated",
			"only dog.updated events, at least one", func(t *T) {
				dog := t.newDog()
				t.Expect(204, "PATCH", dog, basic(t.owner()), jsonBody(map[string]any{"name": t.k.prefix + "-ev"}))
				e := t.waitEvent(t.owner(), "subject="+url.QueryEscape(dog)+"&types=dog.updated", "dog.updated")
				t.Check(e != nil, "no dog.updated event")
				for _, e := range t.events(t.owner(), "subject="+url.QueryEscape(dog)+"&types=dog.updated") {
					t.Check(e["type"] == "dog.updated", "an event of type %v passed the filter types=dog.updated", e["type"])
				}
			}),
		def(p, "visibility", Must, doc+"#filters", "GET /v1/events?subject=<a dog of the owner's> as another person",
			"no events of the dog", func(t *T) {
				dog := t.newDog()
				t.Check(t.waitEvent(t.owner(), "subject="+url.QueryEscape(dog), "dog.created") != nil, "the owner sees no dog.created")
				t.Check(len(t.events(t.other(), "subject="+url.QueryEscape(dog))) == 0, "another person sees the dog's events")
			}),
		def(p, "resume", Must, doc+"#resuming-and-retention", "GET /v1/events?after=<id of dog.created>&subject=<dog> after a PATCH",
			"the events after that id only: dog.updated, not dog.created", func(t *T) {
				dog := t.newDog()
				created := t.waitEvent(t.owner(), "subject="+url.QueryEscape(dog), "dog.created")
				t.Check(created != nil, "no dog.created")
				t.Expect(204, "PATCH", dog, basic(t.owner()), jsonBody(map[string]any{"name": t.k.prefix + "-ev"}))
				q := "subject=" + url.QueryEscape(dog) + "&after=" + url.QueryEscape(created["id"].(string))
				t.Check(t.waitEvent(t.owner(), q, "dog.updated") != nil, "no dog.updated after the dog.created id")
				for _, e := range t.events(t.owner(), q) {
					t.Check(e["id"] != created["id"], "after=<id> answered the event with that id")
				}
			}),
		def(p, "stream", Must, doc+"#streams", "GET /v1/events?subject=<dog> with Accept: text/event-stream, then PATCH the dog",
			"200 text/event-stream; an event with id:, event: dog.updated and data: the JSON event arrives", func(t *T) {
				dog := t.newDog()
				t.Check(t.waitEvent(t.owner(), "subject="+url.QueryEscape(dog), "dog.created") != nil, "no dog.created")
				got := make(chan string, 1)
				ctx, cancel := context.WithTimeout(t.ctx, 15*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", t.k.abs("/v1/events?subject="+url.QueryEscape(dog)+"&types=dog.updated"), nil)
				req.Header.Set("Accept", "text/event-stream")
				req.Header.Set("User-Agent", t.k.cfg.UserAgent)
				req.SetBasicAuth(t.owner().name, t.owner().password)
				resp, err := t.k.hc.Do(req)
				t.Check(err == nil, "the stream: %v", err)
				defer resp.Body.Close()
				t.exchanges = append(t.exchanges, formatExchange(req, nil, resp, nil))
				t.Check(resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), "the stream answered %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
				go func() {
					sc := bufio.NewScanner(resp.Body)
					var id, typ string
					for sc.Scan() {
						line := sc.Text()
						switch {
						case strings.HasPrefix(line, "id:"):
							id = strings.TrimSpace(line[3:])
						case strings.HasPrefix(line, "event:"):
							typ = strings.TrimSpace(line[6:])
						case strings.HasPrefix(line, "data:") && typ == "dog.updated" && id != "":
							var e map[string]any
							if json.Unmarshal([]byte(strings.TrimSpace(line[5:])), &e) == nil && e["id"] == id {
								got <- id
								return
							}
						}
					}
					close(got)
				}()
				t.Expect(204, "PATCH", dog, basic(t.owner()), jsonBody(map[string]any{"name": t.k.prefix + "-sse"}))
				select {
				case id, ok := <-got:
					t.Check(ok && id != "", "the stream ended without a dog.updated event")
				case <-ctx.Done():
					t.Fatalf("no dog.updated event on the stream within 15 s")
				}
			}),
		def(p, "prefer-wait", Should, doc+"#waiting-for-a-bark", "an async bark, then GET the task with Prefer: wait=10",
			"the finished task, with Preference-Applied: wait=10", func(t *T) {
				loc := t.barked(t.dog(), "record", 202, header("Prefer", "respond-async"))
				g := t.Expect(200, "GET", loc, basic(t.owner()), header("Prefer", "wait=10"))
				t.Check(g.Header.Get("Preference-Applied") == "wait=10", "Preference-Applied %q, want wait=10", g.Header.Get("Preference-Applied"))
				t.Check(g.Str("status") == "succeeded", "status %q after the wait", g.Str("status"))
			}),
	}
}

// receiver is the kit's webhook receiver on a loopback port.
type receiver struct {
	srv  *http.Server
	addr string
	mu   sync.Mutex
	got  []delivery
	wake chan struct{}
}

// delivery is one POST the receiver got.
type delivery struct {
	path   string
	header http.Header
	body   []byte
}

func startReceiver(addr string) (*receiver, error) {
	l, err := net.Listen("tcp", cmp.Or(addr, "127.0.0.1:0"))
	if err != nil {
		return nil, err
	}
	rc := &receiver{addr: l.Addr().String(), wake: make(chan struct{}, 1)}
	rc.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{r.URL.Path, r.Header.Clone(), b})
		rc.mu.Unlock()
		select {
		case rc.wake <- struct{}{}:
		default:
		}
		w.WriteHeader(204)
	})}
	go func() { _ = rc.srv.Serve(l) }()
	return rc, nil
}

func (rc *receiver) close() { _ = rc.srv.Close() }

// find waits up to 15 s for a delivery to path of the event type and subject.
func (rc *receiver) find(ctx context.Context, path, typ, subject string) *delivery {
	deadline := time.After(15 * time.Second)
	for {
		rc.mu.Lock()
		for i := range rc.got {
			var e map[string]any
			if rc.got[i].path == path && json.Unmarshal(rc.got[i].body, &e) == nil && e["type"] == typ && e["subject"] == subject {
				d := rc.got[i]
				rc.mu.Unlock()
				return &d
			}
		}
		rc.mu.Unlock()
		select {
		case <-rc.wake:
		case <-deadline:
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// hook subscribes the owner's webhook to the kit's receiver, or skips the
// check when the server rightly refuses a loopback address.
func (t *T) hook() (id, secret, path string) {
	if t.k.recv == nil {
		rc, err := startReceiver(t.k.cfg.ReceiverAddr)
		t.Check(err == nil, "the kit's receiver cannot listen: %v", err)
		t.k.recv = rc
	}
	path = "/" + t.k.prefix + "/" + randomHex(4)
	u := "http://" + t.k.recv.addr + path
	r := t.Do("POST", "/v1/webhooks", basic(t.owner()), jsonBody(map[string]any{"url": u, "types": []string{"dog.*"}}))
	if r.Status == 400 || r.Status == 403 || r.Status == 422 {
		t.Skipf("the server refuses deliveries to the kit's loopback receiver %s (%d); yard allows it with --webhook-allow-host %s", u, r.Status, strings.Split(t.k.recv.addr, ":")[0])
	}
	t.Status(r, 201)
	id, secret = r.Str("id"), r.Str("secret")
	t.k.created("webhook "+id, "DELETE", "/v1/webhooks/"+url.PathEscape(id), []opt{basic(t.owner())})
	t.Check(r.Str("url") == u && r.JSON()["enabled"] == true, "the subscription %s", redact(string(r.Body)))
	t.Check(strings.HasPrefix(secret, "whsec_"), "the secret does not start with whsec_")
	return id, secret, path
}

func webhookChecks() []Check {
	const p, doc = "webhooks", "docs/events.md#webhooks"
	return []Check{
		def(p, "create", Must, doc, `POST /v1/webhooks {"url":<the kit's loopback receiver>,"types":["dog.*"]}`,
			`201 with id, url, types, enabled true and a secret whsec_…; skipped when the server refuses loopback addresses`, func(t *T) {
				t.hook()
			}),
		def(p, "secret-once", Must, doc, "GET /v1/webhooks/{id}",
			"200 without the secret", func(t *T) {
				id, _, _ := t.hook()
				r := t.Expect(200, "GET", "/v1/webhooks/"+id, basic(t.owner()))
				t.Check(r.Str("secret") == "", "GET shows the secret again")
			}),
		def(p, "delivery", Must, "docs/events.md#verifying-a-delivery", "subscribe, then PATCH a dog",
			"a POST to the receiver with the CloudEvent dog.updated; webhook-id = the event id; webhook-signature v1,<base64 HMAC-SHA256 of id.timestamp.body under the secret>", func(t *T) {
				if h := t.k.base.Hostname(); h != "localhost" && !net.ParseIP(h).IsLoopback() {
					t.Skipf("the server (%s) is not on this machine: its deliveries cannot reach the kit's loopback receiver", h)
				}
				_, secret, path := t.hook()
				dog := t.newDog()
				t.Expect(204, "PATCH", dog, basic(t.owner()), jsonBody(map[string]any{"name": t.k.prefix + "-hook"}))
				d := t.k.recv.find(t.ctx, path, "dog.updated", dog)
				t.Check(d != nil, "no dog.updated delivery for %s within 15 s", dog)
				id, ts := d.header.Get("webhook-id"), d.header.Get("webhook-timestamp")
				var e map[string]any
				_ = json.Unmarshal(d.body, &e)
				t.Check(id != "" && e["id"] == id, "webhook-id %q, event id %v", id, e["id"])
				key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
				t.Check(err == nil, "the secret is not base64 after whsec_")
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(id + "." + ts + "."))
				mac.Write(d.body)
				want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
				t.Check(strings.Contains(" "+d.header.Get("webhook-signature")+" ", " "+want+" "), "webhook-signature %q does not verify", d.header.Get("webhook-signature"))
			}),
		def(p, "private-refused", Must, "docs/events.md#where-deliveries-may-go", `POST /v1/webhooks {"url":"https://10.1.2.3/hook"} (a private address)`,
			"400 problem naming url", func(t *T) {
				r := t.Do("POST", "/v1/webhooks", basic(t.owner()), jsonBody(map[string]any{"url": "https://10.1.2.3/hook"}))
				t.createdAnyway(r, "webhook", "/v1/webhooks/"+r.Str("id"), basic(t.owner()))
				t.Problem(r, 400, "", "url")
			}),
		def(p, "delete", Must, doc, "DELETE /v1/webhooks/{id}, then GET it",
			"204, then 404", func(t *T) {
				id, _, _ := t.hook()
				t.Expect(204, "DELETE", "/v1/webhooks/"+id, basic(t.owner()))
				t.Expect(404, "GET", "/v1/webhooks/"+id, basic(t.owner()))
			}),
	}
}
