package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

const pw = "correct horse battery"

// The event-stream grammar of the WHATWG HTML standard (§9.2.6), one rule
// per case.
func TestSSEParse(t *testing.T) {
	type ev struct{ id, event, data string }
	for _, tc := range []struct {
		name, in string
		want     []ev
		retry    time.Duration
		lastID   string // the last event ID at the end
	}{
		{"LF", "id: 1\nevent: a\ndata: x\n\n", []ev{{"1", "a", "x"}}, 0, "1"},
		{"CRLF", "id: 1\r\nevent: a\r\ndata: x\r\n\r\n", []ev{{"1", "a", "x"}}, 0, "1"},
		{"CR", "id: 1\revent: a\rdata: x\r\r", []ev{{"1", "a", "x"}}, 0, "1"},
		{"mixed ends", "data: a\r\ndata: b\rdata: c\n\r\n", []ev{{"", "message", "a\nb\nc"}}, 0, ""},
		{"one space only is dropped", "data:  two\ndata:none\n\n", []ev{{"", "message", " two\nnone"}}, 0, ""},
		{"field without colon", "data\ndata\n\n", []ev{{"", "message", "\n"}}, 0, ""},
		{"comments", ": heartbeat\n:\ndata: x\n: more\n\n", []ev{{"", "message", "x"}}, 0, ""},
		{"id with NUL ignored", "id: 7\ndata: a\n\nid: 8\x009\ndata: b\n\n", []ev{{"7", "message", "a"}, {"7", "message", "b"}}, 0, "7"},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []ev{{"7", "message", "a"}, {"7", "message", "b"}}, 0, "7"},
		{"empty id resets", "id: 7\ndata: a\n\nid\ndata: b\n\n", []ev{{"7", "message", "a"}, {"", "message", "b"}}, 0, ""},
		{"id without data still counts", "id: 7\ndata: a\n\nid: 9\n\n", []ev{{"7", "message", "a"}}, 0, "9"},
		{"event type resets", "event: a\ndata: x\n\ndata: y\n\n", []ev{{"", "a", "x"}, {"", "message", "y"}}, 0, ""},
		{"empty data dispatches", "data:\n\n", []ev{{"", "message", ""}}, 0, ""},
		{"no data, no event", "event: a\n\n", nil, 0, ""},
		{"retry", "retry: 1500\n\n", nil, 1500 * time.Millisecond, ""},
		{"retry not digits", "retry: 15s\nretry: -1\nretry:\n\n", nil, 0, ""},
		{"unknown fields", "foo: bar\nData: x\n\n", nil, 0, ""},
		{"byte order mark", "\uFEFFdata: x\n\n", []ev{{"", "message", "x"}}, 0, ""},
		{"incomplete event dropped", "data: x\n\ndata: y\n", []ev{{"", "message", "x"}}, 0, ""},
		{"incomplete line dropped", "data: x\n\ndata: y", []ev{{"", "message", "x"}}, 0, ""},
		{"colon in value", "data: a: b\n\n", []ev{{"", "message", "a: b"}}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var retry time.Duration
			// One byte at a time: a line end split across reads still
			// counts once.
			p := newSSEReader(&oneByte{r: strings.NewReader(tc.in)}, "", func() {}, func(d time.Duration) { retry = d })
			var got []ev
			for {
				b, err := p.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev{b.id, b.event, string(b.data)})
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || retry != tc.retry || p.lastID != tc.lastID {
				t.Errorf("%q: got %q retry %v last id %q, want %q retry %v last id %q", tc.in, got, retry, p.lastID, tc.want, tc.retry, tc.lastID)
			}
		})
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

