package httpapi_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// startEvents is a bark environment whose server follows the store's events
// through a running hub.
func startEvents(t *testing.T, db *store.DB, cfg events.Config) (*barkEnv, *events.Hub) {
	t.Helper()
	hub := events.New(db, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return startBarks(t, db, func(d *httpapi.Deps) { d.Events = hub }), hub
}

type eventJSON struct {
	SpecVersion     string         `json:"specversion"`
	ID              string         `json:"id"`
	Source          string         `json:"source"`
	Type            string         `json:"type"`
	Time            string         `json:"time"`
	Subject         string         `json:"subject"`
	DataContentType string         `json:"datacontenttype"`
	Data            map[string]any `json:"data"`
}

type eventPageJSON struct {
	Items []eventJSON `json:"items"`
	Next  string      `json:"next"`
}

func (e *barkEnv) events(t *testing.T, user, query string) eventPageJSON {
	t.Helper()
	resp := e.Do(apitest.Request{Path: "/v1/events" + query, User: user, Password: pw, Headers: map[string]string{"Accept": "application/json"}})
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events%s as %s: %d %s", query, user, resp.StatusCode, resp.Body)
	}
	var p eventPageJSON
	resp.JSON(t, &p)
	return p
}

func typesOf(evs []eventJSON) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

