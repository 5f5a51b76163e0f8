package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/store/storetest"
)

// TestPostgresDumpAndRestore runs the path docs/operations.md gives for
// PostgreSQL: pg_dump -Fc while 16 clients write, pg_restore into a fresh
// database, serve from it. Every write answered before the dump began is
// there. Then the same dump into a fresh cluster, whose transaction counter
// is behind the store's stamps: yard refuses to serve it and says how to
// move the counter; done as it says, yard serves it, and a new change is
// ordered after every restored one.
func TestPostgresDumpAndRestore(t *testing.T) {
	t.Parallel()
	own := storetest.NewCluster(t) // for its binaries, and as the fresh cluster
	src := storetest.NewPostgresDatabase(t)
	s := startInProcess(t, "--data", t.TempDir(), "--db", src)

	writers := startDogWriters(s.URL, s.Password, 16)
	writers.waitFor(t, 50, 20*time.Second)
	before := writers.answered()
	dump := filepath.Join(t.TempDir(), "yard.dump")
	if out, err := runTool(filepath.Join(own.Bin(), "pg_dump"), "-Fc", "--no-owner", "-f", dump, "-d", src); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	t.Logf("%d writes answered before the dump began, %d in all", len(before), len(writers.stop()))

	restore := func(dsn string) {
		t.Helper()
		if out, err := runTool(filepath.Join(own.Bin(), "pg_restore"), "--no-owner", "--exit-on-error", "--single-transaction", "-d", dsn, dump); err != nil {
			t.Fatalf("pg_restore: %v\n%s", err, out)
		}
	}
	check := func(dsn string) {
		t.Helper()
		r := startInProcess(t, "--data", t.TempDir(), "--db", dsn)
		if r.Password != "" {
			t.Fatal("the restored store had no admin: a new one was created")
		}
		for _, id := range before {
			if resp, _ := call(t, "GET", r.URL+"/v1/dogs/"+id+"/", "admin", s.Password, nil); resp.StatusCode != 200 {
				t.Fatalf("dog %s, answered before the dump began, is not in the restore: %d", id, resp.StatusCode)
			}
		}
		// A change after the restore is ordered after every restored one.
		newest := ""
		for {
			items, next := eventsAfter(t, r.URL, s.Password, newest)
			if len(items) == 0 {
				break
			}
			newest = next
		}
		resp, d := call(t, "POST", r.URL+"/v1/dogs", "admin", s.Password, map[string]any{"name": "after", "email": "a@example.org"})
		if resp.StatusCode != 201 {
			t.Fatalf("write after the restore: %d", resp.StatusCode)
		}
		// The event is read once the transactions of the other tests on
		// this cluster that began before it have ended (docs/events.md).
		var items []map[string]any
		for deadline := time.Now().Add(20 * time.Second); len(items) == 0 && time.Now().Before(deadline); {
			if items, _ = eventsAfter(t, r.URL, s.Password, newest); len(items) == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if len(items) == 0 || !strings.HasSuffix(items[0]["subject"].(string), "/v1/dogs/"+d["id"].(string)+"/") {
			t.Fatalf("the new dog's event is not the first after the restored events (newest %s): %v", newest, items)
		}
		r.stop(t)
	}

	// A fresh database of the same cluster.
	same := storetest.NewPostgresDatabase(t)
	restore(same)
	check(same)

	// A fresh cluster: its transaction counter is behind the stamps.
	fresh := own.NewDatabase(t)
	restore(fresh)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--db", fresh}, func(string) string { return "" }, nil, &out, io.Discard)
	if err == nil {
		t.Fatal("yard served a store whose stamps are ahead of the cluster's transaction counter")
	}
	m := regexp.MustCompile(`pg_xact/([0-9A-F]{4}) .*pg_resetwal -e (\d+) -x (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the refusal does not say what to run: %v", err)
	}
	own.Stop(t)
	segment := filepath.Join(own.DataDir(), "pg_xact", m[1])
	if _, err := os.Stat(segment); os.IsNotExist(err) {
		if out, err := own.Run("dd", "if=/dev/zero", "of="+segment, "bs=262144", "count=1"); err != nil {
			t.Fatalf("dd: %v\n%s", err, out)
		}
	}
	if out, err := own.Run(filepath.Join(own.Bin(), "pg_resetwal"), "-e", m[2], "-x", m[3], "-D", own.DataDir()); err != nil {
		t.Fatalf("pg_resetwal: %v\n%s", err, out)
	}
	own.Start(t)
	check(fresh)
}

// eventsAfter reads a page of events after an id ("" for the oldest) as
// the administrator.
func eventsAfter(t *testing.T, base, password, after string) (items []map[string]any, next string) {
	t.Helper()
	url := base + "/v1/events?max=100"
	if after != "" {
		url += "&after=" + after
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth("admin", password)
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Items []map[string]any `json:"items"`
		Next  string           `json:"next"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return page.Items, page.Next
}

func runTool(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}
