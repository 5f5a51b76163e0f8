// Package tracingtest is an OTLP/HTTP trace receiver for tests: an
// httptest server that decodes the ExportTraceServiceRequest protobufs
// the OpenTelemetry exporter posts and keeps their spans.
package tracingtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/yard-api/yard/internal/tracing"
)

// Span is one received span, flattened.
type Span struct {
	Name     string
	TraceID  string // hex
	SpanID   string // hex
	ParentID string // hex, "" for a root
	Kind     tracepb.Span_SpanKind
	// Attrs are the span's attributes as text; Resource the resource's
	// (service.name, service.instance.id, ...).
	Attrs    map[string]string
	Resource map[string]string
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the base URL (what OTEL_EXPORTER_OTLP_ENDPOINT or
	// --otel-endpoint take).
	URL string

	mu        sync.Mutex
	spans     []Span
	raw       bytes.Buffer
	bad       []string
	providers []*tracing.Provider
}

// Start runs a receiver until t ends. It answers every valid export 200
// with an empty ExportTraceServiceResponse.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range r.bad {
			t.Errorf("OTLP receiver: %s", b)
		}
	})
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	fail := func(code int, format string, args ...any) {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf(format, args...))
		r.mu.Unlock()
		http.Error(w, "bad export", code)
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		fail(http.StatusNotFound, "%s %s: not an OTLP traces export", req.Method, req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		fail(http.StatusUnsupportedMediaType, "Content-Type %q", ct)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			fail(http.StatusBadRequest, "gzip: %v", err)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		fail(http.StatusBadRequest, "read: %v", err)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		fail(http.StatusBadRequest, "decode: %v", err)
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind(), Attrs: attrMap(s.GetAttributes()), Resource: res})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.raw.Write(raw)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Raw returns every export's bytes as received, for looking for what must
// never be exported (a password, a query value).
func (r *Receiver) Raw() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.raw.Bytes())
}

// WaitFor waits up to timeout for a span that match accepts and returns
// it; it fails t when none came, listing what did. While it waits it has
// the providers made by Provider export what they hold.
func (r *Receiver) WaitFor(t testing.TB, timeout time.Duration, what string, match func(Span) bool) Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		providers := append([]*tracing.Provider(nil), r.providers...)
		r.mu.Unlock()
		for _, p := range providers {
			_ = p.ForceFlush(context.Background())
		}
		for _, s := range r.Spans() {
			if match(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range r.Spans() {
				names = append(names, fmt.Sprintf("%q (trace %s, service %s)", s.Name, s.TraceID, s.Resource["service.instance.id"]))
			}
			t.Fatalf("no span %s within %v; received: %s", what, timeout, strings.Join(names, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Named is a WaitFor predicate: a span with that name.
func Named(name string) func(Span) bool {
	return func(s Span) bool { return s.Name == name }
}

// Provider returns a tracer provider of the service instance named
// instance, exporting to r; it is shut down (its spans flushed) when t
// ends.
func (r *Receiver) Provider(t testing.TB, instance string) *tracing.Provider {
	t.Helper()
	p, err := tracing.New(context.Background(), tracing.Config{URL: r.URL + "/v1/traces", Service: "yard-test", Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	r.mu.Lock()
	r.providers = append(r.providers, p)
	r.mu.Unlock()
	return p
}
