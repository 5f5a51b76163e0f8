package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A server that answers every other request with 500: both runs count
// every answered request and exactly the 500s as errors.
func TestLoadgenCountsAnswersAndErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("fail") == "1" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	newReq := func(_, i int) *http.Request {
		fail := "0"
		if i%2 == 1 {
			fail = "1"
		}
		req, _ := http.NewRequest("GET", srv.URL+"/?fail="+fail, nil)
		return req
	}
	for _, res := range []result{
		runLoad(context.Background(), "closed", srv.Client(), 1, 200*time.Millisecond, http.StatusOK, newReq),
		runPaced(context.Background(), "paced", srv.Client(), 1, 100, 200*time.Millisecond, http.StatusOK, newReq),
	} {
		if res.Requests < 4 {
			t.Fatalf("%s: %d requests in 200 ms", res.Name, res.Requests)
		}
		if want := res.Requests / 2; res.Errors != want {
			t.Errorf("%s: %d errors of %d requests, want %d (every other request fails)", res.Name, res.Errors, res.Requests, want)
		}
		if res.P50 <= 0 || res.P99 < res.P50 {
			t.Errorf("%s: p50 %v, p99 %v", res.Name, res.P50, res.P99)
		}
	}
	// A server that is gone: every request is an error, none is answered.
	srv.Close()
	res := runLoad(context.Background(), "gone", srv.Client(), 1, 50*time.Millisecond, http.StatusOK, newReq)
	if res.Requests != 0 || res.Errors == 0 {
		t.Errorf("gone: %d requests, %d errors; want 0 and some", res.Requests, res.Errors)
	}
}
