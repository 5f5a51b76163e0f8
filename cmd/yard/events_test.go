package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// streamClient has no overall time-out: a stream lasts as long as the test.
var streamClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}

// follower reads one principal's event stream as a client would: on any
// failure it reconnects, to the next server of its list, with the last id
// it received (Last-Event-ID), and records every event once received.
type follower struct {
	user, pass string
	servers    []string

	mu   sync.Mutex
	ids  []string
	last string
	// reconnects counts the streams it opened after the first.
	reconnects atomic.Int64
}

func (f *follower) run(ctx context.Context, start string) {
	f.last = start
	for i := 0; ctx.Err() == nil; i++ {
		base := f.servers[i%len(f.servers)]
		if i > 0 {
			f.reconnects.Add(1)
		}
		f.stream(ctx, base)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (f *follower) stream(ctx context.Context, base string) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/events", nil)
	req.SetBasicAuth(f.user, f.pass)
	req.Header.Set("Accept", "text/event-stream")
	f.mu.Lock()
	req.Header.Set("Last-Event-ID", f.last)
	f.mu.Unlock()
	resp, err := streamClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return
	}
	r := bufio.NewReader(resp.Body)
	id := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case line == "" && id != "":
			f.mu.Lock()
			f.ids = append(f.ids, id)
			f.last = id
			f.mu.Unlock()
			id = ""
		}
	}
}

func (f *follower) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids...)
}