// TestEventsPage is not parallel: on PostgreSQL a page that read up to
// the end has the horizon for its next, the oldest transaction still
// running in the whole cluster, which the writes of the package's other
// tests (other databases of the same cluster) move on; the test checks
// that an empty page keeps the place.
func TestEventsPage(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env, _ := startEvents(t, db, events.Config{})
		env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)
		env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
		dogID, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		resp := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw})
		if resp.StatusCode != 201 {
			t.Fatalf("bark: %d %s", resp.StatusCode, resp.Body)
		}

		p := env.events(t, "alice", "")
		if got, want := typesOf(p.Items), "dog.created bark.created bark.succeeded dog.updated"; got != want {
			t.Fatalf("alice's events: got %q, want %q", got, want)
		}
		last := p.Items[3]
		if last.SpecVersion != "1.0" || last.Source != env.URL || last.Subject != env.URL+dogURI ||
			last.DataContentType != "application/json" || last.Data["barkCount"] != 1.0 || last.Data["id"] != dogID || p.Next < last.ID {
			t.Fatalf("dog.updated: %+v (next %s)", last, p.Next)
		}
		if _, err := time.Parse(time.RFC3339, last.Time); err != nil {
			t.Fatalf("time %q: %v", last.Time, err)
		}
		if b := p.Items[2].Data; b["status"] != "succeeded" || b["timestamp"] == nil {
			t.Fatalf("bark.succeeded data: %v", b)
		}
		// Nobody else's: bob sees nothing, an administrator everything.
		// Bob's page still moves his place past what he cannot see, so
		// following next never lands before events pruned since (410).
		pb := env.events(t, "bob", "")
		if len(pb.Items) != 0 {
			t.Fatalf("bob sees %q", typesOf(pb.Items))
		}
		if pb.Next < last.ID {
			t.Fatalf("bob's next %s is before the events he cannot see (the last %s)", pb.Next, last.ID)
		}
		if pn := env.events(t, "bob", "?after="+pb.Next); len(pn.Items) != 0 || pn.Next != pb.Next {
			t.Fatalf("bob following next: %+v", pn)
		}
		if p := env.events(t, "root", ""); typesOf(p.Items) != "dog.created bark.created bark.succeeded dog.updated" {
			t.Fatalf("admin sees %q", typesOf(p.Items))
		}
		// Pages continue from next; an empty page keeps the place.
		p1 := env.events(t, "alice", "?max=3")
		p2 := env.events(t, "alice", "?max=3&after="+p1.Next)
		if len(p1.Items) != 3 || typesOf(p2.Items) != "dog.updated" {
			t.Fatalf("pages: %q then %q", typesOf(p1.Items), typesOf(p2.Items))
		}
		if p3 := env.events(t, "alice", "?after="+p2.Next); len(p3.Items) != 0 || p3.Next != p2.Next {
			t.Fatalf("past the end: %+v", p3)
		}
		// max=0 reads nothing: an empty page that keeps the place.
		if p0 := env.events(t, "alice", "?max=0&after="+p1.Next); len(p0.Items) != 0 || p0.Next != p1.Next {
			t.Fatalf("max=0: %+v, want no items and next %s", p0, p1.Next)
		}
		// Filters.
		if got := typesOf(env.events(t, "alice", "?types=bark.*").Items); got != "bark.created bark.succeeded" {
			t.Fatalf("types=bark.*: %q", got)
		}
		if got := typesOf(env.events(t, "alice", "?types=dog.created,bark.succeeded").Items); got != "dog.created bark.succeeded" {
			t.Fatalf("types list: %q", got)
		}
		if got := typesOf(env.events(t, "alice", "?subject="+env.URL+dogURI+"&types=dog.*").Items); got != "dog.created dog.updated" {
			t.Fatalf("subject: %q", got)
		}
		// A subject by another path of the same resource: the dog without
		// its slash, its v2 path.
		for _, alias := range []string{strings.TrimSuffix(dogURI, "/"), strings.Replace(dogURI, "/v1/", "/v2/", 1)} {
			if got := typesOf(env.events(t, "alice", "?subject="+alias+"&types=dog.*").Items); got != "dog.created dog.updated" {
				t.Fatalf("subject=%s: %q", alias, got)
			}
		}
		// Last-Event-ID wins over after= (an EventSource reconnects with
		// its first URL and the id it reached).
		resp = env.Do(apitest.Request{Path: "/v1/events?after=" + p.Items[0].ID, User: "alice", Password: pw,
			Headers: map[string]string{"Accept": "application/json", "Last-Event-ID": p.Items[2].ID}})
		var resumed eventPageJSON
		resp.JSON(t, &resumed)
		if typesOf(resumed.Items) != "dog.updated" {
			t.Fatalf("after= with Last-Event-ID: %q, want what follows Last-Event-ID", typesOf(resumed.Items))
		}
		// Negotiation: q-values count; nothing acceptable is 406.
		for accept, want := range map[string]string{
			"text/event-stream;q=0.1, application/json": "application/json",
			"application/xml":                "",
			"application/json;q=0":           "",
			"*/*":                            "application/json",
			"text/*, application/json;q=0.5": "HEAD:text/event-stream",
		} {
			method := "GET"
			if strings.HasPrefix(want, "HEAD:") {
				method, want = "HEAD", strings.TrimPrefix(want, "HEAD:")
			}
			resp := env.Do(apitest.Request{Method: method, Path: "/v1/events", User: "alice", Password: pw, Headers: map[string]string{"Accept": accept}})
			if want == "" {
				if resp.StatusCode != 406 {
					t.Fatalf("Accept: %s: %d, want 406", accept, resp.StatusCode)
				}
				continue
			}
			if ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); resp.StatusCode != 200 || ct != want {
				t.Fatalf("Accept: %s: %d %s, want 200 %s", accept, resp.StatusCode, ct, want)
			}
		}
		// Refusals.
		for _, q := range []string{"?after=nope", "?types=cat.*", "?max=-1", "?max=x", "?after=" + strings.Repeat("0", 31) + "G", "?color=red", "?max=1&max=2"} {
			resp := env.Do(apitest.Request{Path: "/v1/events" + q, User: "alice", Password: pw})
			if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("GET /v1/events%s: %d %s", q, resp.StatusCode, resp.Body)
			}
		}
		if resp := env.Do(apitest.Request{Path: "/v1/events"}); resp.StatusCode != 401 {
			t.Fatalf("no credentials: %d", resp.StatusCode)
		}

		// Past the retention: 410 naming the oldest id kept.
		old := p.Items[0].ID
		if _, err := db.PruneEvents(context.Background(), time.Now().Add(time.Hour), 2); err != nil {
			t.Fatal(err)
		}
		resp = env.Do(apitest.Request{Path: "/v1/events?after=" + old, User: "alice", Password: pw})
		var prob struct {
			Status int    `json:"status"`
			Oldest string `json:"oldest"`
		}
		resp.JSON(t, &prob)
		if resp.StatusCode != 410 || prob.Oldest != p.Items[2].ID {
			t.Fatalf("after a pruned id: %d %s (want oldest %s)", resp.StatusCode, resp.Body, p.Items[2].ID)
		}
		// The zero id, named, is a place too: what followed it is gone.
		// Left out, the page starts with the oldest kept.
		if resp := env.Do(apitest.Request{Path: "/v1/events?after=" + strings.Repeat("0", 32), User: "alice", Password: pw}); resp.StatusCode != 410 {
			t.Fatalf("after the zero id, with events pruned: %d %s, want 410", resp.StatusCode, resp.Body)
		}
		if p := env.events(t, "alice", ""); len(p.Items) != 2 {
			t.Fatalf("from the oldest kept: %q", typesOf(p.Items))
		}
		// Nothing kept: oldest is null.
		if _, err := db.PruneEvents(context.Background(), time.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		resp = env.Do(apitest.Request{Path: "/v1/events?after=" + old, User: "alice", Password: pw})
		if resp.StatusCode != 410 || !strings.Contains(string(resp.Body), `"oldest":null`) {
			t.Fatalf("nothing kept: %d %s, want 410 with oldest null", resp.StatusCode, resp.Body)
		}
	})
}

