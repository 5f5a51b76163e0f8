package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/fetch/fetchtest"
)

// TestServeFetchPolicy runs the real server with the fetch flags: a dog's
// code comes over HTTPS from an allowed local git server; codeUrls that
// point inside are refused when written; a fetch from a server that never
// answers ends on the idle time-out with a category for an error, and
// does not hold up another user's e-mail bark.
func TestServeFetchPolicy(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	commit := fetchtest.Repo(t, root, "rex")
	head := commit("second")
	git := fetchtest.NewServer(t, root)
	silent := fetchtest.Silent(t)
	_, silentPort, _ := net.SplitHostPort(silent)
	s := startProcess(t, "--data", t.TempDir(),
		"--fetch-allow-host", "127.0.0.1:"+git.Port()+",127.0.0.1:"+silentPort,
		"--fetch-ca-file", git.CAFile, "--fetch-idle-timeout", "1s")
	dogURI := barkUser(t, s, git.URL+"/git/rex")
	const alice, alicePW = "alice", "alice password 1"

	for _, u := range []string{
		"file://" + root + "/rex",
		"https://127.0.0.1:1/x.git", // the host is allowed with other ports only
		"https://0x7f.1:" + git.Port() + "/git/rex",
		"https://169.254.169.254/x.git",
		"https://alice:secret@example.org/x.git",
	} {
		resp, m := call(t, "PATCH", s.URL+dogURI, alice, alicePW, map[string]any{"codeUrl": u})
		if resp.StatusCode != 400 || !strings.Contains(mustJSON(m), `codeUrl`) {
			t.Errorf("PATCH codeUrl %q: got %d %v, want 400 naming codeUrl", u, resp.StatusCode, m)
		}
	}

	task := postAsync(t, s.URL, dogURI, "fetch-code")
	waitTasks(t, s.URL, dogURI, 1)
	if _, m := call(t, "GET", s.URL+task, alice, alicePW, nil); m["status"] != nil && m["status"] != "succeeded" {
		t.Fatalf("fetch over HTTPS: %v", m)
	}
	if _, m := call(t, "GET", s.URL+dogURI, alice, alicePW, nil); m["codeRevision"] != head {
		t.Fatalf("codeRevision: got %v, want %s", m["codeRevision"], head)
	}

	// Alice's code now comes from a server that never answers.
	if resp, m := call(t, "PATCH", s.URL+dogURI, alice, alicePW, map[string]any{"codeUrl": "https://" + silent + "/x.git"}); resp.StatusCode != 204 {
		t.Fatalf("PATCH codeUrl: %d %v", resp.StatusCode, m)
	}
	stalled := []string{}
	fido0 := time.Now()
	for range 6 {
		stalled = append(stalled, postAsync(t, s.URL, dogURI, "fetch-code"))
	}
	if resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "bob", "password": "bob password 12"}); resp.StatusCode != 201 {
		t.Fatalf("create bob: %d %v", resp.StatusCode, m)
	}
	resp, m := call(t, "POST", s.URL+"/v1/dogs", "bob", "bob password 12", map[string]any{"name": "Fido", "email": "fido@example.org", "barkEffect": "email"})
	if resp.StatusCode != 201 {
		t.Fatalf("create bob's dog: %d %v", resp.StatusCode, m)
	}
	fido := "/v1/dogs/" + m["id"].(string) + "/"
	// Wait for the fetches to be running.
	for running := false; !running; {
		for _, b := range stalled {
			if _, m := call(t, "GET", s.URL+b, alice, alicePW, nil); m["status"] == "running" {
				running = true
			}
		}
		if time.Since(fido0) > 20*time.Second {
			t.Fatal("no stalled fetch runs after 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	req := newJSONRequest(t, "POST", s.URL+fido+"barks", map[string]any{"effect": "email"})
	req.Header.Set("Prefer", "respond-async")
	req.SetBasicAuth("bob", "bob password 12")
	r, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 202 {
		t.Fatalf("bob's async bark: %d", r.StatusCode)
	}
	for {
		_, m := call(t, "GET", s.URL+r.Header.Get("Location")[len(s.URL):], "bob", "bob password 12", nil)
		if m["status"] == "succeeded" {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("bob's e-mail bark is still %v after 10 s", m["status"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("bob's e-mail bark took %s behind alice's stalled fetches, want under 2 s", d)
	}
	// The first stalled fetch ends on the idle time-out, named as such.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, m := call(t, "GET", s.URL+stalled[0], alice, alicePW, nil)
		if e, _ := m["error"].(string); e != "" {
			if !strings.HasPrefix(e, "timed out") || strings.Contains(e, silentPort) || m["output"] != "" && m["output"] != nil {
				t.Errorf("stalled fetch: error %q, output %v; want a time-out and no network text", e, m["output"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled fetch has no error after 20 s: %v", m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
