package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/tracing/tracingtest"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// smsReceiver is a Twilio-style SMS API that keeps the traceparent of
// each request.
type smsReceiver struct {
	mu     sync.Mutex
	parent []string
}

func (s *smsReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.parent = append(s.parent, r.Header.Get("traceparent"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"sid":"SM1"}`))
}

// TestTraces follows requests into the OTLP receiver: the incoming
// traceparent is honoured, spans are named by route and carry no query
// value and no credential, the store and the car search are child spans,
// a synchronous e-mail bark has its SMTP span, and an asynchronous
// fetch-code bark's run joins the trace of the request that created it,
// with its fetch and its text message (whose request carries the
// traceparent) below it.
func TestTraces(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		rcv := tracingtest.Start(t)
		tp := rcv.Provider(t, "api")
		env := startBarks(t, db, func(d *httpapi.Deps) { d.Tracing = tp })
		env.svc.Tracing = tp
		sms := &smsReceiver{}
		smsSrv := httptest.NewServer(sms)
		t.Cleanup(smsSrv.Close)
		const smsToken = "sms-token-never-exported"
		env.svc.Effects.Texter = &notify.SMSAPI{Base: smsSrv.URL, Account: "AC1", Token: smsToken, From: "+15550000000", Client: smsSrv.Client()}
		env.CreateUser("alice", pw)
		repo, _ := localRepo(t, env.repos)
		dogID, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": repo})

		const (
			traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
			parentID = "00f067aa0ba902b7"
			secret   = "query-secret-never-exported"
		)
		incoming := "00-" + traceID + "-" + parentID + "-01"
		resp := env.Do(apitest.Request{Path: dogURI + "?signature=" + secret, User: "alice", Password: pw,
			Headers: map[string]string{"traceparent": incoming}})
		getStatus := resp.StatusCode
		resp = env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw, Body: map[string]any{"effect": "email"}})
		if resp.StatusCode != 200 {
			t.Fatalf("synchronous email bark: %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw,
			Body: map[string]any{"effect": "fetch-code"}, Headers: map[string]string{"Prefer": "respond-async"}})
		if resp.StatusCode != 202 {
			t.Fatalf("fetch-code bark: %d %s", resp.StatusCode, resp.Body)
		}
		if r := env.Do(apitest.Request{Path: "/cars?color=red"}); r.StatusCode != 200 {
			t.Fatalf("car list: %d %s", r.StatusCode, r.Body)
		}
		if n := env.drain(t); n != 1 {
			t.Fatalf("ran %d tasks, want 1", n)
		}
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}

		const wait = 10 * time.Second
		// The incoming traceparent is the parent of the request span.
		get := rcv.WaitFor(t, wait, "GET /v1/dogs/{dog_id}/", tracingtest.Named("GET /v1/dogs/{dog_id}/"))
		if get.TraceID != traceID || get.ParentID != parentID || get.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("request span: trace %s parent %s kind %v; want trace %s parent %s, server", get.TraceID, get.ParentID, get.Kind, traceID, parentID)
		}
		want := map[string]string{"http.request.method": "GET", "http.route": "/v1/dogs/{dog_id}/", "http.response.status_code": strconv.Itoa(getStatus), "url.scheme": "https"}
		for k, v := range want {
			if get.Attrs[k] != v {
				t.Errorf("request span %s: got %q, want %q (all: %v)", k, get.Attrs[k], v, get.Attrs)
			}
		}
		if !strings.Contains(env.Logs(), `"trace_id":"`+traceID+`"`) {
			t.Errorf("the request log does not carry the trace id %s", traceID)
		}
		found := rcv.WaitFor(t, wait, "store.FindDogByID", func(s tracingtest.Span) bool {
			return s.Name == "store.FindDogByID" && s.ParentID == get.SpanID
		})
		if found.TraceID != traceID || found.Attrs["db.system.name"] == "" {
			t.Errorf("store span: trace %s attrs %v", found.TraceID, found.Attrs)
		}

		// The synchronous e-mail: the SMTP conversation below the request.
		post := rcv.WaitFor(t, wait, "the synchronous bark", func(s tracingtest.Span) bool {
			return s.Name == "POST /v1/dogs/{dog_id}/barks" && s.Attrs["http.response.status_code"] == "200"
		})
		smtp := rcv.WaitFor(t, wait, "smtp send", tracingtest.Named("smtp send"))
		if smtp.TraceID != post.TraceID || smtp.ParentID == "" || smtp.Attrs["server.address"] == "" {
			t.Errorf("smtp span: trace %s parent %s attrs %v; want trace %s", smtp.TraceID, smtp.ParentID, smtp.Attrs, post.TraceID)
		}

		// The asynchronous bark: its run is the child of the request.
		accepted := rcv.WaitFor(t, wait, "the asynchronous bark", func(s tracingtest.Span) bool {
			return s.Name == "POST /v1/dogs/{dog_id}/barks" && s.Attrs["http.response.status_code"] == "202"
		})
		run := rcv.WaitFor(t, wait, "bark fetch-code", tracingtest.Named("bark fetch-code"))
		if run.TraceID != accepted.TraceID || run.ParentID != accepted.SpanID {
			t.Errorf("bark run: trace %s parent %s; want trace %s parent %s (the request)", run.TraceID, run.ParentID, accepted.TraceID, accepted.SpanID)
		}
		if run.Attrs["yard.dog.id"] != dogID || run.Attrs["yard.bark.outcome"] != "succeeded" {
			t.Errorf("bark run attributes: %v", run.Attrs)
		}
		// The traceparent is kept in the task row only, not in the bark's
		// events (which streams and webhooks deliver).
		var inEvents int
		if err := db.Read().QueryRow(`SELECT COUNT(*) FROM events WHERE data LIKE $1`, "%"+accepted.TraceID+"%").Scan(&inEvents); err != nil {
			t.Fatal(err)
		}
		if inEvents != 0 {
			t.Errorf("%d events hold the request's traceparent", inEvents)
		}
		fetch := rcv.WaitFor(t, wait, "fetch code", tracingtest.Named("fetch code"))
		text := rcv.WaitFor(t, wait, "sms send", tracingtest.Named("sms send"))
		for _, s := range []tracingtest.Span{fetch, text} {
			if s.TraceID != run.TraceID || s.ParentID != run.SpanID {
				t.Errorf("%s: trace %s parent %s; want below the run (trace %s parent %s)", s.Name, s.TraceID, s.ParentID, run.TraceID, run.SpanID)
			}
		}
		if fetch.Attrs["yard.fetch.scheme"] != "file" {
			t.Errorf("fetch span attributes: %v", fetch.Attrs)
		}
		rcv.WaitFor(t, wait, "store.CompleteTask below the run", func(s tracingtest.Span) bool {
			return s.Name == "store.CompleteTask" && s.ParentID == run.SpanID
		})
		sms.mu.Lock()
		got := append([]string(nil), sms.parent...)
		sms.mu.Unlock()
		if len(got) != 1 || got[0] != "00-"+text.TraceID+"-"+text.SpanID+"-01" {
			t.Errorf("traceparent of the SMS API request: got %v, want the sms span's (%s, %s)", got, text.TraceID, text.SpanID)
		}

		// The car list: the search below the request.
		cars := rcv.WaitFor(t, wait, "GET /cars", tracingtest.Named("GET /cars"))
		search := rcv.WaitFor(t, wait, "car search", tracingtest.Named("car search"))
		if search.ParentID != cars.SpanID || search.Attrs["yard.cars.answered_by"] != "sql" {
			t.Errorf("car search: parent %s attrs %v; want parent %s", search.ParentID, search.Attrs, cars.SpanID)
		}

		// Nothing secret was exported: no query value, no password, no
		// Authorization header, no provider token.
		raw := rcv.Raw()
		basic := base64.StdEncoding.EncodeToString([]byte("alice:" + pw))
		for _, s := range []string{secret, pw, basic, "Basic ", smsToken, "mailpw", "authorization", "Authorization", "rex@example.org", "+14155550100"} {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("the exported spans contain %q", s)
			}
		}
		for _, s := range rcv.Spans() {
			for k, v := range s.Attrs {
				if strings.Contains(v, "?") || strings.HasPrefix(k, "url.query") || strings.HasPrefix(k, "http.request.header") {
					t.Errorf("span %s attribute %s=%q", s.Name, k, v)
				}
			}
		}
	})
}

// TestTracingOff: without a tracer provider no traceparent is stored with
// a task and no span reaches anything, even when the request carries one.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		resp := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw,
			Headers: map[string]string{"Prefer": "respond-async", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
		if resp.StatusCode != 202 {
			t.Fatalf("async bark: %d %s", resp.StatusCode, resp.Body)
		}
		var n int
		if err := db.Read().QueryRow(`SELECT COUNT(*) FROM tasks WHERE traceparent IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("tasks with a traceparent while tracing is off: %d", n)
		}
		if ran := env.drain(t); ran != 1 {
			t.Fatalf("ran %d tasks, want 1", ran)
		}
	})
}