// sseStream is an open event stream read line by line.
type sseStream struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan sseEvent
}

type sseEvent struct {
	ID, Type, Comment string
	Data              eventJSON
	Retry             string
}

func openStream(t *testing.T, env *barkEnv, user string, headers map[string]string) (*sseStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.SetBasicAuth(user, pw)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	// Not env.Client: its validator reads whole bodies.
	pool := x509.NewCertPool()
	pool.AddCert(env.Server.Certificate())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		cancel()
		return nil, resp
	}
	s := &sseStream{resp: resp, cancel: cancel, events: make(chan sseEvent, 100)}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		r := bufio.NewReader(resp.Body)
		var ev sseEvent
		var data string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if data != "" {
					_ = json.Unmarshal([]byte(data), &ev.Data)
				}
				s.events <- ev
				ev, data = sseEvent{}, ""
			case strings.HasPrefix(line, ":"):
				ev.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				data += line[6:]
			case strings.HasPrefix(line, "retry: "):
				ev.Retry = line[7:]
			}
		}
	}()
	return s, resp
}

func (s *sseStream) close() { s.cancel(); s.resp.Body.Close() }

// next returns the next event (not a comment), failing after a while.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.Type == "" {
				continue
			}
			return ev
		case <-timeout:
			t.Fatal("no event within 10 s")
		}
	}
}

// TestEventsStream runs alone: a stream opened without Last-Event-ID starts
// at the hub's position, which on a busy machine may not yet include the
// dog created just before it.
func TestEventsStream(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env, hub := startEvents(t, db, events.Config{PerPerson: 1})
		env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)
		_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})

		// A new stream starts with the next event.
		alice, resp := openStream(t, env, "alice", nil)
		if alice == nil {
			t.Fatalf("open: %d", resp.StatusCode)
		}
		if ct := alice.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		if first := <-alice.events; first.Retry == "" {
			t.Fatalf("first block %+v, want retry:", first)
		}
		bob, _ := openStream(t, env, "bob", nil)
		if r := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw}); r.StatusCode != 201 {
			t.Fatalf("bark: %d", r.StatusCode)
		}
		var got []sseEvent
		for range 3 {
			got = append(got, alice.next(t))
		}
		if got[0].Type != "bark.created" || got[1].Type != "bark.succeeded" || got[2].Type != "dog.updated" ||
			got[2].Data.Type != "dog.updated" || got[2].Data.ID != got[2].ID || got[2].Data.Data["barkCount"] != 1.0 {
			t.Fatalf("alice's stream: %+v", got)
		}
		// Bob's stream carries only bob's dog.
		_, bobDog := env.dog(t, "bob", map[string]any{"name": "Fido", "email": "fido@example.org"})
		if ev := bob.next(t); ev.Type != "dog.created" || ev.Data.Subject != env.URL+bobDog {
			t.Fatalf("bob's first event: %+v", ev)
		}

		// A second stream of one person (past the limit of 1): 429 with
		// Retry-After.
		if s, resp := openStream(t, env, "alice", nil); s != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("second stream: %v", resp.Status)
		}
		// A HEAD answers as the GET would.
		if r := env.Do(apitest.Request{Method: "HEAD", Path: "/v1/events", User: "alice", Password: pw, Headers: map[string]string{"Accept": "text/event-stream"}}); r.StatusCode != 429 {
			t.Fatalf("HEAD past the limit: %d, want 429", r.StatusCode)
		}

		// Leave, miss two barks, resume by id: exactly what was missed.
		alice.close()
		bob.close()
		for hub.Subscribers() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		if r := env.Do(apitest.Request{Method: "HEAD", Path: "/v1/events", User: "alice", Password: pw, Headers: map[string]string{"Accept": "text/event-stream"}}); r.StatusCode != 200 {
			t.Fatalf("HEAD with room: %d, want 200", r.StatusCode)
		}
		for range 2 {
			if r := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw, Body: map[string]string{"effect": "email"}}); r.StatusCode != 200 {
				t.Fatalf("bark: %d %s", r.StatusCode, r.Body)
			}
		}
		again, _ := openStream(t, env, "alice", map[string]string{"Last-Event-ID": got[2].ID})
		var resumed []string
		for range 4 {
			resumed = append(resumed, again.next(t).Type)
		}
		if strings.Join(resumed, " ") != "bark.created bark.succeeded bark.created bark.succeeded" {
			t.Fatalf("resumed: %q", resumed)
		}
		// And then live.
		name := "Rexy"
		if r := env.Do(apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"name": name}}); r.StatusCode != 204 && r.StatusCode != 205 {
			t.Fatalf("patch: %d %s", r.StatusCode, r.Body)
		}
		if ev := again.next(t); ev.Type != "dog.updated" || ev.Data.Data["name"] != name {
			t.Fatalf("live after resume: %+v", ev)
		}
	})
}