// A scripted server: the stream follows retry:, reconnects after a cut-off
// comment and after the end of a response with Last-Event-ID, waits out a
// 503 and a 429, and drops an event the server sends again.
func TestEventsResumesAgainstAScript(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		call := n
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		mu.Unlock()
		if r.Header.Get("Accept") != "text/event-stream" || r.URL.RawQuery != "subject=%2Fv1%2Fdogs%2Fx%2F&types=bark.%2A%2Cdog.updated" {
			t.Errorf("request %d: Accept %q, query %q", call, r.Header.Get("Accept"), r.URL.RawQuery)
		}
		ev := func(id, typ string) string {
			return fmt.Sprintf("id: %s\nevent: %s\ndata: {\"id\":\"%s\",\"type\":\"%s\",\"time\":\"2026-11-25T12:27:51.009Z\",\"data\":{\"n\":\"%s\"}}\n\n", id, typ, id, typ, id)
		}
		switch call {
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case 3:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch call {
		case 1:
			fmt.Fprint(w, "retry: 20\n\n"+ev("01", "bark.created")+ev("02", "bark.succeeded")+": cut off: fell behind\n\n"+ev("03", "never"))
		case 4:
			// Again 02 (a repeat), then 03, then the response ends.
			fmt.Fprint(w, ": hello\r\n\r\n"+ev("02", "bark.succeeded")+strings.ReplaceAll(ev("03", "dog.updated"), "\n", "\r"))
		case 5:
			fmt.Fprint(w, ev("04", "bark.created"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(srv.URL, nil, nil).Events(ctx, EventsOptions{Types: []string{"bark.*", "dog.updated"}, Subject: "/v1/dogs/x/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for range 4 {
		e, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Data) != `{"n":"`+e.ID+`"}` || e.Time.IsZero() {
			t.Errorf("event %s: data %s time %v", e.ID, e.Data, e.Time)
		}
		got = append(got, e.ID+" "+e.Type)
	}
	if want := "01 bark.created,02 bark.succeeded,03 dog.updated,04 bark.created"; strings.Join(got, ",") != want {
		t.Errorf("events: got %q, want %q", strings.Join(got, ","), want)
	}
	mu.Lock()
	if want := ",02,02,02,03"; strings.Join(lastIDs, ",") != want {
		t.Errorf("Last-Event-ID of each request: got %q, want %q", strings.Join(lastIDs, ","), want)
	}
	mu.Unlock()
	if s.LastID() != "04" || s.Reconnects() != 2 {
		t.Errorf("LastID %q, reconnects %d; want 04 and 2", s.LastID(), s.Reconnects())
	}
	s.Close()
	if _, err := s.Next(); !errors.Is(err, ErrStreamClosed) {
		t.Errorf("Next after Close: %v, want ErrStreamClosed", err)
	}
}

// eventsEnv is the API over SQLite with a running events hub, bark workers
// drained by the test, every authentication scheme (on a settable clock),
// and a network the test can cut.
type eventsEnv struct {
	*apitest.Env
	svc   *jobs.Service
	clock *storetest.Clock
	net   *testNet
}

func startEventsEnv(t *testing.T) *eventsEnv {
	t.Helper()
	db := storetest.Open(t, store.SQLite)
	hub := events.New(db, events.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	data := t.TempDir()
	svc := jobs.New(jobs.Config{DB: db, Effects: &jobs.Effects{Mailer: &notify.MailOutbox{Dir: filepath.Join(data, "outbox")},
		Users: db, DataDir: data, From: "yard@yard.test", Domain: "yard.test"}})
	clock := storetest.NewClock(time.Now())
	env := apitest.Start(t, db,
		apitest.WithAuthKit(t, db, nil, func(c *auth.Config) { c.Now = clock.Now; c.Limiter = auth.NewLoginLimiter(0, nil) }),
		func(d *httpapi.Deps) { d.Barks = svc; d.Events = hub })
	// Streams end before the server closes (cleanups run last first).
	t.Cleanup(hub.Close)
	pool := x509.NewCertPool()
	pool.AddCert(env.Server.Certificate())
	tn := &testNet{base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	tn.base.DialContext = tn.dial
	t.Cleanup(tn.base.CloseIdleConnections)
	return &eventsEnv{Env: env, svc: svc, clock: clock, net: tn}
}

// client is a client of the test server over the test's network.
func (e *eventsEnv) client(a Authenticator) *Client {
	return New(e.URL, &http.Client{Transport: e.net}, a)
}

// dog creates a person and a dog of theirs and returns its path.
func (e *eventsEnv) dog(t *testing.T, user string) string {
	t.Helper()
	e.CreateUser(user, pw)
	return e.anotherDog(t, user)
}

// anotherDog creates a dog of user and returns its path.
func (e *eventsEnv) anotherDog(t *testing.T, user string) string {
	t.Helper()
	resp := e.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: user, Password: pw,
		Body: map[string]any{"name": "Rex", "email": "rex@example.org"}})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %s", resp.StatusCode, resp.Body)
	}
	return "/v1/dogs/" + resp.Map(t)["id"].(string) + "/"
}

// bark makes the dog bark at once (a record: bark.created, bark.succeeded,
// dog.updated) and returns the bark's URL.
func (e *eventsEnv) bark(t *testing.T, user, dogURI string, headers map[string]string) string {
	t.Helper()
	resp := e.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: user, Password: pw, Headers: headers})
	if resp.StatusCode != 201 && resp.StatusCode != 202 {
		t.Fatalf("bark: %d %s", resp.StatusCode, resp.Body)
	}
	return resp.Header.Get("Location")
}

// page returns the ids and types of user's events after an id, read as
// pages of JSON: what a stream must have delivered.
func (e *eventsEnv) page(t *testing.T, user, after string) (ids, types []string) {
	t.Helper()
	resp := e.Do(apitest.Request{Path: "/v1/events?max=1000&after=" + after, User: user, Password: pw, Headers: map[string]string{"Accept": "application/json"}})
	var p struct {
		Items []Event `json:"items"`
		Next  string  `json:"next"`
	}
	resp.JSON(t, &p)
	for _, ev := range p.Items {
		ids, types = append(ids, ev.ID), append(types, ev.Type)
	}
	return ids, types
}

// lastEventID returns the id of user's newest event.
func (e *eventsEnv) lastEventID(t *testing.T, user string) string {
	t.Helper()
	ids, _ := e.page(t, user, "")
	return ids[len(ids)-1]
}

// testNet is the client's network: it can drop every connection at once
// (a network that fails mid-stream), hold new event streams back, and
// records each stream request's Last-Event-ID.
type testNet struct {
	base *http.Transport

	mu      sync.Mutex
	conns   []net.Conn
	hold    chan struct{}
	lastIDs []string
}

func (n *testNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		n.mu.Lock()
		n.conns = append(n.conns, c)
		n.mu.Unlock()
	}
	return c, err
}

