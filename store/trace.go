package store

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard/internal/tracing"
)

// span starts the span of a store method, named "store.Method": a child of
// the request's or the bark run's span (docs/operations.md, "Metrics and
// traces"). Without a recording span in ctx it returns ctx and a no-op
// span and allocates nothing (tracing.Start). Spans carry the engine,
// never a statement's arguments.
func (db *DB) span(ctx context.Context, name string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, name)
	if span.IsRecording() {
		system := "sqlite"
		if db.engine == Postgres {
			system = "postgresql"
		}
		span.SetAttributes(tracing.DBSystem.String(system))
	}
	return ctx, span
}

// trace is span for a store method that goes on with the span's context:
// defer db.trace(&ctx, "store.Method").End(). A method whose ctx a
// closure keeps beyond the call (WithBatchTx's) calls span instead: with
// its address taken, ctx would move to the heap, an allocation a call.
func (db *DB) trace(ctx *context.Context, name string) trace.Span {
	var span trace.Span
	*ctx, span = db.span(*ctx, name)
	return span
}