func TestEventsSlowReaderIsCutOff(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env, hub := startEvents(t, db, events.Config{Buffer: 4})
	env.CreateUser("alice", pw)
	_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
	// Subscribe without reading, as a stalled client's handler would be.
	sub, err := hub.Subscribe(context.Background(), "x", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw})
	}
	select {
	case <-sub.Cut:
	case <-time.After(10 * time.Second):
		t.Fatal("a subscriber 9 events behind a buffer of 4 was not cut off")
	}
	if len(sub.C) != 4 || hub.Subscribers() != 0 {
		t.Fatalf("buffered %d, subscribers %d", len(sub.C), hub.Subscribers())
	}
}

func TestPreferWait(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env, hub := startEvents(t, db, events.Config{})
		env.CreateUser("alice", pw)
		_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		resp := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw,
			Headers: map[string]string{"Prefer": "respond-async"}})
		if resp.StatusCode != 202 {
			t.Fatalf("async bark: %d %s", resp.StatusCode, resp.Body)
		}
		bark := strings.TrimPrefix(resp.Header.Get("Location"), env.URL)

		// wait=0 answers at once, and says so.
		r := env.Do(apitest.Request{Path: bark, User: "alice", Password: pw, Headers: map[string]string{"Prefer": "wait=0"}})
		if r.StatusCode != 200 || r.Header.Get("Preference-Applied") != "wait=0" || r.Map(t)["status"] != "pending" {
			t.Fatalf("wait=0: %d %q %s", r.StatusCode, r.Header.Get("Preference-Applied"), r.Body)
		}

		var wg sync.WaitGroup
		var waited *apitest.Response
		var took time.Duration
		wg.Go(func() {
			start := time.Now()
			waited = env.Do(apitest.Request{Path: bark, User: "alice", Password: pw, Headers: map[string]string{"Prefer": "wait=20"}})
			took = time.Since(start)
		})
		// The wait is under way once it follows the hub.
		for deadline := time.Now().Add(10 * time.Second); hub.Subscribers() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the GET with Prefer: wait=20 did not subscribe to the hub")
			}
		}
		if n := env.drain(t); n != 1 {
			t.Fatalf("ran %d tasks", n)
		}
		wg.Wait()
		if waited.StatusCode != 201 && waited.StatusCode != 200 || waited.Header.Get("Preference-Applied") != "wait=20" {
			t.Fatalf("waited: %d %q %s", waited.StatusCode, waited.Header.Get("Preference-Applied"), waited.Body)
		}
		if waited.Map(t)["status"] != "succeeded" || took > 15*time.Second {
			t.Fatalf("waited %v for %s", took, waited.Body)
		}

		// A wait on a finished bark answers at once; wait above 60 is cut.
		r = env.Do(apitest.Request{Path: bark, User: "alice", Password: pw, Headers: map[string]string{"Prefer": "wait=600"}})
		if r.Header.Get("Preference-Applied") != "wait=60" {
			t.Fatalf("wait=600: %q", r.Header.Get("Preference-Applied"))
		}
	})
}