func (n *testNet) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept") == "text/event-stream" {
		n.mu.Lock()
		n.lastIDs = append(n.lastIDs, req.Header.Get("Last-Event-ID"))
		hold := n.hold
		n.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
	}
	return n.base.RoundTrip(req)
}

// drop closes every connection.
func (n *testNet) drop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		c.Close()
	}
	n.conns = nil
}

// holdStreams makes new stream requests wait until the returned function
// is called.
func (n *testNet) holdStreams() (release func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := make(chan struct{})
	n.hold = ch
	return func() {
		n.mu.Lock()
		n.hold = nil
		n.mu.Unlock()
		close(ch)
	}
}

func (n *testNet) streamLastIDs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lastIDs...)
}

// open opens a stream that ends with the test (or after 30 s: a Next
// waiting for an event that never comes fails then).
func open(t *testing.T, c *Client, opts EventsOptions) *EventStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := c.Events(ctx, opts)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// next reads n events.
func next(t *testing.T, s *EventStream, n int) []*Event {
	t.Helper()
	var out []*Event
	for range n {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %d of %d: %v", len(out)+1, n, err)
		}
		out = append(out, ev)
	}
	return out
}

func idsOf(evs []*Event) (ids, types []string) {
	for _, ev := range evs {
		ids, types = append(ids, ev.ID), append(types, ev.Type)
	}
	return ids, types
}

