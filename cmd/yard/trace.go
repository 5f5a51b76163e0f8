package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"

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
		return nil // url stays "": off
	}
	u, err := tracing.Endpoint(f.endpoint, getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if err != nil {
		return usageError(err.Error())
	}
	f.url = u
	return nil
}

// newTraces starts the exporter when traces are on; nil when they are off.
// The SDK's own errors (an export the collector refused or did not answer)
// go to the log as warnings, instead of the SDK's default of plain lines
// on standard error.
func newTraces(ctx context.Context, f traceFlags, logger *slog.Logger) (*tracing.Provider, error) {
	if f.url == "" {
		return nil, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("traces", slog.String("error", err.Error()))
	}))
	return tracing.New(ctx, tracing.Config{URL: f.url, Service: "yard", Version: Version, Instance: instanceID()})
}
