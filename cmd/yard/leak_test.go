package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/store/storetest"
)

// TestServeLeavesNoGoroutines stops a server that served requests, an
// event stream, an asynchronous bark and a webhook subscription, and checks
// that every goroutine it started has ended: the background work (the job
// runner, the event hub, the webhook deliverer, the index build, the
// purges, the checkpointer), the store's connections and the HTTP
// server's connections (docs/architecture.md, "What a running server is
// made of").
func TestServeLeavesNoGoroutines(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { serveAndStop(t, "--data", t.TempDir(), "--demo") })
	t.Run("postgres", func(t *testing.T) {
		serveAndStop(t, "--data", t.TempDir(), "--demo", "--db", storetest.NewPostgresDatabase(t))
	})
}

func serveAndStop(t *testing.T, args ...string) {
	before := goroutineIDs()
	s := startInProcess(t, args...)

	if code, _, _, err := do("GET", s.URL+"/cars?color=red", "", "", nil); err != nil || code != 200 {
		t.Fatalf("GET /cars: %d %v", code, err)
	}
	code, loc, _, err := do("POST", s.URL+"/v1/dogs", "admin", s.Password, map[string]any{"name": "Rex", "email": "rex@example.org"})
	if err != nil || code != 201 {
		t.Fatalf("POST /v1/dogs: %d %v", code, err)
	}
	if code, _, _, err := do("POST", loc+"barks", "admin", s.Password, nil, "Prefer", "respond-async"); err != nil || code != 202 {
		t.Fatalf("async bark: %d %v", code, err)
	}

	// An event stream open while the server stops: it must end.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/events", nil)
	req.SetBasicAuth("admin", s.Password)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := insecure.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	streamEnded := make(chan struct{})
	go func() {
		defer close(streamEnded)
		r := bufio.NewReader(resp.Body)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
	}()

	s.stop(t)
	select {
	case <-streamEnded:
	case <-time.After(30 * time.Second):
		t.Fatal("the event stream did not end when the server stopped")
	}
	resp.Body.Close()
	insecure.CloseIdleConnections()

	// Goroutines end a little after the functions that stopped them
	// return: wait for them, up to a bound.
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		left = serverGoroutines(before)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Fatalf("%d goroutines of the stopped server are still running:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

var goroutineHead = regexp.MustCompile(`^goroutine (\d+) `)

// goroutineStacks returns the stack of every goroutine, by id.
func goroutineStacks() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if m := goroutineHead.FindSubmatch(g); m != nil {
			stacks[string(m[1])] = string(g)
		}
	}
	return stacks
}

func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for id := range goroutineStacks() {
		ids[id] = true
	}
	return ids
}

// serverGoroutines returns the stacks of the goroutines started since
// before that belong to a server: yard's own code (not the tests'), the
// store's connection pools and the HTTP server's connections.
func serverGoroutines(before map[string]bool) []string {
	var left []string
	for id, st := range goroutineStacks() {
		if before[id] || strings.Contains(st, "_test.go") || strings.Contains(st, "testing.tRunner") {
			continue
		}
		if strings.Contains(st, "github.com/yard-api/yard/") || strings.Contains(st, "database/sql.") ||
			strings.Contains(st, "net/http.(*conn).serve") || strings.Contains(st, "net/http.(*Server)") {
			left = append(left, st)
		}
	}
	return left
}
