package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/internal/tracing/tracingtest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// benchGetCar serves GET /cars/{id} from SQLite through the whole
// middleware, in process (no network: the handler's own cost).
func benchGetCar(b *testing.B, d httpapi.Deps) {
	db := storetest.Open(b, store.SQLite)
	c := &yard.Car{Color: "red", Type: "sedan", Doors: 4, Make: "ford", Model: "focus", Year: 2020}
	if err := db.CreateCar(context.Background(), c); err != nil {
		b.Fatal(err)
	}
	d.DB, d.BaseURL = db, "https://yard.test"
	h := httpapi.New(d).Handler()
	req := httptest.NewRequest("GET", "https://yard.test/cars/"+c.ID, nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkGetCarTracingOff is GET /cars/{id} without a tracer provider:
// what tracing costs when it is off (docs/benchmarks.md, "Tracing off, backups").
func BenchmarkGetCarTracingOff(b *testing.B) { benchGetCar(b, httpapi.Deps{}) }

// BenchmarkGetCarTracingOn is the same with every request traced and
// exported to an in-test OTLP receiver.
func BenchmarkGetCarTracingOn(b *testing.B) {
	rcv := tracingtest.Start(b)
	benchGetCar(b, httpapi.Deps{Tracing: rcv.Provider(b, "bench")})
}
