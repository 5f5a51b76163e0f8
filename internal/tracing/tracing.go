// Package tracing is yard's OpenTelemetry tracing (docs/operations.md,
// "Metrics and traces"): the tracer provider that exports spans over
// OTLP/HTTP, and the small helpers every package uses to add its spans and
// to carry W3C trace context (traceparent) in and out.
//
// Only the roots of traces are started from a tracer provider given to a
// component (the request span in httpapi, the run of a bark in jobs, a
// webhook delivery in webhooks); every other span is a child started with
// Start, which takes its tracer from the span in the context. With tracing
// off there is no provider, no span in any context, and Start costs one
// context lookup and allocates nothing.
package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of yard's spans.
const Scope = "github.com/yard-api/yard"

// Attribute keys of yard's spans: the OpenTelemetry semantic conventions
// where one fits, "yard." names for the rest. No span carries a URL's
// query, a header value or a message's content.
const (
	HTTPMethod     = attribute.Key("http.request.method")
	HTTPRoute      = attribute.Key("http.route")
	HTTPStatus     = attribute.Key("http.response.status_code")
	URLScheme      = attribute.Key("url.scheme")
	ErrorType      = attribute.Key("error.type")
	ServerAddress  = attribute.Key("server.address")
	ServerPort     = attribute.Key("server.port")
	DBSystem       = attribute.Key("db.system.name")
	BarkID         = attribute.Key("yard.bark.id")
	DogID          = attribute.Key("yard.dog.id")
	BarkEffect     = attribute.Key("yard.bark.effect")
	BarkSource     = attribute.Key("yard.bark.source")
	BarkAttempt    = attribute.Key("yard.bark.attempt")
	BarkOutcome    = attribute.Key("yard.bark.outcome")
	CarsAnsweredBy = attribute.Key("yard.cars.answered_by")
	WebhookID      = attribute.Key("yard.webhook.id")
	WebhookAttempt = attribute.Key("yard.webhook.attempt")
	EventType      = attribute.Key("yard.event.type")
	FetchScheme    = attribute.Key("yard.fetch.scheme")
)

// Config says where spans go and what the process is.
type Config struct {
	// URL is the OTLP/HTTP traces endpoint, e.g.
	// http://collector:4318/v1/traces (Endpoint resolves it).
	URL string
	// Service, Version and Instance become the resource's service.name,
	// service.version and service.instance.id. OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES, read by the SDK, override them.
	Service, Version, Instance string
}

// Provider is a tracer provider exporting to an OTLP/HTTP endpoint in
// batches. Shutdown exports what is left.
type Provider struct {
	*sdktrace.TracerProvider
}

// New returns the provider of cfg. The sampler is the SDK's: parent-based,
// every root sampled, unless OTEL_TRACES_SAMPLER says otherwise; the other
// OTEL_EXPORTER_OTLP_* settings (headers, timeout, compression, the
// certificate) are read by the exporter.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if _, err := checkURL(cfg.URL); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.URL))
	if err != nil {
		return nil, fmt.Errorf("otel exporter: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(cmp.Or(cfg.Service, "yard"))}
	if cfg.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(cfg.Version))
	}
	if cfg.Instance != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(cfg.Instance))
	}
	res, err := resource.New(ctx, resource.WithSchemaURL(semconv.SchemaURL), resource.WithAttributes(attrs...),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	return &Provider{sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// Shutdown exports the spans still queued, within ctx, and stops.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.TracerProvider.Shutdown(ctx)
}

// Endpoint returns the OTLP/HTTP traces URL from, in this order: flag
// (--otel-endpoint, a base URL like OTEL_EXPORTER_OTLP_ENDPOINT),
// tracesEnv (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the URL as it is), and
// baseEnv (OTEL_EXPORTER_OTLP_ENDPOINT, to which /v1/traces is added, as
// the OpenTelemetry specification says). "" means tracing is off.
func Endpoint(flag, tracesEnv, baseEnv string) (string, error) {
	if flag == "" && tracesEnv != "" {
		return checkURL(tracesEnv)
	}
	// flag and baseEnv are both base URLs.
	if base := cmp.Or(flag, baseEnv); base != "" {
		return checkURL(strings.TrimRight(base, "/") + "/v1/traces")
	}
	return "", nil
}

func checkURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", errors.New("otel endpoint: want an http:// or https:// URL with a host (credentials go in OTEL_EXPORTER_OTLP_HEADERS)")
	}
	return s, nil
}

// noSpan is what Start returns without a recording parent: the API's
// no-op span, one value for the whole process.
var noSpan = trace.SpanFromContext(context.Background())

// Start starts an internal span named name, a child of the span in ctx,
// when that one is recording. Otherwise it returns ctx unchanged and a
// no-op span, allocating nothing: callers set attributes only when
// span.IsRecording().
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	return start(ctx, name, trace.SpanKindInternal)
}

// StartClient is Start for a span of an outbound call (kind client).
func StartClient(ctx context.Context, name string) (context.Context, trace.Span) {
	return start(ctx, name, trace.SpanKindClient)
}

func start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noSpan
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithSpanKind(kind))
}

// ContextWith returns ctx with span as its current span; ctx as it is for
// the no-op span (tracing off), so that costs nothing.
func ContextWith(ctx context.Context, span trace.Span) context.Context {
	if !span.SpanContext().IsValid() {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}

// Failf marks span as failed: error.type and the status description, both
// in yard's own words (never a message that could carry a credential, an
// address or a URL's query).
func Failf(span trace.Span, errorType, description string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(ErrorType.String(errorType))
	span.SetStatus(codes.Error, description)
}

// w3c is the W3C Trace Context propagator (traceparent and tracestate).
var w3c propagation.TraceContext

// Extract returns ctx with the remote span context of an incoming
// request's traceparent header, when it has a valid one.
func Extract(ctx context.Context, h http.Header) context.Context {
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject sets traceparent (and tracestate) on an outgoing request's
// header from the span in ctx; without a valid span context it does
// nothing.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// TraceParent returns the traceparent of the span in ctx ("" without a
// valid one), to be stored or passed on (a bark task's row, a command's
// TRACEPARENT).
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// WithRemoteParent returns ctx with the span context of a stored
// traceparent as its remote parent; ctx as it is when tp is "" or not a
// valid traceparent.
func WithRemoteParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// TraceID returns the trace id of the span in ctx as hex, "" without one
// (for the request log).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// ShutdownTimeout bounds the export of the last spans at shutdown.
const ShutdownTimeout = 5 * time.Second
