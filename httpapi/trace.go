package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard/internal/tracing"
)

// The request span (docs/operations.md, "Metrics and traces"): one server
// span per request, the child of the request's W3C traceparent when it
// carries a valid one, named by the method and the route pattern once the
// request is routed ("GET /v1/dogs/{dog_id}/"). It carries the method, the
// route and the status, never the path (some paths hold a key), the query
// (signed requests carry their signature there) or a header.

// startSpan starts the request span of r and returns the context that
// carries it; r's context and nil when tracing is off.
func (s *Server) startSpan(r *http.Request) (context.Context, trace.Span) {
	if s.tracer == nil {
		return r.Context(), nil
	}
	method := spanMethod(r.Method)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return s.tracer.Start(tracing.Extract(r.Context(), r.Header), method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(tracing.HTTPMethod.String(method), tracing.URLScheme.String(scheme)))
}

// endSpan names the request span by its route (pattern, as the mux
// matched it; "" for none) and ends it with the status: an answer of 500
// or more is an error (a 4xx is the client's, not the server's).
func endSpan(span trace.Span, r *http.Request, pattern string, status int) {
	if route := spanRoute(pattern); route != "" {
		span.SetName(spanMethod(r.Method) + " " + route)
		span.SetAttributes(tracing.HTTPRoute.String(route))
	}
	span.SetAttributes(tracing.HTTPStatus.Int(status))
	if status >= 500 {
		tracing.Failf(span, strconv.Itoa(status), http.StatusText(status))
	}
	span.End()
}

// spanRoute is the route of a mux pattern: without its method, and
// without the "{$}" that anchors a trailing slash.
func spanRoute(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = pattern[i+1:]
	}
	return strings.TrimSuffix(pattern, "{$}")
}

// spanMethod is the method as spans and metrics name it: a method of HTTP,
// or "_OTHER" (OpenTelemetry's word), so a client cannot choose span names
// nor make metric series.
func spanMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}