// TestEventsAcrossProcesses: three processes on one PostgreSQL, clients
// causing barks and dog changes on all of them, streams open on every
// process; one process is killed with SIGKILL and PostgreSQL restarted
// mid-run. Every stream, resuming by id, ends up with exactly the events
// its principal may see, once each, in id order; and a bark waited for on
// one process (Prefer: wait) is answered when another finishes it.
func TestEventsAcrossProcesses(t *testing.T) {
	t.Parallel()
	c := storetest.NewCluster(t)
	dsn := c.NewDatabase(t)
	// A webhook receiver on loopback (allowed by --webhook-allow-host).
	hooks := newHookReceiver(t)
	args := func() []string {
		return []string{"--data", t.TempDir(), "--db", dsn, "--workers", "2", "--job-lease", "2s",
			"--webhook-allow-host", hooks.host}
	}
	s1 := startProcess(t, args()...)
	s2 := startProcess(t, args()...)
	s3 := startProcess(t, args()...)
	for _, s := range []*server{s2, s3} {
		s.Password = s1.Password
	}
	servers := []string{s1.URL, s2.URL, s3.URL}
	people := map[string]string{"alice": "alice password 1", "bob": "bob password 1"}
	dogs := map[string][]string{}
	for name, pw := range people {
		if resp, m := call(t, "POST", s1.URL+"/v1/people", "admin", s1.Password, map[string]any{"name": name, "password": pw}); resp.StatusCode != 201 {
			t.Fatalf("create %s: %d %v", name, resp.StatusCode, m)
		}
		for i := range 2 {
			resp, m := call(t, "POST", servers[i]+"/v1/dogs", name, pw, map[string]any{"name": name + "'s dog", "email": "d@example.org"})
			if resp.StatusCode != 201 {
				t.Fatalf("create dog: %d %v", resp.StatusCode, m)
			}
			dogs[name] = append(dogs[name], "/v1/dogs/"+m["id"].(string)+"/")
		}
	}

	// An administrator's webhook subscription of every event.
	resp, sub := call(t, "POST", s2.URL+"/v1/webhooks", "admin", s1.Password, map[string]any{"url": "http://" + hooks.host + "/hook"})
	if resp.StatusCode != 201 {
		t.Fatalf("webhook subscription: %d %v", resp.StatusCode, sub)
	}
	hooks.mu.Lock()
	hooks.secret = sub["secret"].(string)
	hooks.mu.Unlock()

	db, err := store.Open(context.Background(), dsn, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start, err := db.LastEventID(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// Streams: each person on each process, an administrator on s3 (the
	// one killed), each following the list from its own process on.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var followers []*follower
	var fwg sync.WaitGroup
	for i := range servers {
		order := append(append([]string(nil), servers[i:]...), servers[:i]...)
		for name, pw := range people {
			followers = append(followers, &follower{user: name, pass: pw, servers: order})
		}
	}
	followers = append(followers, &follower{user: "admin", pass: s1.Password, servers: []string{s3.URL, s1.URL, s2.URL}})
	for _, f := range followers {
		fwg.Go(func() { f.run(ctx, start.String()) })
	}

	// 24 clients: async barks and dog renames, on every process.
	load, stopLoad := context.WithCancel(context.Background())
	var lwg sync.WaitGroup
	var writes atomic.Int64
	names := []string{"alice", "bob"}
	for w := range 24 {
		lwg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for load.Err() == nil {
				name := names[rng.IntN(2)]
				dog := dogs[name][rng.IntN(2)]
				base := servers[rng.IntN(len(servers))]
				var req *http.Request
				if rng.IntN(3) == 0 {
					req, _ = http.NewRequestWithContext(load, "PATCH", base+dog, strings.NewReader(fmt.Sprintf(`{"name":"n%d"}`, rng.IntN(1000))))
				} else {
					req, _ = http.NewRequestWithContext(load, "POST", base+dog+"barks", strings.NewReader(`{"effect":"record"}`))
					req.Header.Set("Prefer", "respond-async")
				}
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth(name, people[name])
				resp, err := insecure.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode < 300 {
					writes.Add(1)
				}
				time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	s3.kill9(t)
	time.Sleep(time.Second)
	c.Stop(t)
	time.Sleep(500 * time.Millisecond)
	c.Start(t)
	time.Sleep(1500 * time.Millisecond)
	stopLoad()
	lwg.Wait()
	if writes.Load() < 50 {
		t.Fatalf("only %d writes were answered", writes.Load())
	}

	// Every bark task finishes (those of the killed process once their
	// lease expires).
	eventually(t, "every bark task to finish", func() bool {
		n, err := db.PendingTasks(context.Background())
		var running int
		if err == nil {
			err = db.Read().QueryRow(`SELECT COUNT(*) FROM tasks WHERE status = 'running'`).Scan(&running)
		}
		return err == nil && n == 0 && running == 0
	})

	// The truth: what the store holds for each principal after start.
	truth := func(owner *string) []string {
		var ids []string
		after := start
		for {
			p, err := db.ReadEvents(context.Background(), yard.EventFilter{After: after, Owner: owner, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Events {
				ids = append(ids, e.ID.String())
			}
			if len(p.Events) == 0 {
				return ids
			}
			after = p.Next
		}
	}
	// Nothing writes any more, but an event becomes readable only once
	// every older transaction has ended (the webhook work goes on): read
	// until two reads a second apart agree.
	for prev := -1; ; time.Sleep(time.Second) {
		n := len(truth(nil))
		if n == prev {
			break
		}
		prev = n
	}
	want := map[string][]string{"admin": truth(nil)}
	for name := range people {
		u, err := db.FindUserByName(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = truth(&u.ID)
	}
	if len(want["alice"]) == 0 || len(want["bob"]) == 0 || len(want["admin"]) != len(want["alice"])+len(want["bob"]) {
		t.Fatalf("events in the store: alice %d, bob %d, all %d", len(want["alice"]), len(want["bob"]), len(want["admin"]))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, f := range followers {
		w := want[f.user]
		for time.Now().Before(deadline) && len(f.received()) < len(w) {
			time.Sleep(50 * time.Millisecond)
		}
		got := f.received()
		if strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("%s's stream via %s: %d events, want %d (in the store's order, once each)", f.user, f.servers[0], len(got), len(w))
		}
	}
	t.Logf("%d writes answered; events: alice %d, bob %d; reconnects of the admin stream that started on the killed process: %d",
		writes.Load(), len(want["alice"]), len(want["bob"]), followers[len(followers)-1].reconnects.Load())

	// The webhook received every event at least once, each correctly
	// signed; a repeat only ever with the same webhook-id (the event id).
	missing := func() int {
		got, n := hooks.received(), 0
		for _, id := range want["admin"] {
			if got[id] == 0 {
				n++
			}
		}
		return n
	}
	// Deliveries that failed while PostgreSQL was down are retried after
	// 5 and 30 s (docs/events.md, "Retries").
	for deadline := time.Now().Add(3 * time.Minute); missing() > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the webhook has not received %d of %d events", missing(), len(want["admin"]))
		}
	}
	repeats := 0
	for _, n := range hooks.received() {
		repeats += n - 1
	}
	if bad := hooks.failures(); len(bad) > 0 {
		t.Fatalf("webhook deliveries that did not verify: %v", bad)
	}
	t.Logf("webhook: %d events received, %d repeated deliveries", len(hooks.received()), repeats)
	stop()
	fwg.Wait()

	// Prefer: wait on one process for barks that any process runs.
	dog := dogs["alice"][0]
	var slowest time.Duration
	for i := range 6 {
		post, wait := servers[i%2], servers[(i+1)%2]
		req, _ := http.NewRequest("POST", post+dog+"barks", strings.NewReader(`{"effect":"record"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Prefer", "respond-async")
		req.SetBasicAuth("alice", people["alice"])
		resp, err := insecure.Do(req)
		if err != nil || resp.StatusCode != 202 {
			t.Fatalf("async bark: %v %v", resp, err)
		}
		resp.Body.Close()
		loc := strings.TrimPrefix(resp.Header.Get("Location"), "https://localhost:8443")
		loc = loc[strings.Index(loc, "/v1/"):]
		req, _ = http.NewRequest("GET", wait+loc, nil)
		req.Header.Set("Prefer", "wait=20")
		req.SetBasicAuth("alice", people["alice"])
		sent := time.Now()
		resp, err = insecure.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b map[string]any
		_ = decodeBody(resp, &b)
		resp.Body.Close()
		answered := time.Now()
		if resp.Header.Get("Preference-Applied") != "wait=20" || b["status"] != "succeeded" {
			t.Fatalf("wait via %s: %d %q %v", wait, resp.StatusCode, resp.Header.Get("Preference-Applied"), b)
		}
		finished, _ := time.Parse(time.RFC3339, fmt.Sprint(b["finishedAt"]))
		if lag := answered.Sub(finished); lag > slowest {
			slowest = lag
		}
		if answered.Sub(sent) > 15*time.Second {
			t.Fatalf("a wait took %v", answered.Sub(sent))
		}
	}
	t.Logf("Prefer: wait answered at most %v after the bark finished (across processes)", slowest)
}

// hookReceiver is a webhook receiver: it verifies each delivery's
// Standard Webhooks signature with the subscription's secret and counts
// deliveries by webhook-id.
type hookReceiver struct {
	host   string
	secret string

	mu     sync.Mutex
	seen   map[string]int
	failed []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
		h.mu.Lock()
		defer h.mu.Unlock()
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h.secret, "whsec_"))
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &ev)
		if err != nil || sig != want || ev.ID != id {
			h.failed = append(h.failed, fmt.Sprintf("id %s (body id %s): signature %q", id, ev.ID, sig))
			w.WriteHeader(400)
			return
		}
		h.seen[id]++
		w.WriteHeader(204)
	}))
	t.Cleanup(srv.Close)
	h.host = strings.TrimPrefix(srv.URL, "http://")
	return h
}

func (h *hookReceiver) received() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.seen))
	for k, v := range h.seen {
		out[k] = v
	}
	return out
}

func (h *hookReceiver) failures() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.failed...)
}
