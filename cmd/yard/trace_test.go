package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/internal/tracing/tracingtest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// startAPIOnly builds a server on dsn as serve does (newApp) and serves
// its API from this test process over TLS, without its background work:
// no bark workers, no scheduler. getenv is the environment serve reads.
func startAPIOnly(t *testing.T, dsn string, getenv func(string) string, args ...string) (*app, string) {
	t.Helper()
	cfg := &serveConfig{}
	fs := newFlagSet("serve", io.Discard)
	cfg.register(fs)
	if err := parseFlags(fs, append([]string{"--data", t.TempDir(), "--db", dsn}, args...), getenv); err != nil {
		t.Fatal(err)
	}
	if err := cfg.otel.resolve(getenv); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	cfg.baseURL = "https://" + srv.Listener.Addr().String()
	a, err := newApp(context.Background(), cfg, newLogger(io.Discard, "error"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = a.api.Handler()
	srv.StartTLS()
	t.Cleanup(func() {
		srv.Close()
		a.close()
	})
	return a, srv.URL
}

// TestTraceOfAnAsyncBarkAcrossProcesses is issue 27's test: on one
// PostgreSQL, a server without workers (in this test process) accepts an
// asynchronous bark, and another yard serve process runs it. The request
// span and the run's span share the trace, the run's span is the request
// span's child, and the two spans come from different processes.
func TestTraceOfAnAsyncBarkAcrossProcesses(t *testing.T) {
	dsn := storetest.NewPostgresDatabase(t)
	rcv := tracingtest.Start(t)
	// The worker process exports every 100 ms (the SDK reads it), so the
	// test need not wait for the default 5 s.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	worker := startProcess(t, "--data", t.TempDir(), "--db", dsn, "--otel-endpoint", rcv.URL, "--fetch-allow-dir", os.TempDir())
	// The API-only server finds its endpoint in the environment.
	api, apiURL := startAPIOnly(t, dsn, func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return rcv.URL
		}
		return ""
	})
	dogURI := barkUser(t, worker, localGitRepo(t))

	req := newJSONRequest(t, "POST", apiURL+dogURI+"barks", map[string]any{"effect": "record"})
	req.Header.Set("Prefer", "respond-async")
	req.SetBasicAuth("alice", "alice password 1")
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("async bark through the API-only server: %d", resp.StatusCode)
	}
	barkPath := strings.TrimPrefix(resp.Header.Get("Location"), apiURL)
	waitTasks(t, worker.URL, dogURI, 1)
	if err := api.traces.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	reqSpan := rcv.WaitFor(t, 10*time.Second, "the request span", func(s tracingtest.Span) bool {
		return s.Name == "POST /v1/dogs/{dog_id}/barks" && s.Attrs["http.response.status_code"] == "202"
	})
	runSpan := rcv.WaitFor(t, 20*time.Second, "the run's span", func(s tracingtest.Span) bool {
		return s.Name == "bark record" && barkPath == dogURI+"barks/"+s.Attrs["yard.bark.id"]
	})
	if runSpan.TraceID != reqSpan.TraceID {
		t.Fatalf("the run's span is in trace %s, the request's in %s", runSpan.TraceID, reqSpan.TraceID)
	}
	if runSpan.ParentID != reqSpan.SpanID {
		t.Errorf("the run's span has parent %s, want the request span %s", runSpan.ParentID, reqSpan.SpanID)
	}
	reqProc, runProc := reqSpan.Resource["service.instance.id"], runSpan.Resource["service.instance.id"]
	if !strings.Contains(reqProc, "-"+strconv.Itoa(os.Getpid())+"-") || !strings.Contains(runProc, "-"+strconv.Itoa(worker.cmd.Process.Pid)+"-") {
		t.Errorf("processes: the request span from %q, the run's from %q; want pids %d and %d", reqProc, runProc, os.Getpid(), worker.cmd.Process.Pid)
	}
	// The store says the same: the worker process held the task.
	db, err := store.Open(context.Background(), dsn, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var owner, stored string
	if err := db.Read().QueryRow(`SELECT lease_owner, COALESCE(traceparent, '') FROM tasks`).Scan(&owner, &stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(owner, "-"+strconv.Itoa(worker.cmd.Process.Pid)+"-") {
		t.Errorf("the task was run by %q, not the worker process (pid %d)", owner, worker.cmd.Process.Pid)
	}
	if want := fmt.Sprintf("00-%s-%s-01", reqSpan.TraceID, reqSpan.SpanID); stored != want {
		t.Errorf("stored traceparent %q, want %q", stored, want)
	}
	// The run's store calls are its children, in the worker process.
	rcv.WaitFor(t, 10*time.Second, "store.CompleteTask below the run", func(s tracingtest.Span) bool {
		return s.Name == "store.CompleteTask" && s.ParentID == runSpan.SpanID
	})
}

// TestOtelEndpointUsage: an endpoint that is not an http(s) URL with a
// host, or that holds credentials, is a usage error before anything is
// written; the environment is read as the OpenTelemetry specification
// says.
func TestOtelEndpointUsage(t *testing.T) {
	data := t.TempDir()
	for _, bad := range []string{"collector:4318", "grpc://collector:4317", "https://user:secret@collector"} {
		out, errs, code := cli(t, "serve", "--data", data, "--addr", "127.0.0.1:0", "--otel-endpoint", bad)
		if code != 2 || !strings.Contains(errs, "otel endpoint") || strings.Contains(errs, "secret") || out != "" {
			t.Errorf("serve --otel-endpoint %s: exit %d, stdout %q, stderr %q; want exit 2 naming the otel endpoint", bad, code, out, errs)
		}
	}
	if entries, _ := os.ReadDir(data); len(entries) > 0 {
		t.Errorf("a usage error wrote into the data directory: %v", entries)
	}
	for _, tc := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"", nil, ""},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces"},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/x"}, "http://t:4318/x"},
		{"http://f:4318", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/x"}, "http://f:4318/v1/traces"},
		{"http://f:4318", map[string]string{"OTEL_SDK_DISABLED": "true"}, ""},
	} {
		f := traceFlags{endpoint: tc.flag}
		if err := f.resolve(func(k string) string { return tc.env[k] }); err != nil || f.url != tc.want {
			t.Errorf("--otel-endpoint %q with %v: got %q, %v; want %q", tc.flag, tc.env, f.url, err, tc.want)
		}
	}
}
