package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// blockedFetch never finishes while the test runs: the fetch-code barks of
// the server that takes the writes stay running and pending.
const blockedFetch = `["sh", "-c", "exec sleep 600", "{url}", "{dir}"]`

// countingFetch is slowFetch that appends a line to a file on each run,
// instead of sleeping: the runs of fetch-code barks can be counted.
func countingFetch(count string) string {
	return strings.Replace(slowFetch, "sleep 0.5;", "echo run >> "+count+";", 1)
}

// do sends one request with Basic credentials and returns the status, the
// Location header and the decoded JSON body; it may run in any goroutine.
func do(method, url, user, pass string, body any, header ...string) (int, string, map[string]any, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, "", nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, resp.Header.Get("Location"), m, nil
}

// pathOf is the path of a Location: a restored server answers on another
// port.
func pathOf(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil || u.Path == "" {
		t.Fatalf("Location %q", loc)
	}
	return u.Path
}

// terminate stops a serve process with SIGTERM (a graceful shutdown).
func (s *server) terminate(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// TestBackupUnderWritesRestores: 16 clients write dogs, barks, cars,
// orders and OAuth consumers through the API of a serve process while
// yard backup runs; the server is stopped and yard restore installs the
// backup. The restored store passes its integrity checks, a server on it
// holds every write answered before the backup began and answers every
// endpoint, and each bark task that was pending or running in the backup
// runs exactly once.
func TestBackupUnderWritesRestores(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	count := filepath.Join(t.TempDir(), "fetch-runs")
	common := []string{"--data", data, "--fetch-allow-dir", os.TempDir(), "--fetch-timeout", "10m", "--fetch-idle-timeout", "10m"}
	s := startProcess(t, append([]string{"--fetch-command", blockedFetch}, common...)...)
	admin, pw := "admin", s.Password
	const alice, alicePW = "alice", "alice password 1"
	fetchDog := barkUser(t, s, localGitRepo(t))
	const fetches = 3
	var fetchBarks []string
	for range fetches {
		fetchBarks = append(fetchBarks, postAsync(t, s.URL, fetchDog, "fetch-code"))
	}
	// One fetch runs (blocked), the others wait: --fetch-per-user 1.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, bark := call(t, "GET", s.URL+fetchBarks[0], alice, alicePW, nil)
		if bark["status"] == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first fetch-code bark is not running: %v", bark)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, _, garage, err := do("POST", s.URL+"/garages", admin, pw, map[string]any{"name": "Backups", "state": "WA"})
	if err != nil || code != 201 {
		t.Fatalf("create garage: %d %v %v", code, garage, err)
	}

	// What each client wrote and when the answer arrived.
	type write struct {
		kind, path string // path: the Location answered
		answered   time.Time
	}
	const clients = 16
	kinds := []string{"dog", "bark", "car", "order", "consumer"}
	var (
		mu     sync.Mutex
		writes []write
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		errs   = make(chan error, clients)
	)
	barkDogs := make([]string, clients)
	for c := range clients {
		if kinds[c%len(kinds)] == "bark" {
			code, loc, m, err := do("POST", s.URL+"/v1/dogs", alice, alicePW, map[string]any{"name": fmt.Sprintf("Barker %d", c), "email": "b@example.org"})
			if err != nil || code != 201 {
				t.Fatalf("create dog: %d %v %v", code, m, err)
			}
			barkDogs[c] = pathOf(t, loc)
		}
	}
	for c := range clients {
		kind := kinds[c%len(kinds)]
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var code int
				var loc string
				var err error
				switch kind {
				case "dog":
					code, loc, _, err = do("POST", s.URL+"/v1/dogs", alice, alicePW, map[string]any{"name": fmt.Sprintf("Dog %d-%d", c, i), "email": "d@example.org"})
				case "bark":
					code, loc, _, err = do("POST", s.URL+barkDogs[c]+"barks", alice, alicePW, map[string]any{"effect": "record"}, "Prefer", "respond-async")
				case "car":
					code, loc, _, err = do("POST", s.URL+"/cars", admin, pw, map[string]any{"color": "Red", "type": "van", "doors": 5, "make": "Ford",
						"model": fmt.Sprintf("M%d-%d", c, i), "year": 2017, "garage": garage["id"]})
				case "order":
					code, loc, _, err = do("POST", s.URL+"/orders", alice, alicePW, map[string]any{})
				case "consumer":
					code, loc, _, err = do("POST", s.URL+"/oauth/consumers", admin, pw, map[string]any{"name": fmt.Sprintf("Consumer %d-%d", c, i)})
				}
				answered := time.Now()
				if err != nil {
					select {
					case <-stop: // the server may be stopping
					default:
						errs <- fmt.Errorf("%s: %v", kind, err)
					}
					return
				}
				if code != 201 && code != 202 {
					errs <- fmt.Errorf("%s: status %d", kind, code)
					return
				}
				mu.Lock()
				writes = append(writes, write{kind, loc, answered})
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second) // writes before the backup

	began := time.Now()
	var out, errb bytes.Buffer
	err = run(context.Background(), []string{"backup", "--data", data}, func(string) string { return "" }, nil, &out, &errb)
	if err != nil {
		t.Fatalf("yard backup: %v\n%s", err, errb.String())
	}
	took := time.Since(began)
	time.Sleep(300 * time.Millisecond) // writes after it
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	backup := strings.TrimSuffix(out.String(), "\n")
	if strings.ContainsAny(backup, " \n") || !strings.Contains(errb.String(), "backing up") || !strings.Contains(errb.String(), "into "+backup) {
		t.Fatalf("yard backup printed\n%s\n%s", out.String(), errb.String())
	}
	if filepath.Dir(backup) != filepath.Join(data, "backups") || !regexp.MustCompile(`^yard-\d{8}T\d{6}Z\.db$`).MatchString(filepath.Base(backup)) {
		t.Fatalf("backup file %s: want DATA/backups/yard-TIME.db", backup)
	}
	s.terminate(t)

	out.Reset()
	errb.Reset()
	if err := run(context.Background(), []string{"restore", backup, "--data", data}, func(string) string { return "" }, nil, &out, &errb); err != nil {
		t.Fatalf("yard restore: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "integrity_check") || !strings.Contains(out.String(), "kept as "+filepath.Join(data, "yard.db.replaced-")) ||
		!strings.Contains(out.String(), "will run again, once") {
		t.Fatalf("yard restore printed\n%s\n%s", out.String(), errb.String())
	}

	r := startProcess(t, append([]string{"--fetch-command", countingFetch(count)}, common...)...)
	if r.Password != "" {
		t.Fatal("the restored store has no administrator: a new one was made")
	}
	answeredBefore := map[string]int{}
	for _, w := range writes {
		if !w.answered.Before(began) {
			continue
		}
		answeredBefore[w.kind]++
		user, pass := alice, alicePW
		if w.kind == "consumer" || w.kind == "car" {
			user, pass = admin, pw
		}
		if code, _, body, err := do("GET", r.URL+pathOf(t, w.path), user, pass, nil); err != nil || code != 200 {
			t.Fatalf("%s %s, answered before the backup began, after restore: %d %v %v", w.kind, w.path, code, body, err)
		}
	}
	for _, k := range kinds {
		if answeredBefore[k] == 0 {
			t.Errorf("no %s write was answered before the backup began", k)
		}
	}

	// Every endpoint answers on the restored store.
	someDog := fetchDog
	for _, tc := range []struct {
		path, user string
		header     []string
	}{
		{"/readyz", "", nil},
		{"/v1/people", admin, nil},
		{"/v1/dogs", alice, nil},
		{"/v2/dogs", alice, nil},
		{someDog, alice, nil},
		{someDog + "barks", alice, nil},
		{"/cars", "", nil},
		{"/cars?color=Red", "", nil},
		{"/garages", "", nil},
		{"/garages/" + garage["id"].(string) + "/cars", "", nil},
		{"/orders", alice, nil},
		{"/oauth/consumers", admin, nil},
		{"/oauth/authorizations", alice, nil},
		{"/v1/events", alice, []string{"Accept", "application/json"}},
		{"/v1/webhooks", alice, nil},
		{"/searches", admin, nil},
		{"/.well-known/jwks.json", "", nil},
		{"/openapi.json", "", nil},
	} {
		pass := alicePW
		if tc.user == admin {
			pass = pw
		}
		code, _, body, err := do("GET", r.URL+tc.path, tc.user, pass, nil, tc.header...)
		if err != nil || code != 200 {
			t.Errorf("GET %s on the restored store: %d %v %v", tc.path, code, body, err)
		}
	}

	// Each bark task of the backup runs exactly once: the fetches (one
	// was running under a lease of the stopped server, the others
	// pending) run once each, and the record barks count once each.
	all := waitTasks(t, r.URL, fetchDog, fetches)
	for _, b := range all {
		if b["status"] != "succeeded" {
			t.Errorf("fetch bark %v: %v (%v)", b["id"], b["status"], b["error"])
		}
	}
	runs, _ := os.ReadFile(count)
	if n := strings.Count(string(runs), "run\n"); n != fetches {
		t.Errorf("fetch runs on the restored server: got %d, want %d", n, fetches)
	}
	var records, retaken int
	for _, dog := range barkDogs {
		if dog == "" {
			continue
		}
		barks := waitTasks(t, r.URL, dog, 0)
		for _, b := range barks {
			if b["status"] != "succeeded" {
				t.Errorf("record bark %v: %v", b["id"], b["status"])
			}
			if b["attempts"].(float64) > 1 {
				retaken++ // running in the backup: its attempt counted there
			}
		}
		records += len(barks)
		_, d := call(t, "GET", r.URL+dog, alice, alicePW, nil)
		if d["barkCount"] != float64(len(barks)) {
			t.Errorf("dog %s: barkCount %v, want %d (each record bark once)", dog, d["barkCount"], len(barks))
		}
	}

	db, err := store.Open(context.Background(), "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.Read().QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check of the restored store after serving: %q %v", check, err)
	}
	t.Logf("%d writes (%v before the backup began); backup took %s; %d record barks (%d running in the backup) and %d fetches ran once each on the restored store",
		len(writes), answeredBefore, took.Round(time.Millisecond), records, retaken, fetches)
}

// TestRestoreRefusesRunningServer: yard restore against the store of a
// running serve process refuses, exits 1 and changes nothing.
func TestRestoreRefusesRunningServer(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startProcess(t, "--data", data)
	code, loc, dog, err := do("POST", s.URL+"/v1/dogs", "admin", s.Password, map[string]any{"name": "Rex", "email": "rex@example.org"})
	if err != nil || code != 201 {
		t.Fatalf("create dog: %d %v %v", code, dog, err)
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, stderr, code := cli(t, "backup", "--data", data, "--out", backup); code != 0 {
		t.Fatalf("backup of a serving store: exit %d\n%s", code, stderr)
	}
	names := func() []string {
		entries, _ := os.ReadDir(data)
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		return n
	}
	before := names()
	storeFile, _ := os.Stat(filepath.Join(data, "yard.db"))

	_, stderr, code := cli(t, "restore", backup, "--data", data)
	if code != 1 || !strings.Contains(stderr, "in use") || !strings.Contains(stderr, "Nothing was changed") {
		t.Fatalf("restore under a running server: exit %d\n%s", code, stderr)
	}
	if after := names(); !slices.Equal(before, after) {
		t.Errorf("the refused restore changed the data directory: %v, then %v", before, after)
	}
	if now, _ := os.Stat(filepath.Join(data, "yard.db")); !os.SameFile(storeFile, now) {
		t.Error("the refused restore replaced yard.db")
	}
	if code, _, _, err := do("GET", s.URL+pathOf(t, loc), "admin", s.Password, nil); err != nil || code != 200 {
		t.Errorf("the server after a refused restore: %d %v", code, err)
	}
}

// TestBackupEveryTwoProcesses: a serve process with --backup-every and a
// second process (this test, asking at random moments, so that either may
// be first) share one data directory: between them one backup is taken
// per interval, and the directory keeps the newest --backup-keep.
func TestBackupEveryTwoProcesses(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const every, keep = 2 * time.Second, 3
	startProcess(t, "--data", data, "--backup-every", every.String(), "--backup-keep", fmt.Sprint(keep))
	db, err := store.Open(context.Background(), "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := filepath.Join(data, "backups")
	var mine atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			res, err := db.ScheduledBackup(ctx, dir, every, keep)
			if err != nil && ctx.Err() == nil {
				t.Errorf("this process's scheduled backup: %v", err)
				return
			}
			if res.Taken != nil {
				mine.Add(1)
			}
			time.Sleep(time.Duration(rand.Int64N(int64(every / 4))))
		}
	}()
	seen := map[string]bool{}
	start := time.Now()
	for time.Since(start) < 9*time.Second {
		names, _ := store.Backups(dir)
		for _, n := range names {
			seen[filepath.Base(n)] = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	var all []string
	for n := range seen {
		all = append(all, n)
	}
	slices.Sort(all)
	if len(all) < 3 || len(all) > 6 {
		t.Fatalf("backups taken in 9 s at one per %s: %v", every, all)
	}
	for i := 1; i < len(all); i++ {
		a, _ := time.Parse("yard-20060102T150405Z.db", all[i-1])
		b, _ := time.Parse("yard-20060102T150405Z.db", all[i])
		if b.Sub(a) < every {
			t.Errorf("backups %s and %s are %s apart: two in one interval", all[i-1], all[i], b.Sub(a))
		}
	}
	kept, _ := store.Backups(dir)
	for i, n := range kept {
		kept[i] = filepath.Base(n)
	}
	slices.Reverse(all)
	if len(kept) > keep || !slices.Equal(kept, all[:len(kept)]) {
		t.Errorf("kept %v, want the newest %d of %v", kept, keep, all)
	}
	t.Logf("%d backups, %d of them by this process; kept %v", len(all), mine.Load(), kept)
}

// TestDurabilityAndBackupFlags: serve prints the durability in effect
// (FULL unless --sqlite-sync normal); the flags' bad values are usage
// errors; backup and restore of PostgreSQL point to pg_dump.
func TestDurabilityAndBackupFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "durability: sqlite synchronous=FULL: an answered write survives a crash of the process and a power failure"},
		{[]string{"--sqlite-sync", "full"}, "durability: sqlite synchronous=FULL"},
		{[]string{"--sqlite-sync", "normal"}, "durability: sqlite synchronous=NORMAL: an answered write survives a crash of the process; a power failure may lose"},
	} {
		s := startInProcess(t, append([]string{"--data", t.TempDir()}, tc.args...)...)
		if !strings.Contains(s.Out.String(), tc.want) {
			t.Errorf("serve %v printed\n%s\nwant %q", tc.args, s.Out.String(), tc.want)
		}
		s.stop(t)
	}
	t.Run(store.Postgres, func(t *testing.T) {
		s := startInProcess(t, "--data", t.TempDir(), "--db", storetest.NewPostgresDatabase(t))
		if !regexp.MustCompile(`durability: postgres synchronous_commit=\w+, fsync=\w+`).MatchString(s.Out.String()) {
			t.Errorf("serve on PostgreSQL printed\n%s", s.Out.String())
		}
	})

	data := t.TempDir()
	pg := "postgres://nobody@127.0.0.1:1/none"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--data", data, "--sqlite-sync", "off"}, 2, "--sqlite-sync must be full or normal"},
		{[]string{"serve", "--data", data, "--backup-every", "10ms"}, 2, "--backup-every must be 0 (never) or at least 1s"},
		{[]string{"serve", "--data", data, "--backup-keep", "0"}, 2, "--backup-keep must be at least 1"},
		{[]string{"serve", "--data", data, "--backup-every", "6h", "--db", pg}, 2, "pg_dump"},
		{[]string{"backup", "--data", data, "--db", pg}, 1, "pg_dump -Fc"},
		{[]string{"restore", "x.dump", "--data", data, "--db", pg}, 1, "pg_restore"},
		{[]string{"restore", "--data", data}, 2, "restore needs a FILE"},
		{[]string{"backup", "--data", data, "extra"}, 2, `backup: unexpected argument "extra"`},
		{[]string{"backup", "--data", filepath.Join(data, "none")}, 1, "no store to back up"},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("yard %s: exit %d\n%s\nwant exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
	if entries, _ := os.ReadDir(data); len(entries) > 0 {
		t.Errorf("refused commands wrote into the data directory: %v", entries)
	}
}
