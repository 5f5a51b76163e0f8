package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard/store/storetest"
)

// TestPostgresRestartUnderLoad stops and starts PostgreSQL (fast shutdown,
// a cluster of the test's own) under a load of reads and async barks sent
// to two serve processes: while it is down they answer only 503 with
// Retry-After and an unavailable problem; afterwards both answer again
// without a restart; and every accepted bark ran exactly once.
func TestPostgresRestartUnderLoad(t *testing.T) {
	t.Parallel()
	c := storetest.NewCluster(t)
	dsn := c.NewDatabase(t)
	// A task whose worker lost the store mid-run is taken again when its
	// lease expires: a short one keeps the wait for it short.
	s1 := startProcess(t, "--data", t.TempDir(), "--db", dsn, "--workers", "2", "--job-lease", "3s")
	s2 := startProcess(t, "--data", t.TempDir(), "--db", dsn, "--workers", "2", "--job-lease", "3s")
	const alicePW = "alice password 1"
	resp, m := call(t, "POST", s1.URL+"/v1/people", "admin", s1.Password, map[string]any{"name": "alice", "password": alicePW})
	if resp.StatusCode != 201 {
		t.Fatalf("create person: %d %v", resp.StatusCode, m)
	}
	resp, m = call(t, "POST", s1.URL+"/v1/dogs", "alice", alicePW, map[string]any{"name": "Rex", "email": "rex@example.org"})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %v", resp.StatusCode, m)
	}
	dogURI := "/v1/dogs/" + m["id"].(string) + "/"

	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		problems []string
	)
	var accepted, answered, unavailable, ambiguousBarks atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 6 {
		base := []string{s1.URL, s2.URL}[w%2]
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var req *http.Request
				bark := (i+w)%3 == 0
				if bark {
					req, _ = http.NewRequest("POST", base+dogURI+"barks", strings.NewReader(`{"effect":"record"}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Prefer", "respond-async")
				} else {
					req, _ = http.NewRequest("GET", base+dogURI, nil)
				}
				req.SetBasicAuth("alice", alicePW)
				resp, err := insecure.Do(req)
				if err != nil {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, err))
					mu.Unlock()
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				switch {
				case resp.StatusCode == 503:
					unavailable.Add(1)
					if bark {
						ambiguousBarks.Add(1)
					}
					if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "/problems/unavailable") ||
						resp.Header.Get("Content-Type") != "application/problem+json" {
						problems = append(problems, fmt.Sprintf("503 without Retry-After or problem: %v %s", resp.Header, body))
					}
				case bark && resp.StatusCode == 202:
					accepted.Add(1)
					answered.Add(1)
				case resp.StatusCode == 200 && !bark:
					answered.Add(1)
				default:
					problems = append(problems, fmt.Sprintf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, body))
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	// The load runs before, during and after the outage: until requests
	// have met each state.
	eventually(t, "answers before the outage", func() bool { return answered.Load() >= 20 })
	c.Stop(t)
	eventually(t, "503s during the outage", func() bool { return unavailable.Load() >= 6 })
	c.Start(t)
	// Both processes answer again by themselves.
	for _, s := range []*server{s1, s2} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, _ := call(t, "GET", s.URL+dogURI, "alice", alicePW, nil)
			if resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not answer after PostgreSQL came back: %d", s.URL, resp.StatusCode)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if resp, m := call(t, "GET", s.URL+"/readyz", "", "", nil); resp.StatusCode != 200 {
			t.Errorf("readyz after the outage: %d %v", resp.StatusCode, m)
		}
	}
	after := answered.Load()
	eventually(t, "answers after the outage", func() bool { return answered.Load() >= after+20 })
	close(stop)
	wg.Wait()
	t.Logf("statuses: %v; %d barks accepted", statuses, accepted.Load())
	for _, p := range problems {
		t.Error(p)
	}
	if unavailable.Load() == 0 {
		t.Fatal("no request met the outage (no 503)")
	}

	// Every accepted bark ran exactly once. A bark answered 503 may have
	// been stored before the connection broke; none may run twice. Once
	// every task has finished, barkCount is final.
	n := int(accepted.Load())
	tasks := waitTasks(t, s1.URL, dogURI, n)
	resp, dog := call(t, "GET", s1.URL+dogURI, "alice", alicePW, nil)
	count, _ := dog["barkCount"].(float64)
	if resp.StatusCode != 200 || int(count) < n || int(count) > n+int(ambiguousBarks.Load()) {
		t.Fatalf("barkCount: got %v, want %d accepted (+ at most %d answered 503)", count, n, ambiguousBarks.Load())
	}
	for _, b := range tasks {
		if b["status"] != "succeeded" {
			t.Errorf("task %v: %v (%v)", b["id"], b["status"], b["error"])
		}
	}
}

// eventually polls cond for at most a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
