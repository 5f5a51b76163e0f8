package fetch_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/fetch/fetchtest"
	"github.com/yard-api/yard/internal/tracing"
	"github.com/yard-api/yard/internal/tracing/tracingtest"
)

// TestFetchIsTraced: a fetch inside a traced run is a client span with the
// scheme and host; git's requests over https carry the fetch span's
// traceparent, and an operator's command finds it in TRACEPARENT.
func TestFetchIsTraced(t *testing.T) {
	rcv := tracingtest.Start(t)
	tp := rcv.Provider(t, "fetch")
	ctx, root := tp.Tracer(tracing.Scope).Start(context.Background(), "bark fetch-code")

	root1 := t.TempDir()
	fetchtest.Repo(t, root1, "rex")
	srv, traceParents := tracedServer(t, root1)
	r := httpsRunner(srv, &fetch.Policy{AllowHosts: []string{"127.0.0.1:" + srv.Port()}})
	if res, err := r.Fetch(ctx, srv.URL+"/git/rex", filepath.Join(t.TempDir(), "code")); err != nil {
		t.Fatalf("clone: %v (%s)", err, res.Output)
	}

	// An operator's command writes what it was given.
	out := filepath.Join(t.TempDir(), "traceparent")
	cmd := &fetch.Runner{Timeout: time.Minute, Policy: exampleOrg,
		Command: []string{"sh", "-c", `printf %s "$TRACEPARENT" > "$0"`, out, "{url}", "{dir}"}}
	if res, err := cmd.Fetch(ctx, "https://example.org/rex.git", filepath.Join(t.TempDir(), "code")); err != nil {
		t.Fatalf("operator command: %v (%s)", err, res.Output)
	}
	root.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	rootSpan := rcv.WaitFor(t, 5*time.Second, "the root", tracingtest.Named("bark fetch-code"))
	var fetches []tracingtest.Span
	for _, s := range rcv.Spans() {
		if s.Name == "fetch code" {
			fetches = append(fetches, s)
		}
	}
	if len(fetches) != 2 {
		t.Fatalf("fetch spans: got %d, want 2", len(fetches))
	}
	want := map[string]bool{}
	for _, s := range fetches {
		if s.ParentID != rootSpan.SpanID || s.Attrs["yard.fetch.scheme"] != "https" {
			t.Errorf("fetch span: parent %s attributes %v; want parent %s, https", s.ParentID, s.Attrs, rootSpan.SpanID)
		}
		want["00-"+s.TraceID+"-"+s.SpanID+"-01"] = true
	}
	seen := traceParents()
	if len(seen) == 0 {
		t.Fatal("git sent no traceparent to the https server")
	}
	for _, tp := range seen {
		if !want[tp] {
			t.Errorf("git sent traceparent %q, not a fetch span's (%v)", tp, want)
		}
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !want[string(got)] || slices.Contains(seen, string(got)) {
		t.Errorf("TRACEPARENT of the operator's command: %q; want the second fetch span's", got)
	}
}

// TestFetchUntracedSendsNothing: without a span, no header and no
// TRACEPARENT.
func TestFetchUntracedSendsNothing(t *testing.T) {
	root := t.TempDir()
	fetchtest.Repo(t, root, "rex")
	srv, traceParents := tracedServer(t, root)
	r := httpsRunner(srv, &fetch.Policy{AllowHosts: []string{"127.0.0.1:" + srv.Port()}})
	if res, err := r.Fetch(context.Background(), srv.URL+"/git/rex", filepath.Join(t.TempDir(), "code")); err != nil {
		t.Fatalf("clone: %v (%s)", err, res.Output)
	}
	if got := traceParents(); len(got) != 0 {
		t.Fatalf("traceparent sent without tracing: %v", got)
	}
}

// tracedServer serves the repositories under root (fetchtest.Git) and
// returns the traceparent headers of the requests so far.
func tracedServer(t *testing.T, root string) (*fetchtest.Server, func() []string) {
	git := fetchtest.Git(t, root)
	var mu sync.Mutex
	var parents []string
	srv := fetchtest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("traceparent"); tp != "" {
			mu.Lock()
			parents = append(parents, tp)
			mu.Unlock()
		}
		git.ServeHTTP(w, r)
	}))
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(parents)
	}
}