// A stream delivers a person's events in order; when the network drops
// it mid-stream, it resumes by Last-Event-ID with nothing missed and
// nothing twice, including the events written while it was away.
func TestEventsResumeAfterADroppedConnection(t *testing.T) {
	e := startEventsEnv(t)
	dog := e.dog(t, "alice")
	start := e.lastEventID(t, "alice")
	s := open(t, e.client(&Basic{Username: "alice", Password: pw}), EventsOptions{})

	e.bark(t, "alice", dog, nil)
	e.bark(t, "alice", dog, nil)
	got := next(t, s, 2)
	e.net.drop()
	e.bark(t, "alice", dog, nil)
	e.bark(t, "alice", dog, nil)
	got = append(got, next(t, s, 10)...)

	ids, types := idsOf(got)
	wantIDs, _ := e.page(t, "alice", start)
	if strings.Join(ids, " ") != strings.Join(wantIDs, " ") {
		t.Errorf("ids: got %v, want %v", ids, wantIDs)
	}
	if got, want := strings.Join(types, " "), strings.Repeat("bark.created bark.succeeded dog.updated ", 4); got+" " != want {
		t.Errorf("types: got %q, want %q", got, want)
	}
	if !strings.HasPrefix(got[0].Subject, e.URL+dog+"barks/") || got[0].Source != e.URL {
		t.Errorf("first event: subject %q source %q", got[0].Subject, got[0].Source)
	}
	// The stream connected again, asking for what followed an event it
	// had delivered.
	lastIDs := e.net.streamLastIDs()
	if s.Reconnects() != 1 || len(lastIDs) != 2 || lastIDs[0] != "" || !strings.Contains(strings.Join(ids[1:6], " "), lastIDs[1]) || lastIDs[1] == "" {
		t.Errorf("reconnects %d with Last-Event-ID %q, want one after an event among the first six", s.Reconnects(), lastIDs)
	}
	if s.LastID() != ids[len(ids)-1] {
		t.Errorf("LastID %q, want %q", s.LastID(), ids[len(ids)-1])
	}
}

// types= and subject= reach the server: a stream of one dog's bark.*
// events carries none of another dog's.
func TestEventsFilters(t *testing.T) {
	e := startEventsEnv(t)
	rex := e.dog(t, "alice")
	other := e.dog(t, "bob")
	fido := e.anotherDog(t, "alice")
	c := e.client(&Basic{Username: "alice", Password: pw})
	succeeded := open(t, c, EventsOptions{Types: []string{"bark.succeeded"}})
	ofFido := open(t, c, EventsOptions{Types: []string{"bark.*"}, Subject: e.URL + fido})

	b1 := e.bark(t, "alice", rex, nil)
	e.bark(t, "bob", other, nil)
	b2 := e.bark(t, "alice", fido, nil)
	got := next(t, succeeded, 2)
	if got[0].Type != "bark.succeeded" || got[0].Subject != b1 || got[1].Type != "bark.succeeded" || got[1].Subject != b2 {
		t.Errorf("types=bark.succeeded: %s %s, %s %s; want %s and %s", got[0].Type, got[0].Subject, got[1].Type, got[1].Subject, b1, b2)
	}
	var bark struct{ Status string }
	if err := json.Unmarshal(got[0].Data, &bark); err != nil || bark.Status != "succeeded" {
		t.Errorf("data %s: %v", got[0].Data, err)
	}
	got = next(t, ofFido, 2)
	if _, types := idsOf(got); strings.Join(types, " ") != "bark.created bark.succeeded" || got[0].Subject != b2 {
		t.Errorf("Fido's barks: %v of %s, want bark.created bark.succeeded of %s", types, got[0].Subject, b2)
	}
	// A type the server does not know ends the first connection: 400.
	if _, err := c.Events(context.Background(), EventsOptions{Types: []string{"cat.*"}}); StatusOf(err) != 400 {
		t.Errorf("types=cat.*: %v, want a 400 problem", err)
	}
}

