package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// slowFetch is an operator fetch command that takes a while, so tasks are
// still running when the server is killed.
// Like the default, it clones next to the directory and renames: its git
// may outlive a killed server, and the retaken task must not meet half a
// clone.
const slowFetch = `["sh", "-c", "sleep 0.5; if [ -d \"$1/.git\" ]; then git -C \"$1\" fetch -q -- \"$0\" HEAD && git -C \"$1\" reset -q --hard FETCH_HEAD; else git clone -q -- \"$0\" \"$1.tmp$$\" && mv \"$1.tmp$$\" \"$1\"; fi", "{url}", "{dir}"]`

func localGitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet"}, {"commit", "--quiet", "--allow-empty", "-m", "woof"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.org"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return "file://" + dir
}

// barkUser makes alice and her dog on a running server.
func barkUser(t *testing.T, s *server, repo string) (dogURI string) {
	t.Helper()
	resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "alice", "password": "alice password 1", "phone": "+14155550100"})
	if resp.StatusCode != 201 {
		t.Fatalf("create person: %d %v", resp.StatusCode, m)
	}
	resp, m = call(t, "POST", s.URL+"/v1/dogs", "alice", "alice password 1", map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": repo})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %v", resp.StatusCode, m)
	}
	return "/v1/dogs/" + m["id"].(string) + "/"
}

// postAsync sends an asynchronous bark and returns the task's path.
func postAsync(t *testing.T, base, dogURI string, effect string) string {
	t.Helper()
	req := map[string]any{"effect": effect}
	resp, m := callPrefer(t, base+dogURI+"barks", req)
	if resp != 202 {
		t.Fatalf("async bark: %d %v", resp, m)
	}
	return dogURI + "barks/" + m["id"].(string)
}

func callPrefer(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	req := newJSONRequest(t, "POST", url, body)
	req.Header.Set("Prefer", "respond-async")
	req.SetBasicAuth("alice", "alice password 1")
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = decodeBody(resp, &m)
	return resp.StatusCode, m
}

// waitTasks polls the dog's barks until none is pending or running.
func waitTasks(t *testing.T, base, dogURI string, want int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var all []map[string]any
		for off := 0; ; off += 100 {
			resp, page := call(t, "GET", fmt.Sprintf("%s%sbarks?offset=%d&max=100", base, dogURI, off), "alice", "alice password 1", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("list barks: %d %v", resp.StatusCode, page)
			}
			items, _ := page["items"].([]any)
			for _, it := range items {
				all = append(all, it.(map[string]any))
			}
			if len(items) < 100 {
				break
			}
		}
		done := len(all) >= want
		for _, b := range all {
			if b["status"] == "pending" || b["status"] == "running" {
				done = false
			}
		}
		if done {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks not finished in time: %d tasks, want %d", len(all), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKillWithPendingBarks kills the server (SIGKILL) while async barks are
// pending and running, restarts it on the same store, and checks that each
// bark ran exactly once.
func TestKillWithPendingBarks(t *testing.T) {
	t.Parallel()
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			data := t.TempDir()
			args := []string{"--data", data, "--fetch-command", slowFetch, "--job-lease", "2s", "--workers", "2", "--fetch-allow-dir", os.TempDir()}
			if engine == store.Postgres {
				args = append(args, "--db", storetest.NewPostgresDatabase(t))
			}
			s := startProcess(t, args...)
			dogURI := barkUser(t, s, localGitRepo(t))
			const records, fetches = 30, 4
			for range fetches {
				postAsync(t, s.URL, dogURI, "fetch-code")
			}
			for range records {
				postAsync(t, s.URL, dogURI, "record")
			}
			s.kill9(t)

			s2 := startProcess(t, args...)
			all := waitTasks(t, s2.URL, dogURI, records+fetches)
			if len(all) != records+fetches {
				t.Fatalf("tasks: got %d, want %d", len(all), records+fetches)
			}
			retaken := 0
			for _, b := range all {
				if b["status"] != "succeeded" {
					t.Errorf("task %v: %v (%v)", b["id"], b["status"], b["error"])
				}
				if b["attempts"].(float64) > 1 {
					retaken++
				}
			}
			resp, dog := call(t, "GET", s2.URL+dogURI, "alice", "alice password 1", nil)
			if resp.StatusCode != 200 || dog["barkCount"] != float64(records) {
				t.Fatalf("barkCount after kill -9 and restart: got %v, want %d", dog["barkCount"], records)
			}
			if dog["codeRevision"] == "" {
				t.Error("codeRevision not set by the fetch-code barks")
			}
			// A kill -9 in the middle of an outbox write leaves its
			// temporary file (".tmp-…", never renamed): not a message.
			entries, _ := os.ReadDir(filepath.Join(data, "outbox", "sms"))
			var texts []string
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), ".") {
					texts = append(texts, e.Name())
				}
			}
			if len(texts) != fetches {
				t.Errorf("text messages in the outbox: got %d (%v), want %d", len(texts), texts, fetches)
			}
			t.Logf("%d tasks ran exactly once across kill -9; %d were taken again after their lease expired", len(all), retaken)
		})
	}
}

