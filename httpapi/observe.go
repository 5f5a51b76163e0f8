package httpapi

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/internal/tracing"
)

// Every request is logged and counted on its way out (Server.observe,
// called by serve): the request log line and the Prometheus series of
// requests by method, route pattern and status.

// newRequestID returns 24 random hex digits. A request ID names a request
// in logs and traces and needs no secrecy, so it comes from the runtime's
// fast generator (math/rand/v2, seeded by the system), not crypto/rand.
// RequestID is the X-Request-Id of the answer to r: the client's own when
// it is 1-128 visible ASCII characters, else a new one (docs/api.md).
func RequestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 128 || strings.ContainsFunc(id, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		id = newRequestID()
	}
	return id
}

func newRequestID() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], mrand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], mrand.Uint32())
	return hex.EncodeToString(b[:])
}

// observe logs a request and counts it. Only the path is logged, never the
// query (signed requests carry credentials there) or any header.
func (s *Server) observe(r *http.Request, pattern string, status int, d time.Duration, id string) {
	label := cmp.Or(pattern, "unmatched")
	s.metrics.observe(r.Method, label, status, d)
	level := slog.LevelInfo
	switch {
	case status == http.StatusServiceUnavailable:
		// An unreachable store is logged once per episode (outage.go).
		level = slog.LevelWarn
	case status >= 500:
		level = slog.LevelError
	}
	if s.deps.Logger.Enabled(r.Context(), level) {
		// The record goes to the handler directly: Logger.LogAttrs would
		// also take the caller's program counter (runtime.Callers, 2% of
		// a GET /cars/{id}), which a request line, made here for every
		// route, has no use for.
		rec := slog.NewRecord(time.Now(), level, "request", 0)
		rec.AddAttrs(slog.String("request_id", id), slog.String("method", logMethod(r)), slog.String("path", logPath(r)),
			slog.String("route", label), slog.Int("status", status), slog.Duration("duration", d),
			slog.String("remote", auth.ClientIP(r)))
		if s.tracer != nil {
			// The request's trace, to go from the log to the trace.
			if tid := tracing.TraceID(r.Context()); tid != "" {
				rec.AddAttrs(slog.String("trace_id", tid))
			}
		}
		_ = s.deps.Logger.Handler().Handle(r.Context(), rec)
	}
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// series holds each (method, route, status)'s counter and histogram,
	// so that a request finds them with one lookup instead of hashing its
	// labels into both vectors (WithLabelValues). Its keys are bounded:
	// methods the API does not know are "_OTHER" (spanMethod: a client may
	// send any token as its method, RFC 9110 §9.1, and each would be a
	// series kept for the life of the process), routes are the registered
	// patterns, and statuses are the API's own.
	series sync.Map // seriesKey → *series
}

type seriesKey struct {
	method, route string
	status        int
}

type series struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	k := seriesKey{spanMethod(method), route, status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(k.method, route, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(k.method, route),
		})
	}
	ss := v.(*series)
	ss.requests.Inc()
	ss.latency.Observe(d.Seconds())
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yard_http_requests_total", Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "yard_http_request_duration_seconds", Help: "HTTP request latency by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}