// An id older than the retention is a *GoneError naming the oldest id
// kept: at once, and when a stream comes back after its events were
// pruned.
func TestEventsGone(t *testing.T) {
	e := startEventsEnv(t)
	dog := e.dog(t, "alice")
	c := e.client(&Basic{Username: "alice", Password: pw})
	s := open(t, c, EventsOptions{})
	e.bark(t, "alice", dog, nil)
	first := next(t, s, 3)

	// The network fails; while the stream is away, a bark, then the
	// retention removes the events it has not seen but the last.
	release := e.net.holdStreams()
	e.net.drop()
	e.bark(t, "alice", dog, nil)
	if _, err := e.DB.PruneEvents(context.Background(), time.Now().Add(time.Hour), 6); err != nil {
		t.Fatal(err)
	}
	ids, _ := e.page(t, "alice", "")
	release()
	_, err := s.Next()
	var gone *GoneError
	if !errors.As(err, &gone) || StatusOf(err) != 410 || len(ids) != 1 || gone.Oldest != ids[0] {
		t.Fatalf("resume after the pruned %s: %v (oldest %+v), want 410 with oldest %v", first[2].ID, err, gone, ids)
	}
	if _, err2 := s.Next(); err2 != err {
		t.Errorf("Next after the end: %v, want %v again", err2, err)
	}

	// Opening with a pruned id: the same, from Events.
	_, err = c.Events(context.Background(), EventsOptions{After: first[0].ID})
	if !errors.As(err, &gone) || gone.Oldest != ids[0] || gone.Problem.Slug() != "gone" {
		t.Fatalf("Events after a pruned id: %v, want a *GoneError with oldest %s", err, ids[0])
	}
}

