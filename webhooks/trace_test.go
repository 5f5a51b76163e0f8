package webhooks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/tracing/tracingtest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestDeliveryIsTraced: with a tracer provider each attempt is a client
// span, and its request carries that span's traceparent; the span has the
// receiver's host and answer, never the URL (its query may hold a token).
func TestDeliveryIsTraced(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		rcv := tracingtest.Start(t)
		tp := rcv.Provider(t, "hooks")
		rc := startReceiver(t, true, nil)
		alice := mustUser(t, db, "alice")
		const token = "receiver-token-never-exported"
		hook := mustWebhook(t, db, alice.ID, "https://"+rc.hostPort()+"/hook?token="+token, "dog.*")
		cfg := newConfig(t, db, rc)
		cfg.Tracing = tp
		run(t, db, cfg)

		mustDog(t, db, alice.ID, "Rex")
		r := rc.next(t, 5*time.Second)
		if e := verify(t, hook.Secret, r, time.Now()); e.Type != yard.EventDogCreated {
			t.Fatalf("delivery: %s", r.Body)
		}
		parent := r.Header.Get("traceparent")
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		span := rcv.WaitFor(t, 5*time.Second, "webhook POST", tracingtest.Named("webhook POST"))
		if want := "00-" + span.TraceID + "-" + span.SpanID + "-01"; parent != want {
			t.Errorf("traceparent of the delivery: got %q, want %q (the attempt's span)", parent, want)
		}
		if span.Kind != tracepb.Span_SPAN_KIND_CLIENT || span.Attrs["http.response.status_code"] != "200" ||
			span.Attrs["yard.webhook.id"] != hook.ID || span.Attrs["server.address"] != "127.0.0.1" || span.Attrs["yard.event.type"] != yard.EventDogCreated {
			t.Errorf("span: kind %v attributes %v", span.Kind, span.Attrs)
		}
		if raw := string(rcv.Raw()); strings.Contains(raw, token) || strings.Contains(raw, hook.Secret) {
			t.Error("the exported spans contain the URL's token or the secret")
		}
	})
}

// TestDeliveryUntracedSendsNoTraceparent: without a provider, nothing.
func TestDeliveryUntracedSendsNoTraceparent(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		rc := startReceiver(t, true, nil)
		alice := mustUser(t, db, "alice")
		mustWebhook(t, db, alice.ID, "https://"+rc.hostPort()+"/hook", "dog.*")
		run(t, db, newConfig(t, db, rc))
		mustDog(t, db, alice.ID, "Rex")
		if r := rc.next(t, 5*time.Second); r.Header.Get("traceparent") != "" {
			t.Fatalf("traceparent %q sent without tracing", r.Header.Get("traceparent"))
		}
	})
}