// TestStreamOutlivesReadTimeout: yard serve's server has a read time-out
// (for reading requests); a stream and a wait outlive it.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env, _ := startEvents(t, db, events.Config{})
	env.CreateUser("alice", pw)
	_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
	srv := httptest.NewUnstartedServer(env.API.Handler())
	srv.Config.ReadTimeout = 500 * time.Millisecond
	srv.EnableHTTP2 = false // HTTP/1.1, where the deadline is the connection's
	srv.StartTLS()
	defer srv.Close()
	short := *env.Env
	short.URL, short.Server = srv.URL, srv
	s, resp := openStream(t, &barkEnv{Env: &short}, "alice", nil)
	if s == nil {
		t.Fatalf("open: %d", resp.StatusCode)
	}
	defer s.close() // before srv.Close, which waits for open requests
	time.Sleep(1500 * time.Millisecond)
	if r := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw}); r.StatusCode != 201 {
		t.Fatalf("bark: %d", r.StatusCode)
	}
	if ev := s.next(t); ev.Type != "bark.created" {
		t.Fatalf("after the read time-out: %+v", ev)
	}
}

// TestStreamOverHTTP1: an HTTP/1.1 stream leaves net/http once its header
// is out (docs/events.md, "Streams"). Its body is still a well-formed
// chunked body; a client that leaves frees its place at once, not at the
// next heartbeat; the hub's Close ends it with the cut-off comment and the
// last chunk, and WaitStreams returns once it has.
func TestStreamOverHTTP1(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env, hub := startEvents(t, db, events.Config{PerPerson: 1})
	env.CreateUser("alice", pw)
	_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
	srv := httptest.NewUnstartedServer(env.API.Handler())
	srv.EnableHTTP2 = false
	srv.StartTLS()
	defer srv.Close()

	open := func() (net.Conn, *bufio.Reader, *http.Response) {
		t.Helper()
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", srv.URL+"/v1/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.SetBasicAuth("alice", pw)
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		return c, br, resp
	}
	c, _, resp := open()
	if resp.StatusCode != 200 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" ||
		resp.Header.Get("Content-Type") != "text/event-stream" || resp.Close {
		t.Fatalf("the stream's answer: %d %v %q close=%v", resp.StatusCode, resp.TransferEncoding, resp.Header.Get("Content-Type"), resp.Close)
	}
	// The body, read through Go's chunked reader: a malformed chunk is an
	// error.
	lines := bufio.NewReader(resp.Body)
	readUntil := func(prefix string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream for %q: %v", prefix, err)
			}
			if strings.HasPrefix(line, prefix) {
				return
			}
		}
	}
	readUntil("retry: ")
	if r := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw}); r.StatusCode != 201 {
		t.Fatalf("bark: %d", r.StatusCode)
	}
	readUntil("event: bark.created")
	readUntil("event: bark.succeeded")

	// The client leaves: its place (the only one alice has) is free
	// within moments.
	c.Close()
	deadline := time.Now().Add(3 * time.Second)
	var second *http.Response
	for {
		_, _, second = open()
		if second.StatusCode == 200 || time.Now().After(deadline) {
			break
		}
		second.Body.Close()
		time.Sleep(50 * time.Millisecond)
	}
	if second.StatusCode != 200 {
		t.Fatalf("a stream after the only one was closed: %d", second.StatusCode)
	}

	// The hub closes (the server stops): the cut-off comment, then the
	// end of the body.
	hub.Close()
	body, err := io.ReadAll(second.Body)
	if err != nil || !strings.Contains(string(body), ": cut off") {
		t.Fatalf("the end of a stream cut off: %q, %v", body, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := env.API.WaitStreams(ctx); err != nil {
		t.Fatalf("WaitStreams: %v", err)
	}
}
