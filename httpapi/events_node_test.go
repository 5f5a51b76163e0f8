package httpapi_test

import (
	"bufio"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// npm's eventsource (the EventSource of Node.js programs), pinned.
const eventsourcePkg = "eventsource@5.1.5"

// npmInstall installs pkgs into a fresh directory and returns it; without
// npm the test is skipped, except under CI=true (scripts/test installs it).
func npmInstall(t *testing.T, pkgs ...string) string {
	t.Helper()
	npm := needTool(t, "npm")
	dir := t.TempDir()
	cmd := exec.Command(npm, append([]string{"install", "--silent", "--no-audit", "--no-fund", "--prefix", dir}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %v: %v\n%s", pkgs, err, out)
	}
	return dir
}

// nodeStream runs testdata/node/eventsource.mjs and returns its output
// lines as they come.
func nodeStream(t *testing.T, modules, caFile, url, user, last string, want int) <-chan map[string]any {
	t.Helper()
	script, _ := filepath.Abs("testdata/node/eventsource.mjs")
	copyTo := filepath.Join(modules, "eventsource.mjs") // next to node_modules
	raw, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyTo, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", copyTo, url, user, pw, last, strconv.Itoa(want))
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("node's stderr: %s", stderr.String())
		}
	})
	return lines
}

func nextLine(t *testing.T, lines <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m, ok := <-lines:
		if !ok {
			t.Fatal("node ended early")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("nothing from node within 30 s")
	}
	return nil
}

// TestEventsWithNodeEventSource drives the stream with npm's eventsource:
// it authenticates through the package's fetch option, reads a bark's
// events with their ids and types, and a second EventSource resuming with
// Last-Event-ID gets exactly the events after that id.
func TestEventsWithNodeEventSource(t *testing.T) {
	t.Parallel()
	modules := npmInstall(t, eventsourcePkg)
	db := storetest.Open(t, store.SQLite)
	env, _ := startEvents(t, db, events.Config{})
	env.CreateUser("alice", pw)
	_, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: env.Server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	lines := nodeStream(t, modules, caFile, env.URL+"/v1/events", "alice", "", 3)
	if m := nextLine(t, lines); m["open"] != true {
		t.Fatalf("first line %v, want open", m)
	}
	if r := env.Do(apitest.Request{Method: "POST", Path: dogURI + "barks", User: "alice", Password: pw}); r.StatusCode != 201 {
		t.Fatalf("bark: %d", r.StatusCode)
	}
	var got []map[string]any
	for range 3 {
		got = append(got, nextLine(t, lines))
	}
	for i, want := range []string{"bark.created", "bark.succeeded", "dog.updated"} {
		data, _ := got[i]["data"].(map[string]any)
		if got[i]["type"] != want || data["type"] != want || data["id"] != got[i]["id"] {
			t.Fatalf("event %d through eventsource: %v, want %s", i, got[i], want)
		}
	}

	// Resume after the first: exactly the other two.
	again := nodeStream(t, modules, caFile, env.URL+"/v1/events", "alice", got[0]["id"].(string), 2)
	if m := nextLine(t, again); m["open"] != true {
		t.Fatalf("first line %v, want open", m)
	}
	for i := 1; i < 3; i++ {
		if m := nextLine(t, again); m["id"] != got[i]["id"] {
			t.Fatalf("resumed event: %v, want id %v", m, got[i]["id"])
		}
	}
}
