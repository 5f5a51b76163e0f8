package webhooks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
	"github.com/yard-api/yard/webhooks"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const baseURL = "https://yard.test"

// received is one request a receiver got.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is a real HTTP(S) server on 127.0.0.1 that records what it is
// sent and answers with respond (200 when nil); n counts from 1.
type receiver struct {
	srv     *httptest.Server
	respond func(n int, w http.ResponseWriter, r *http.Request)
	mu      sync.Mutex
	got     []received
	arrived chan received
}

func startReceiver(t *testing.T, useTLS bool, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond, arrived: make(chan received, 1000)}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := received{Header: r.Header.Clone(), Body: body}
		rc.mu.Lock()
		rc.got = append(rc.got, got)
		n := len(rc.got)
		rc.mu.Unlock()
		rc.arrived <- got
		if rc.respond != nil {
			rc.respond(n, w, r)
		}
	}))
	if useTLS {
		rc.srv.StartTLS()
	} else {
		rc.srv.Start()
	}
	t.Cleanup(rc.srv.Close)
	return rc
}

// hostPort is the receiver's address, for the allow-list.
func (rc *receiver) hostPort() string { return rc.srv.Listener.Addr().String() }

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// next waits for the receiver's next request.
func (rc *receiver) next(t *testing.T, within time.Duration) received {
	t.Helper()
	select {
	case r := <-rc.arrived:
		return r
	case <-time.After(within):
		t.Fatalf("the receiver got nothing within %s", within)
		return received{}
	}
}

// newConfig is the configuration of a deliverer over db that may reach
// the receivers (their host and port allowed, their certificates
// trusted), polling often.
func newConfig(t *testing.T, db *store.DB, rcs ...*receiver) webhooks.Config {
	t.Helper()
	api := httpapi.New(httpapi.Deps{DB: db, BaseURL: baseURL})
	roots := x509.NewCertPool()
	policy := &fetch.Policy{}
	for _, rc := range rcs {
		policy.AllowHosts = append(policy.AllowHosts, rc.hostPort())
		if c := rc.srv.Certificate(); c != nil {
			roots.AddCert(c)
		}
	}
	return webhooks.Config{DB: db, Render: api.RenderEvent, Policy: policy,
		TLSConfig: &tls.Config{RootCAs: roots}, Poll: 50 * time.Millisecond}
}

// newService is the deliverer of newConfig.
func newService(t *testing.T, db *store.DB, rcs ...*receiver) *webhooks.Service {
	t.Helper()
	return webhooks.New(newConfig(t, db, rcs...))
}