// Each connection applies the Authenticator, which renews what expired
// while the stream was open: a token pair refreshes, a session signs in
// again, Digest answers the stale nonce.
func TestEventsRenewCredentialsOnReconnect(t *testing.T) {
	e := startEventsEnv(t)
	for _, tc := range []struct {
		user string
		auth func(c *Client) Authenticator
		// state is what a renewal changes.
		state func(a Authenticator) string
	}{
		{"tina", func(*Client) Authenticator { return &TokenPair{Username: "tina", Password: pw} },
			func(a Authenticator) string { return a.(*TokenPair).Tokens().AccessToken }},
		{"sam", func(c *Client) Authenticator {
			s, err := NewSession(context.Background(), c, "sam", pw)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, func(a Authenticator) string { return a.(*Session).Key() }},
		{"dora", func(*Client) Authenticator { return &Digest{Username: "dora", Password: pw} },
			func(a Authenticator) string {
				d := a.(*Digest)
				d.mu.Lock()
				defer d.mu.Unlock()
				return d.challenge["nonce"]
			}},
	} {
		t.Run(tc.user, func(t *testing.T) {
			dog := e.dog(t, tc.user)
			c := e.client(nil)
			c.Auth = tc.auth(c)
			s := open(t, c, EventsOptions{})
			before := tc.state(c.Auth)
			e.bark(t, tc.user, dog, nil)
			got := next(t, s, 3)
			// Past the access token's 30 minutes, the session's idle
			// time and the Digest nonce's life.
			e.clock.Advance(31 * time.Minute)
			e.net.drop()
			e.bark(t, tc.user, dog, nil)
			got = append(got, next(t, s, 3)...)
			ids, _ := idsOf(got)
			want, _ := e.page(t, tc.user, got[0].ID)
			if strings.Join(ids[1:], " ") != strings.Join(want, " ") || s.Reconnects() != 1 {
				t.Errorf("events %v, want %v after the first; reconnects %d", ids, want, s.Reconnects())
			}
			if after := tc.state(c.Auth); after == before || before == "" {
				t.Errorf("the credentials were not renewed: %q then %q", before, after)
			}
		})
	}
}

// WaitBark holds the GET until a worker finishes the bark, and returns
// then; a 303 (an email-count bark) is a finished bark; time running out
// returns the bark as it is, with an error.
func TestWaitBark(t *testing.T) {
	e := startEventsEnv(t)
	dog := e.dog(t, "alice")
	c := e.client(&Basic{Username: "alice", Password: pw})
	ctx := context.Background()
	async := map[string]string{"Prefer": "respond-async"}

	// Time runs out: the pending bark, and an error saying so.
	loc := e.bark(t, "alice", dog, async)
	b, err := c.WaitBark(ctx, loc, 1500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || b == nil || b.Status != "pending" || !strings.HasPrefix(b.Response.Header.Get("Preference-Applied"), "wait=") {
		t.Fatalf("WaitBark of a pending bark for 1.5 s: %+v, %v; want it pending with a deadline error", b, err)
	}

	// A worker runs it while WaitBark waits: the answer comes then, not
	// when the wait of 50 s ends.
	type result struct {
		b    *Bark
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		b, err := c.WaitBark(ctx, strings.TrimPrefix(loc, e.URL), 50*time.Second)
		done <- result{b, err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)
	if ran, err := e.svc.RunOne(ctx); !ran || err != nil {
		t.Fatalf("run the bark: %v %v", ran, err)
	}
	r := <-done
	if r.err != nil || r.b.Status != "succeeded" || r.b.FinishedAt.IsZero() || r.b.Timestamp.IsZero() || r.b.Response.Header.Get("Preference-Applied") != "wait=49" {
		t.Fatalf("WaitBark: %+v, %v", r.b, r.err)
	}
	if r.took > 25*time.Second {
		t.Errorf("WaitBark took %v for a bark that finished after 0.3 s", r.took)
	}

	// An email-count bark answers 303 to the dog once it succeeded.
	loc = e.Do(apitest.Request{Method: "POST", Path: dog + "barks", User: "alice", Password: pw, Headers: async,
		Body: map[string]string{"effect": "email-count"}}).Header.Get("Location")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = e.svc.RunOne(ctx)
	}()
	b, err = c.WaitBark(ctx, loc, 50*time.Second)
	if err != nil || b.Status != "succeeded" || b.DogURL != e.URL+dog || b.Response.StatusCode != 303 || b.Effect != "email-count" {
		t.Fatalf("email-count bark: %+v, %v; want succeeded with 303 to %s", b, err, e.URL+dog)
	}

	// Refusals and addresses of other servers.
	if _, err := c.WaitBark(ctx, e.URL+dog+"barks/nope", time.Second); StatusOf(err) != 404 {
		t.Errorf("unknown bark: %v, want 404", err)
	}
	if _, err := e.client(&Basic{Username: "alice", Password: "wrong"}).WaitBark(ctx, loc, time.Second); StatusOf(err) != 401 {
		t.Errorf("wrong password: %v, want 401", err)
	}
	for _, u := range []string{"https://elsewhere.example" + dog, "//elsewhere.example/x", e.URL + "@evil.example/"} {
		if _, err := c.WaitBark(ctx, u, time.Second); err == nil || StatusOf(err) != 0 {
			t.Errorf("WaitBark(%q): %v, want a refusal without a request", u, err)
		}
	}
}

// Retry-After absent or unreadable waits nothing; a retry: of 0 backs off
// by nothing.
func TestRetryAfterAndBackoffZero(t *testing.T) {
	now := time.Now()
	for _, v := range []string{"", " ", "soon"} {
		if d := retryAfter(http.Header{"Retry-After": {v}}, now); d != 0 {
			t.Errorf("retryAfter(%q) = %v, want 0", v, d)
		}
	}
	if d := retryAfter(http.Header{}, now); d != 0 {
		t.Errorf("retryAfter without the header = %v, want 0", d)
	}
	s := &EventStream{}
	for n := range 3 {
		if d := s.backoff(n); d != 0 {
			t.Errorf("backoff(%d) with retry 0 = %v, want 0", n, d)
		}
	}
}
