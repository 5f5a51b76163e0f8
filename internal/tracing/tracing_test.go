package tracing_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard/internal/tracing"
	"github.com/yard-api/yard/internal/tracing/tracingtest"
)

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, flag, traces, base string
		want                     string
		wantErr                  bool
	}{
		{name: "off"},
		{name: "flag is a base URL", flag: "http://collector:4318", want: "http://collector:4318/v1/traces"},
		{name: "flag with a slash", flag: "https://collector:4318/", want: "https://collector:4318/v1/traces"},
		{name: "flag wins", flag: "http://a:4318", traces: "http://b/x", base: "http://c", want: "http://a:4318/v1/traces"},
		{name: "traces variable as it is", traces: "http://b:4318/custom", base: "http://c", want: "http://b:4318/custom"},
		{name: "base variable", base: "http://c:4318", want: "http://c:4318/v1/traces"},
		{name: "not a URL", flag: "collector:4318", wantErr: true},
		{name: "other scheme", flag: "grpc://collector:4317", wantErr: true},
		{name: "credentials in the URL", base: "https://user:secret@collector", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tracing.Endpoint(tc.flag, tc.traces, tc.base)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("Endpoint(%q, %q, %q) = %q, %v; want %q, error %v", tc.flag, tc.traces, tc.base, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestOffAllocatesNothing: without a recording span in the context, the
// helpers every package calls on its hot path allocate nothing.
func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.WithValue(context.Background(), testKey(0), 1)
	h := http.Header{}
	allocs := testing.AllocsPerRun(1000, func() {
		c, span := tracing.Start(ctx, "store.FindCarByID")
		if span.IsRecording() {
			t.Fatal("recording without a parent")
		}
		_, span2 := tracing.StartClient(c, "sms send")
		tracing.Inject(c, h)
		_ = tracing.TraceParent(c)
		_ = tracing.ContextWith(c, span)
		span2.End()
		span.End()
	})
	if allocs != 0 {
		t.Fatalf("allocations with tracing off: got %v, want 0", allocs)
	}
	if len(h) != 0 {
		t.Fatalf("Inject without a span set %v", h)
	}
}

// TestExportAndPropagate runs the exporter against the in-test OTLP
// receiver: a root, a child started from the context alone, a traceparent
// passed on and taken up again as a remote parent.
func TestExportAndPropagate(t *testing.T) {
	rcv := tracingtest.Start(t)
	p := rcv.Provider(t, "one")
	ctx, root := p.Tracer(tracing.Scope).Start(context.Background(), "root")
	cctx, child := tracing.Start(ctx, "child")
	child.SetAttributes(tracing.DBSystem.String("sqlite"))
	tp := tracing.TraceParent(cctx)
	child.End()
	root.End()

	h := http.Header{}
	tracing.Inject(cctx, h)
	if h.Get("traceparent") != tp {
		t.Fatalf("injected traceparent %q, want %q", h.Get("traceparent"), tp)
	}
	// Another process takes the stored traceparent up.
	other := rcv.Provider(t, "two")
	_, run := other.Tracer(tracing.Scope).Start(tracing.WithRemoteParent(context.Background(), tp), "run")
	run.End()
	for _, pr := range []*tracing.Provider{p, other} {
		if err := pr.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := rcv.WaitFor(t, 5*time.Second, "root", tracingtest.Named("root"))
	c := rcv.WaitFor(t, 5*time.Second, "child", tracingtest.Named("child"))
	got := rcv.WaitFor(t, 5*time.Second, "run", tracingtest.Named("run"))
	if c.TraceID != r.TraceID || c.ParentID != r.SpanID || c.Attrs["db.system.name"] != "sqlite" {
		t.Errorf("child: got trace %s parent %s attrs %v; want trace %s parent %s", c.TraceID, c.ParentID, c.Attrs, r.TraceID, r.SpanID)
	}
	if got.TraceID != r.TraceID || got.ParentID != c.SpanID {
		t.Errorf("run from the stored traceparent: got trace %s parent %s, want trace %s parent %s", got.TraceID, got.ParentID, r.TraceID, c.SpanID)
	}
	if r.Resource["service.instance.id"] != "one" || got.Resource["service.instance.id"] != "two" || r.Resource["service.name"] != "yard-test" {
		t.Errorf("resources: %v and %v", r.Resource, got.Resource)
	}
	if tracing.WithRemoteParent(context.Background(), "00-garbage") != context.Background() {
		t.Error("an invalid traceparent changed the context")
	}
	if sc := trace.SpanContextFromContext(tracing.WithRemoteParent(context.Background(), "00-garbage")); sc.IsValid() {
		t.Error("an invalid traceparent gave a span context")
	}
}

// BenchmarkStartOff is what a store method pays with tracing off: Start
// on a request's context (a few values and a deadline deep) and End.
func BenchmarkStartOff(b *testing.B) {
	ctx := context.Background()
	for i := range 6 {
		ctx = context.WithValue(ctx, testKey(i), i)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		_, span := tracing.Start(ctx, "store.FindCarByID")
		span.End()
	}
}

// testKey keys the values the tests put in contexts.
type testKey int
