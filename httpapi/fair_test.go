package httpapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/fairgate"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// heldLister answers car lists from next, each only once the test lets it
// go: it says which color each list asked for as it starts.
type heldLister struct {
	next    yard.CarLister
	started chan string
	proceed chan struct{}
}

func (h *heldLister) ListCars(ctx context.Context, q yard.Query, page yard.Page, facets []string) (*yard.CarList, error) {
	color := ""
	for _, f := range q.Filters {
		if f.Field == yard.FieldColor {
			color = strings.Join(f.In, ",")
		}
	}
	h.started <- color
	<-h.proceed
	return h.next.ListCars(ctx, q, page, facets)
}

// TestCarListsTakeTurns: one client address that holds every slot of the
// car lists and keeps more waiting does not keep another address waiting
// behind all of them: a slot that frees goes to the other address next.
// Past its share of waiting requests a client is answered 429 at once.
func TestCarListsTakeTurns(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	gate := fairgate.New(fairgate.Config{Slots: 1, PerClient: 2})
	held := &heldLister{next: db, started: make(chan string, 8), proceed: make(chan struct{})}
	env := apitest.Start(t, db, func(d *httpapi.Deps) { d.Lists = gate; d.Cars = held })

	// Client b comes from another loopback address.
	roots := x509.NewCertPool()
	roots.AddCert(env.Server.Certificate())
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	bt := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DialContext: dialer.DialContext}
	b := &http.Client{Transport: bt}
	defer bt.CloseIdleConnections()

	var wg sync.WaitGroup
	statuses := make(chan int, 8)
	get := func(c *http.Client, color string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(env.URL + "/cars?color=" + color)
			if err != nil {
				t.Error(err)
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	waiting := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); gate.Stats().Waiting != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("requests waiting: got %d, want %d", gate.Stats().Waiting, n)
			}
		}
	}

	// a: one running, two waiting, one refused.
	get(env.Client, "red")
	if got := <-held.started; got != "red" {
		t.Fatalf("first list: %q", got)
	}
	get(env.Client, "green")
	waiting(1)
	get(env.Client, "black")
	waiting(2)
	r := env.Do(apitest.Request{Path: "/cars?color=white"})
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "1" || !strings.Contains(string(r.Body), "/problems/rate-limited") {
		t.Fatalf("a's fourth list: %d Retry-After %q %s, want 429 rate-limited with Retry-After: 1", r.StatusCode, r.Header.Get("Retry-After"), r.Body)
	}
	// b: waits behind a's running list only.
	get(b, "blue")
	waiting(3)

	var order []string
	for range 3 {
		held.proceed <- struct{}{}
		order = append(order, <-held.started)
	}
	held.proceed <- struct{}{}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("a list answered %d, want 200", s)
		}
	}
	if got := strings.Join(order, " "); got != "blue green black" {
		t.Errorf("lists after a's first: %s, want b's blue before a's green and black", got)
	}
	if s := gate.Stats(); s.Busy != 0 || s.Waiting != 0 || s.RefusedClient != 1 {
		t.Errorf("gate after: %+v", s)
	}
}