// run runs the deliverer of cfg (with a hub over db) until the test ends.
func run(t *testing.T, db *store.DB, cfg webhooks.Config) {
	t.Helper()
	hub := events.New(db, events.Config{Poll: 50 * time.Millisecond})
	cfg.Hub = hub
	svc := webhooks.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = hub.Run(ctx) })
	wg.Go(func() { svc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func mustUser(t *testing.T, db *store.DB, name string, roles ...string) *yard.User {
	t.Helper()
	if len(roles) == 0 {
		roles = []string{yard.RoleUser}
	}
	u := &yard.User{Name: name, Email: name + "@example.org", Roles: roles}
	if err := db.CreateUser(context.Background(), u, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	return u
}

func mustDog(t *testing.T, db *store.DB, owner, name string) *yard.Dog {
	t.Helper()
	d := &yard.Dog{Name: name, Email: "dog@example.org", Owner: owner}
	if err := db.CreateDog(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustWebhook(t *testing.T, db *store.DB, owner, u string, types ...string) *yard.Webhook {
	t.Helper()
	w := &yard.Webhook{Owner: owner, URL: u, Types: types}
	if err := db.CreateWebhook(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// cloudEvent is the part of a delivery's body the tests read.
type cloudEvent struct {
	SpecVersion string         `json:"specversion"`
	ID          string         `json:"id"`
	Source      string         `json:"source"`
	Type        string         `json:"type"`
	Subject     string         `json:"subject"`
	Data        map[string]any `json:"data"`
}

// verify checks a delivery as a receiver would, recomputing the signature
// from the secret (Standard Webhooks, "Verifying webhook authenticity"),
// and returns its event.
func verify(t *testing.T, secret string, r received, now time.Time) cloudEvent {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("webhook-id %q", id)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Unix(sec, 0).Sub(now).Abs() > time.Minute {
		t.Errorf("webhook-timestamp %q, now %d", ts, now.Unix())
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") || len(key) < 24 {
		t.Fatalf("secret %q", secret)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(r.Body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := r.Header.Get("webhook-signature"); got != want {
		t.Errorf("webhook-signature: got %q, want %q", got, want)
	}
	var e cloudEvent
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	if e.ID != id || e.SpecVersion != "1.0" || e.Source != baseURL {
		t.Errorf("event %+v, webhook-id %s", e, id)
	}
	return e
}

// TestWebhookDeliveryIsSignedAndVerifies runs the deliverer against a real HTTPS
// receiver: each event its owner may see and its types want arrives once,
// as the CloudEvent GET /v1/events gives, with Standard Webhooks headers
// whose signature the receiver recomputes from the secret.
func TestWebhookDeliveryIsSignedAndVerifies(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		rc := startReceiver(t, true, nil)
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		hook := mustWebhook(t, db, alice.ID, "https://"+rc.hostPort()+"/hook", "dog.*")
		run(t, db, newConfig(t, db, rc))

		rex := mustDog(t, db, alice.ID, "Rex")
		r := rc.next(t, 5*time.Second)
		e := verify(t, hook.Secret, r, time.Now())
		if e.Type != yard.EventDogCreated || e.Subject != baseURL+yard.DogPath(rex.ID) || e.Data["name"] != "Rex" || e.Data["id"] != rex.ID {
			t.Fatalf("first delivery: %s", r.Body)
		}
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "yard-webhooks/") {
			t.Errorf("User-Agent %q", ua)
		}

		// Bob's dog is not Alice's to see; a bark is not a dog.* type,
		// its dog.updated is.
		mustDog(t, db, bob.ID, "Fido")
		if err := db.RecordSyncBark(ctx, &yard.Bark{DogID: rex.ID, Effect: yard.EffectRecord}); err != nil {
			t.Fatal(err)
		}
		r = rc.next(t, 5*time.Second)
		if e := verify(t, hook.Secret, r, time.Now()); e.Type != yard.EventDogUpdated || e.Data["barkCount"] != 1.0 {
			t.Fatalf("second delivery: %s", r.Body)
		}
		mustDog(t, db, alice.ID, "Max")
		r = rc.next(t, 5*time.Second)
		if e := verify(t, hook.Secret, r, time.Now()); e.Type != yard.EventDogCreated || e.Data["name"] != "Max" {
			t.Fatalf("third delivery: %s", r.Body)
		}
		// The attempts are recorded, newest first; nothing else follows.
		var ds []*yard.WebhookDelivery
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			ds, _, _ = db.FindWebhookDeliveries(ctx, hook.ID, 0, 10)
			if len(ds) == 3 && !slices.ContainsFunc(ds, func(d *yard.WebhookDelivery) bool { return d.Status != yard.DeliverySucceeded }) {
				break
			}
		}
		if len(ds) != 3 || ds[0].Status != yard.DeliverySucceeded || ds[0].Code != 200 || ds[0].Event.Type != yard.EventDogCreated ||
			ds[2].Event.ID.String() != rc.requests()[0].Header.Get("webhook-id") {
			t.Fatalf("deliveries: %d, newest %+v", len(ds), ds[0])
		}
		time.Sleep(100 * time.Millisecond)
		if got := len(rc.requests()); got != 3 {
			t.Fatalf("the receiver got %d requests, want 3", got)
		}
	})
}

// TestWebhookRetryKeepsTheID: a receiver that answers 500 and then 200
// gets the same event twice, with the same webhook-id and body, each
// attempt signed for its own timestamp.
func TestWebhookRetryKeepsTheID(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	rc := startReceiver(t, false, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	alice := mustUser(t, db, "alice")
	hook := mustWebhook(t, db, alice.ID, "http://"+rc.hostPort()+"/h")
	cfg := newConfig(t, db, rc)
	cfg.Backoff = func(int) time.Duration { return 100 * time.Millisecond }
	run(t, db, cfg)

	mustDog(t, db, alice.ID, "Rex")
	first, second := rc.next(t, 5*time.Second), rc.next(t, 5*time.Second)
	e1, e2 := verify(t, hook.Secret, first, time.Now()), verify(t, hook.Secret, second, time.Now())
	if id := first.Header.Get("webhook-id"); id != second.Header.Get("webhook-id") || e1.ID != e2.ID || string(first.Body) != string(second.Body) {
		t.Fatalf("a retry differs: %s %s then %s %s", id, first.Body, second.Header.Get("webhook-id"), second.Body)
	}
	var ds []*yard.WebhookDelivery
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ds, _, _ = db.FindWebhookDeliveries(context.Background(), hook.ID, 0, 10)
		if len(ds) == 2 && ds[0].Status == yard.DeliverySucceeded {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ds) != 2 || ds[0].Attempt != 2 || ds[0].Status != yard.DeliverySucceeded || ds[1].Attempt != 1 ||
		ds[1].Status != yard.DeliveryFailed || ds[1].Code != 500 || ds[1].Error != "answered 500" {
		t.Fatalf("deliveries: %+v", ds)
	}
	if got, _ := db.FindWebhook(context.Background(), hook.ID); !got.FailingSince.IsZero() {
		t.Fatalf("failure state after the success: %v", got.FailingSince)
	}
}

// TestWebhookStalledReceiverDelaysNoOne: a receiver that does not answer holds
// at most its subscription's two slots; another subscription's events
// arrive at once.
func TestWebhookStalledReceiverDelaysNoOne(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	release := make(chan struct{})
	var inFlight, most atomic.Int64
	slow := startReceiver(t, true, func(_ int, w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	t.Cleanup(func() { close(release) }) // before the servers close
	fast := startReceiver(t, true, nil)
	alice := mustUser(t, db, "alice")
	mustWebhook(t, db, alice.ID, "https://"+slow.hostPort()+"/slow")
	hook := mustWebhook(t, db, alice.ID, "https://"+fast.hostPort()+"/fast")
	cfg := newConfig(t, db, slow, fast)
	cfg.Workers, cfg.PerWebhook = 3, 2 // the stalled receiver may hold two; the third is the others'
	run(t, db, cfg)

	mustDog(t, db, alice.ID, "First")
	slow.next(t, 5*time.Second) // the slow receiver holds the first attempt
	start := time.Now()
	for i := range 5 {
		mustDog(t, db, alice.ID, "Dog"+strconv.Itoa(i))
	}
	got := map[string]bool{}
	for len(got) < 6 {
		r := fast.next(t, 2*time.Second)
		got[verify(t, hook.Secret, r, time.Now()).ID] = true
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the fast receiver waited %s", d)
	}
	if m := most.Load(); m > 2 {
		t.Fatalf("the stalled receiver held %d attempts at once, want at most 2", m)
	}
	if m := most.Load(); m < 1 {
		t.Fatal("the stalled receiver was never called")
	}
}

// TestWebhookPrivateAddressesRefused: a URL naming an address that is not public
// is refused when written (400 naming url) and, when its name resolves to
// one, when the attempt connects; so is a redirect, never followed.
func TestWebhookPrivateAddressesRefused(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	rc := startReceiver(t, true, nil)
	_, port, _ := net.SplitHostPort(rc.hostPort())

	allowed := &fetch.Policy{AllowHosts: []string{rc.hostPort()}}
	for _, tc := range []struct {
		url    string
		policy *fetch.Policy
		ok     bool
	}{
		{"https://hooks.example.com/yard", nil, true},
		{"https://93.184.215.14:8443/x?y=1", nil, true},
		{"https://127.0.0.1:" + port + "/h", nil, false},
		{"https://localhost/h", nil, false},
		{"https://hooks.internal/h", nil, false},
		{"https://[::1]/h", nil, false},
		{"https://10.1.2.3/h", nil, false},
		{"https://169.254.169.254/latest", nil, false},
		{"https://0x7f.1/h", nil, false},
		{"https://2130706433/h", nil, false},
		{"http://hooks.example.com/h", nil, false},
		{"https://user:pw@hooks.example.com/h", nil, false},
		{"https://hooks.example.com/h#top", nil, false},
		{"ftp://hooks.example.com/h", nil, false},
		{"https://hooks.example.com/h\r\nX: y", nil, false},
		{"https://hooks.example.com/" + strings.Repeat("a", 2000), nil, false},
		{"https:///h", nil, false},
		{"", nil, false},
		{"http://" + rc.hostPort() + "/h", allowed, true},
		{"https://" + rc.hostPort() + "/h", allowed, true},
		{"http://127.0.0.1:1/h", allowed, false},
	} {
		err := webhooks.CheckURL(tc.policy, tc.url)
		if tc.ok != (err == nil) {
			t.Errorf("CheckURL(%.60q): got %v, want ok %v", tc.url, err, tc.ok)
		}
		var ye *yard.Error
		if err != nil && (yard.ErrorCode(err) != yard.EINVALID || !asYard(err, &ye) || len(ye.Fields) != 1 || ye.Fields[0].Field != "url") {
			t.Errorf("CheckURL(%.60q): %v, want EINVALID naming url", tc.url, err)
		}
	}

	// When the attempt connects: a name that resolves to 127.0.0.1; and
	// when it starts, URLs that were never checked (written to the store
	// directly, or allowed by an allow-list since changed).
	alice := mustUser(t, db, "alice")
	named := mustWebhook(t, db, alice.ID, "https://hooks.example.com:"+port+"/h")
	literal := mustWebhook(t, db, alice.ID, "https://127.0.0.1:"+port+"/h")
	plain := mustWebhook(t, db, alice.ID, "http://hooks.example.com:"+port+"/h")
	api := httpapi.New(httpapi.Deps{DB: db, BaseURL: baseURL})
	svc := webhooks.New(webhooks.Config{DB: db, Render: api.RenderEvent, Policy: &fetch.Policy{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}}})
	if err := webhooks.CheckURL(svc.Policy, named.URL); err != nil {
		t.Fatalf("a public-looking name is refused when written: %v", err)
	}
	mustDog(t, db, alice.ID, "Rex")
	if n, err := svc.FanOut(ctx); err != nil || n != 3 {
		t.Fatalf("fan-out: %d, %v", n, err)
	}
	if n, err := svc.DeliverDue(ctx); err != nil || n != 3 {
		t.Fatalf("deliver: %d, %v", n, err)
	}
	for w, want := range map[*yard.Webhook]string{named: "host not allowed: 127.0.0.1", literal: "host not allowed", plain: "must be an https:// URL"} {
		ds, _, _ := db.FindWebhookDeliveries(ctx, w.ID, 0, 10)
		if len(ds) != 2 || ds[1].Status != yard.DeliveryFailed || ds[1].Code != 0 || !strings.HasPrefix(ds[1].Error, want) {
			t.Fatalf("delivery to %s: %+v, want an error starting %q", w.URL, ds[1], want)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the private receiver got %d requests", n)
	}

	// A redirect is an answer, and a failure; its target hears nothing.
	target := startReceiver(t, true, nil)
	redirect := startReceiver(t, true, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://"+target.hostPort()+"/h", http.StatusTemporaryRedirect)
	})
	bob := mustUser(t, db, "bob")
	hook := mustWebhook(t, db, bob.ID, "https://"+redirect.hostPort()+"/h")
	svc = newService(t, db, redirect, target)
	mustDog(t, db, bob.ID, "Fido")
	if _, err := svc.FanOut(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DeliverDue(ctx); err != nil {
		t.Fatal(err)
	}
	ds, _, _ := db.FindWebhookDeliveries(ctx, hook.ID, 0, 10)
	if len(ds) != 2 || ds[1].Code != 307 || ds[1].Status != yard.DeliveryFailed || !strings.Contains(ds[1].Error, "redirects are not followed") {
		t.Fatalf("redirect: %+v", ds)
	}
	if len(redirect.requests()) != 1 || len(target.requests()) != 0 {
		t.Fatalf("redirect followed: %d, %d", len(redirect.requests()), len(target.requests()))
	}
}

func asYard(err error, out **yard.Error) bool {
	e, ok := err.(*yard.Error)
	*out = e
	return ok
}

// TestWebhookDisabledAfterADayOfFailures steps an injected clock through the
// default back-off of a receiver that always fails: the attempts follow
// the schedule, the subscription is disabled once its deliveries have
// failed for 24 hours, with a webhook.disabled event, and no attempt is
// made after that. Nothing sleeps.
func TestWebhookDisabledAfterADayOfFailures(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	clk := storetest.NewClock(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
	db.Now = clk.Now
	rc := startReceiver(t, false, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	alice := mustUser(t, db, "alice")
	hook := mustWebhook(t, db, alice.ID, "http://"+rc.hostPort()+"/h")
	start, _ := db.LastEventID(ctx)
	cfg := newConfig(t, db, rc)
	cfg.Now = clk.Now
	svc := webhooks.New(cfg)
	mustDog(t, db, alice.ID, "Rex")

	t0 := clk.Now()
	var at []time.Duration
	for clk.Now().Sub(t0) < 30*time.Hour {
		if _, err := svc.FanOut(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := svc.DeliverDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			at = append(at, clk.Now().Sub(t0))
		}
		if got, _ := db.FindWebhook(ctx, hook.ID); !got.Enabled {
			break
		}
		clk.Advance(time.Second)
		if len(at) > 3 {
			clk.Advance(5 * time.Minute) // the later waits are long
		}
	}
	got, err := db.FindWebhook(ctx, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := at[len(at)-1]
	if got.Enabled || last < 24*time.Hour || last > 24*time.Hour+6*time.Minute || !strings.Contains(got.DisabledReason, "answered 503") {
		t.Fatalf("after %s: %+v (attempts at %v)", clk.Now().Sub(t0), got, at)
	}
	// 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h (±10 %).
	want := []time.Duration{0, 5 * time.Second, 35 * time.Second, 155 * time.Second}
	for i, w := range want {
		if d := at[i] - w; d < -w/10-time.Second || d > w/10+2*time.Second {
			t.Errorf("attempt %d at %s, want about %s", i+1, at[i], w)
		}
	}
	if len(at) < 14 || len(at) > 20 {
		t.Errorf("%d attempts in 24 hours: %v", len(at), at)
	}
	reqs := rc.requests()
	if len(reqs) != len(at) {
		t.Fatalf("the receiver got %d requests for %d attempts", len(reqs), len(at))
	}
	for i, r := range reqs {
		if r.Header.Get("webhook-id") != reqs[0].Header.Get("webhook-id") {
			t.Fatalf("attempt %d has another webhook-id", i+1)
		}
		if ts := r.Header.Get("webhook-timestamp"); ts != strconv.FormatInt(t0.Add(at[i]).Unix(), 10) {
			t.Fatalf("attempt %d: webhook-timestamp %s, want the injected clock's %d", i+1, ts, t0.Add(at[i]).Unix())
		}
		verify(t, hook.Secret, r, t0.Add(at[i]))
	}
	evs, err := db.ReadEvents(ctx, yard.EventFilter{After: start, Owner: &alice.ID, Limit: 100, Match: func(e *yard.Event) bool {
		return e.Type == yard.EventWebhookDisabled
	}})
	if err != nil || len(evs.Events) != 1 || evs.Events[0].Subject != yard.WebhookPath(hook.ID) {
		t.Fatalf("webhook.disabled: %+v, %v", evs, err)
	}
	// Disabled: nothing more is tried.
	clk.Advance(48 * time.Hour)
	mustDog(t, db, alice.ID, "Max")
	if _, err := svc.FanOut(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.DeliverDue(ctx); err != nil || n != 0 {
		t.Fatalf("deliveries after disabling: %d, %v", n, err)
	}
}

// TestWebhookRunRecordsEveryOutcomeBeforeReturning stops a service in the
// middle of a backlog. Workers hand their outcomes to one writer and go on
// without waiting for the commit; Run still returns only when every
// outcome it observed is recorded, and every attempt it did not finish is
// handed back (no lease left behind). The outcomes of many workers are
// recorded in fewer transactions than attempts.
func TestWebhookRunRecordsEveryOutcomeBeforeReturning(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var got atomic.Int64
		rc := startReceiver(t, false, func(int, http.ResponseWriter, *http.Request) {
			got.Add(1)
			time.Sleep(time.Millisecond)
		})
		var hooks []*yard.Webhook
		var dogs []*yard.Dog
		for _, name := range []string{"alice", "bob", "carol"} {
			u := mustUser(t, db, name)
			hooks = append(hooks, mustWebhook(t, db, u.ID, "http://"+rc.hostPort()+"/"+name))
			dogs = append(dogs, mustDog(t, db, u.ID, "Rex"))
		}
		for i := range 300 {
			name := "Dog" + strconv.Itoa(i)
			if _, err := db.UpdateDog(ctx, dogs[i%3].ID, yard.DogUpdate{Name: &name}); err != nil {
				t.Fatal(err)
			}
		}
		counting := &countingStore{DB: db}
		cfg := newConfig(t, db, rc)
		cfg.DB = counting
		svc := webhooks.New(cfg)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { svc.Run(rctx); close(done) }()
		for deadline := time.Now().Add(10 * time.Second); got.Load() < 100 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return")
		}
		recorded := 0
		for _, w := range hooks {
			for _, d := range deliveries(t, db, w.ID) {
				if d.Status == yard.DeliverySucceeded {
					recorded++
				}
			}
		}
		if n := counting.succeeded.Load(); n < 50 || int64(recorded) != n {
			t.Fatalf("%d attempts observed succeeded, %d recorded when Run returned", n, recorded)
		}
		var leased int
		if err := db.Read().QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE lease_until > 0`).Scan(&leased); err != nil || leased != 0 {
			t.Fatalf("%d deliveries still leased after Run returned (%v)", leased, err)
		}
		if calls, outcomes := counting.finishes.Load(), counting.outcomes.Load(); outcomes < int64(recorded) || calls >= outcomes {
			t.Fatalf("%d outcomes recorded in %d transactions", outcomes, calls)
		}
	})
}

// countingStore counts the transactions that record outcomes, and the
// successful attempts they recorded.
type countingStore struct {
	*store.DB
	finishes, outcomes, succeeded atomic.Int64
}

func (c *countingStore) FinishWebhookDeliveries(ctx context.Context, cs []*yard.WebhookClaim, outs []yard.DeliveryOutcome) ([]bool, []bool, error) {
	c.finishes.Add(1)
	c.outcomes.Add(int64(len(cs)))
	disabled, lost, err := c.DB.FinishWebhookDeliveries(ctx, cs, outs)
	for i := range outs {
		if err == nil && !lost[i] && outs[i].Succeeded {
			c.succeeded.Add(1)
		}
	}
	return disabled, lost, err
}

// deliveries returns every delivery row of a subscription.
func deliveries(t *testing.T, db *store.DB, webhookID string) []*yard.WebhookDelivery {
	t.Helper()
	ds, _, err := db.FindWebhookDeliveries(context.Background(), webhookID, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestWebhookBacklogOfOneSubscriptionNeedsNoPoll: a subscription's
// backlog goes out at the pace of its receiver, not of the poll, although
// each attempt holds one of its two slots until its outcome is recorded
// (after the worker has moved on).
func TestWebhookBacklogOfOneSubscriptionNeedsNoPoll(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		var got atomic.Int64
		rc := startReceiver(t, false, func(int, http.ResponseWriter, *http.Request) { got.Add(1) })
		alice := mustUser(t, db, "alice")
		mustWebhook(t, db, alice.ID, "http://"+rc.hostPort()+"/h")
		rex := mustDog(t, db, alice.ID, "Rex")
		for i := range 60 {
			name := "Rex" + strconv.Itoa(i)
			if _, err := db.UpdateDog(ctx, rex.ID, yard.DogUpdate{Name: &name}); err != nil {
				t.Fatal(err)
			}
		}
		cfg := newConfig(t, db, rc)
		cfg.Workers, cfg.PerWebhook, cfg.Poll = 4, 2, time.Minute
		run(t, db, cfg)
		for deadline := time.Now().Add(10 * time.Second); got.Load() < 61 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if n := got.Load(); n != 61 {
			t.Fatalf("the receiver got %d of 61 deliveries in 10 s", n)
		}
	})
}