// TestTwoServeProcessesOnePostgres runs two serve processes on one
// PostgreSQL store: every async bark, sent to either, and the scheduled
// slot run exactly once.
func TestTwoServeProcessesOnePostgres(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewPostgresDatabase(t)
	data1, data2 := t.TempDir(), t.TempDir()
	s1 := startProcess(t, "--data", data1, "--db", dsn, "--fetch-allow-dir", os.TempDir())
	s2 := startProcess(t, "--data", data2, "--db", dsn, "--fetch-allow-dir", os.TempDir())
	s2.Password = s1.Password
	dogURI := barkUser(t, s1, localGitRepo(t))

	// A schedule due now, set through either process.
	resp, m := call(t, "POST", s2.URL+dogURI+"bark-schedule", "alice", "alice password 1", map[string]any{"token": 7, "next": 0, "frequency": 60})
	if resp.StatusCode != 205 {
		t.Fatalf("bark-schedule: %d %v", resp.StatusCode, m)
	}
	const n = 80
	var wg sync.WaitGroup
	for i := range n {
		base := s1.URL
		if i%2 == 1 {
			base = s2.URL
		}
		wg.Go(func() { postAsync(t, base, dogURI, "record") })
	}
	wg.Wait()
	all := waitTasks(t, s1.URL, dogURI, n+1)
	// The slot fired, and the store moved the schedule to the next one, an
	// hour on: no later tick of either scheduler can fire it again.
	resp, sched := call(t, "GET", s2.URL+dogURI+"bark-schedule", "alice", "alice password 1", nil)
	last, _ := time.Parse(time.RFC3339, fmt.Sprint(sched["last"]))
	next, _ := time.Parse(time.RFC3339, fmt.Sprint(sched["next"]))
	if resp.StatusCode != 200 || last.IsZero() || next.Sub(last) != time.Hour || time.Until(next) < 55*time.Minute {
		t.Fatalf("schedule after its slot fired: %d %v, want next an hour after last", resp.StatusCode, sched)
	}
	scheduled := 0
	for _, b := range all {
		if b["status"] != "succeeded" || b["attempts"] != 1.0 {
			t.Errorf("task %v: %v after %v attempts", b["id"], b["status"], b["attempts"])
		}
		if b["source"] == "schedule" {
			scheduled++
		}
	}
	if scheduled != 1 || len(all) != n+1 {
		t.Fatalf("tasks: %d (%d scheduled), want %d (1 scheduled)", len(all), scheduled, n+1)
	}
	_, dog := call(t, "GET", s2.URL+dogURI, "alice", "alice password 1", nil)
	if dog["barkCount"] != float64(n+1) {
		t.Fatalf("barkCount: got %v, want %d", dog["barkCount"], n+1)
	}
	// Their metrics add up to the same count.
	total := 0.0
	for _, s := range []*server{s1, s2} {
		req, _ := http.NewRequest("GET", s.URL+"/metrics", nil)
		req.SetBasicAuth("alice", "alice password 1")
		resp, err := insecure.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?m)^yard_bark_tasks_total\{effect="record",outcome="succeeded"\} (\d+)$`).FindSubmatch(body)
		if m != nil {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			total += v
		}
		if !strings.Contains(string(body), "yard_bark_tasks_pending 0") {
			t.Errorf("metrics of %s: no yard_bark_tasks_pending 0", s.URL)
		}
	}
	if total != n+1 {
		t.Errorf("yard_bark_tasks_total of succeeded record barks over both processes: got %v, want %d", total, n+1)
	}
	// Which processes did the work (both, usually).
	db, err := store.Open(context.Background(), dsn, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Read().Query(`SELECT lease_owner, COUNT(*) FROM tasks GROUP BY lease_owner`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var owners []string
	for rows.Next() {
		var o string
		var c int
		rows.Scan(&o, &c)
		owners = append(owners, fmt.Sprintf("%s: %d", o, c))
	}
	t.Logf("tasks per process: %s", strings.Join(owners, ", "))
}

func newJSONRequest(t *testing.T, method, url string, body any) *http.Request {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func decodeBody(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
