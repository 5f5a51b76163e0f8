package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard/internal/tracing"
)

// traceFlags are the flag and the environment of traces
// (docs/configuration.md; docs/operations.md, "Metrics and traces").
type traceFlags struct {
	// endpoint is --otel-endpoint: the OTLP/HTTP base URL.
	endpoint string
	// url is where spans go, resolved by resolve from the flag and the
	// OpenTelemetry environment; "" is off.
	url string
}

func (f *traceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "otel-endpoint", "", "OTLP/HTTP endpoint to send OpenTelemetry traces to, e.g. http://collector:4318 (default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT; none: no traces)")
}

// resolve decides where spans go: --otel-endpoint, else the standard
// OpenTelemetry variables; OTEL_SDK_DISABLED=true turns traces off.
func (f *traceFlags) resolve(getenv func(string) string) error {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		f.url = ""
		return nil
	}
	u, err := tracing.Endpoint(f.endpoint, getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if err != nil {
		return usageError(err.Error())
	}
	f.url = u
	return nil
}

// traces is the tracer provider of the process; its zero value is
// tracing off.
type traces struct{ p *tracing.Provider }

// newTraces starts the exporter when traces are on. The SDK's own errors
// (an export the collector refused or did not answer) go to the log as
// warnings, instead of the SDK's default of plain lines on standard error.
func newTraces(ctx context.Context, f traceFlags, logger *slog.Logger) (traces, error) {
	if f.url == "" {
		return traces{}, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("traces", slog.String("error", err.Error()))
	}))
	p, err := tracing.New(ctx, tracing.Config{URL: f.url, Service: "yard", Version: Version, Instance: instanceID()})
	if err != nil {
		return traces{}, err
	}
	return traces{p}, nil
}

// provider is what the parts take: nil when traces are off (a nil
// *tracing.Provider in the interface would not be nil).
func (t traces) provider() trace.TracerProvider {
	if t.p == nil {
		return nil
	}
	return t.p
}

// shutdown exports the spans still queued, within tracing.ShutdownTimeout.
func (t traces) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), tracing.ShutdownTimeout)
	defer cancel()
	_ = t.p.Shutdown(ctx)
}
