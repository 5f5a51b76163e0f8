package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestMain doubles as the yard binary: with YARD_TEST_MAIN=1 the test
// binary runs main, so tests can start real server processes and kill them.
//
// The tests spend most of their time waiting (for server processes to
// start and stop, leases to expire, PostgreSQL to restart, browsers and
// client scripts), not computing: unless -parallel is given, twice as many
// parallel tests run at once as go test's default (GOMAXPROCS).
func TestMain(m *testing.M) {
	if os.Getenv("YARD_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	storetest.Main(m)
}

// server is a yard serve process or goroutine under test.
type server struct {
	URL      string
	Out      *syncBuffer
	Password string // the first admin's, when it was created
	cmd      *exec.Cmd
	cancel   context.CancelFunc
	done     chan error
}

type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int // calls of Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenRe = regexp.MustCompile(`listening on (https://\S+)`)
var adminRe = regexp.MustCompile(`created administrator "admin" with password (\S+)`)

func waitListening(t testing.TB, out *syncBuffer, done <-chan error) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := listenRe.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped before listening: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("serve did not listen in time:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startInProcess runs serve in a goroutine through run().
func startInProcess(t *testing.T, args ...string) *server {
	t.Helper()
	return startInProcessLogging(t, io.Discard, args...)
}

// startInProcessLogging is startInProcess with serve's log (its standard
// error) written to logs.
func startInProcessLogging(t *testing.T, logs io.Writer, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), func(string) string { return "" }, nil, out, logs)
	}()
	s := &server{Out: out, cancel: cancel, done: done}
	s.URL = waitListening(t, out, done)
	if m := adminRe.FindStringSubmatch(out.String()); m != nil {
		s.Password = m[1]
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) stop(t *testing.T) {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}
}

// startProcess runs serve as a separate process (this test binary).
func startProcess(t *testing.T, args ...string) *server {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "YARD_TEST_MAIN=1")
	out := &syncBuffer{}
	cmd.Stdout = out
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	s := &server{Out: out, cmd: cmd, done: done}
	s.URL = waitListening(t, out, done)
	if m := adminRe.FindStringSubmatch(out.String()); m != nil {
		s.Password = m[1]
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return s
}

func (s *server) kill9(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

var insecure = &http.Client{
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: true},
	Timeout:   30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func call(t testing.TB, method, url, user, pass string, body any) (*http.Response, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp, m
}

func TestServeAsANewUser(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startInProcess(t, "--data", data)
	if s.Password == "" {
		t.Fatalf("no admin password printed:\n%s", s.Out)
	}
	if !strings.Contains(s.Out.String(), "fingerprint") {
		t.Fatalf("no certificate fingerprint printed:\n%s", s.Out)
	}
	for _, f := range []string{"tls/cert.pem", "tls/key.pem", "yard.db"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	resp, person := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "alice", "password": "alice password 1"})
	if resp.StatusCode != 201 {
		t.Fatalf("create person: %d %v", resp.StatusCode, person)
	}
	resp, dog := call(t, "POST", s.URL+"/v1/dogs", "alice", "alice password 1", map[string]any{"name": "Rex", "email": "rex@example.org"})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %v", resp.StatusCode, dog)
	}
	loc := resp.Header.Get("Location")
	wantLoc := strings.Replace(s.URL, "127.0.0.1", "localhost", 1) + "/v1/dogs/" + dog["id"].(string) + "/"
	if loc != wantLoc {
		t.Fatalf("Location: got %q, want %q", loc, wantLoc)
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatal("no HSTS header")
	}
	resp, got := call(t, "GET", s.URL+"/v1/dogs/"+dog["id"].(string)+"/", "alice", "alice password 1", nil)
	if resp.StatusCode != 200 || got["name"] != "Rex" || resp.ProtoMajor != 2 {
		t.Fatalf("read dog: %d %v over HTTP/%d", resp.StatusCode, got, resp.ProtoMajor)
	}

	// A restart on the same data directory keeps everything and creates no
	// second admin.
	s.stop(t)
	s2 := startInProcess(t, "--data", data)
	if s2.Password != "" {
		t.Fatal("a second admin was created on restart")
	}
	resp, got = call(t, "GET", s2.URL+"/v1/dogs/"+dog["id"].(string)+"/", "alice", "alice password 1", nil)
	if resp.StatusCode != 200 || got["name"] != "Rex" {
		t.Fatalf("after restart: %d %v", resp.StatusCode, got)
	}
}

func TestServeOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := storetest.NewPostgresDatabase(t)
	s := startInProcess(t, "--data", t.TempDir(), "--db", dsn)
	resp, m := call(t, "GET", s.URL+"/readyz", "", "", nil)
	if resp.StatusCode != 200 || m["store"] != "postgres" {
		t.Fatalf("readyz: %d %v", resp.StatusCode, m)
	}
	resp, _ = call(t, "GET", s.URL+"/v1/people", "admin", s.Password, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("admin on postgres: %d", resp.StatusCode)
	}
}

func TestPlainHTTPRedirects(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	s := startInProcess(t, "--data", t.TempDir(), "--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--base-url", "https://yard.example")
	_ = s
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/v1/dogs?x=1", port), nil)
	req.SetBasicAuth("admin", "whatever")
	req.Header.Set("X-Request-Id", "plain-1")
	resp, err := insecure.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://yard.example/v1/dogs?x=1" || resp.Header.Get("X-Request-Id") != "plain-1" {
		t.Fatalf("plain HTTP: got %d to %q (X-Request-Id %q), want 308 to https with plain-1", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("X-Request-Id"))
	}
	// OPTIONS * (the server as a whole) is redirected too, to the root.
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://yard.example/" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("plain OPTIONS *: got %d to %q, want 308 to https://yard.example/ with a request id", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	env := func(string) string { return "" }
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env, nil, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "yard ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"migrate", "--data", data}, env, nil, &out, &errb); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	out.Reset()
	err := run(context.Background(), []string{"user", "add", "dana", "--admin", "--email", "dana@example.org", "--data", data}, env, strings.NewReader("dana's password\n"), &out, &errb)
	if err != nil || strings.Contains(out.String(), "password:") {
		t.Fatalf("user add with a password from stdin: %v %q", err, out.String())
	}
	out.Reset()
	// Flags read their environment twins; a flag on the command line wins.
	envData := func(k string) string {
		if k == "YARD_DATA" {
			return data
		}
		return ""
	}
	if err := run(context.Background(), []string{"user", "add", "eve"}, envData, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("user add from env: %v", err)
	}
	if !strings.Contains(out.String(), "password: ") {
		t.Fatalf("generated password not printed: %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"user", "list"}, envData, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "dana") || !strings.Contains(out.String(), "admin,user") || !strings.Contains(out.String(), "eve") {
		t.Fatalf("user list: %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"user", "passwd", "eve"}, envData, strings.NewReader("eve's new password\n"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"user", "add", "dana", "--data", data}, env, strings.NewReader(""), &out, &errb); err == nil {
		t.Fatal("duplicate user add succeeded")
	}
	if err := run(context.Background(), []string{"user", "add", "x", "--data", data}, env, strings.NewReader("short\n"), &out, &errb); err == nil {
		t.Fatal("short password accepted")
	}
	if err := run(context.Background(), []string{"frobnicate"}, env, nil, &out, &errb); exitCode(err) != 2 {
		t.Fatalf("unknown command: %v", err)
	}
	if err := run(context.Background(), []string{"serve", "--tls-cert", "x"}, env, nil, &out, &errb); exitCode(err) != 2 {
		t.Fatalf("--tls-cert without --tls-key: %v", err)
	}
	for _, lease := range []string{"-1s", "100ms", "11s"} {
		if err := run(context.Background(), []string{"serve", "--data", data, "--car-read-lease", lease}, env, nil, &out, &errb); exitCode(err) != 2 {
			t.Fatalf("--car-read-lease %s: %v", lease, err)
		}
	}
	// Signing in works with the password from stdin.
	s := startInProcess(t, "--data", data)
	if resp, _ := call(t, "GET", s.URL+"/v1/people", "dana", "dana's password", nil); resp.StatusCode != 200 {
		t.Fatalf("dana signs in: %d", resp.StatusCode)
	}
	if resp, _ := call(t, "GET", s.URL+"/v1/dogs", "eve", "eve's new password", nil); resp.StatusCode != 200 {
		t.Fatalf("eve signs in with her new password: %d", resp.StatusCode)
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	s := startInProcess(t, "--data", t.TempDir(), "--demo")
	re := regexp.MustCompile(`demo: created person "alice" with password (\S+)`)
	m := re.FindStringSubmatch(s.Out.String())
	if m == nil {
		t.Fatalf("no demo person:\n%s", s.Out)
	}
	resp, page := call(t, "GET", s.URL+"/v1/dogs", "alice", m[1], nil)
	if resp.StatusCode != 200 || page["total"].(float64) < 1 {
		t.Fatalf("demo dogs: %d %v", resp.StatusCode, page)
	}
}

// TestKillDuringWrites kills the server with SIGKILL while clients create
// dogs, then checks that every acknowledged dog survived and the store
// opens clean.
func TestKillDuringWrites(t *testing.T) {
	t.Parallel()
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			data := t.TempDir()
			args := []string{"--data", data}
			if engine == store.Postgres {
				args = append(args, "--db", storetest.NewPostgresDatabase(t))
			}
			s := startProcess(t, args...)
			w := startDogWriters(s.URL, s.Password, 4)
			w.waitFor(t, 30, 10*time.Second)
			s.kill9(t)
			acked := w.stop()
			if len(acked) == 0 {
				t.Fatal("no write was acknowledged before the kill")
			}
			s2 := startProcess(t, args...)
			if s2.Password != "" {
				t.Fatal("restart after kill created a new admin: the store lost its users")
			}
			for _, id := range acked {
				resp, _ := call(t, "GET", s2.URL+"/v1/dogs/"+id+"/", "admin", s.Password, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("acknowledged dog %s lost after kill -9: %d", id, resp.StatusCode)
				}
			}
			t.Logf("%d acknowledged writes all survived kill -9", len(acked))
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := (&netListen{}).listen()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestServeOffersAEADOnly: TLS 1.2 with a CBC suite (what scanners flag
// for LUCKY13) or an RSA key exchange is refused; the AEAD suites and TLS
// 1.3 are accepted; TLS 1.1 is refused.
func TestServeOffersAEADOnly(t *testing.T) {
	t.Parallel()
	s := startInProcess(t, "--data", t.TempDir())
	host := strings.TrimPrefix(s.URL, "https://")
	dial := func(min, max uint16, suites ...uint16) error {
		c, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true, MinVersion: min, MaxVersion: max, CipherSuites: suites})
		if err == nil {
			c.Close()
		}
		return err
	}
	for _, bad := range []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_CBC_SHA} {
		if err := dial(tls.VersionTLS12, tls.VersionTLS12, bad); err == nil {
			t.Errorf("TLS 1.2 with %s was accepted", tls.CipherSuiteName(bad))
		}
	}
	if err := dial(tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256); err != nil {
		t.Errorf("TLS 1.2 with the AEAD suites: %v", err)
	}
	if err := dial(tls.VersionTLS13, tls.VersionTLS13); err != nil {
		t.Errorf("TLS 1.3: %v", err)
	}
	if err := dial(tls.VersionTLS10, tls.VersionTLS11); err == nil {
		t.Error("TLS 1.1 was accepted")
	}
}

// TestServeClosesAfterTransferEncoding: a request framed by
// Transfer-Encoding, with a Content-Length beside it or not, is answered
// and its connection closed, so the request pipelined behind it is never
// served (RFC 9112 §6.1): the log has no line of it. So is an HTTP/1.0
// request's. Other HTTP/1.1 requests keep the connection, and HTTP/2 and
// Request.TLS (HSTS) are as before.
func TestServeClosesAfterTransferEncoding(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := startInProcessLogging(t, logs, "--data", t.TempDir())
	host := strings.TrimPrefix(s.URL, "https://")
	pipeline := func(reqs string) []*http.Response {
		t.Helper()
		c, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, reqs); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		var got []*http.Response
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("after %d responses the connection was not closed: %v", len(got), err)
				}
				return got
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			got = append(got, resp)
		}
	}
	health := func(id string) string {
		return "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: " + id + "\r\n\r\n"
	}
	const login = "POST /sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
	const body = "2c\r\n{\"username\":\"nobody\",\"password\":\"wrong-one\"}\r\n0\r\n\r\n"

	for _, tc := range []struct {
		name, reqs string
		want       []int // the statuses answered, the last one closing
	}{
		{"Content-Length and Transfer-Encoding", health("both-1") + login + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + body + health("both-smuggled"), []int{200, 401}},
		{"Transfer-Encoding alone", health("chunked-1") + login + "Transfer-Encoding: chunked\r\n\r\n" + body + health("chunked-smuggled"), []int{200, 401}},
		{"HTTP/1.0 kept alive", "GET /healthz HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\nX-Request-Id: old-1\r\n\r\n" + health("old-smuggled"), []int{200}},
	} {
		got := pipeline(tc.reqs)
		var statuses []int
		for _, r := range got {
			statuses = append(statuses, r.StatusCode)
		}
		if !slices.Equal(statuses, tc.want) {
			t.Errorf("%s: statuses %v, want %v (nothing behind the request after the close)", tc.name, statuses, tc.want)
			continue
		}
		if last := got[len(got)-1]; !last.Close {
			t.Errorf("%s: the last answer does not say Connection: close: %v", tc.name, last.Header)
		}
		for _, r := range got[:len(got)-1] {
			if r.Close {
				t.Errorf("%s: an answer before the last one closes the connection", tc.name)
			}
		}
	}
	// Requests without Transfer-Encoding keep the connection (the last
	// one here asks to close it).
	if got := pipeline(health("kept-1") + "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: kept-2\r\nConnection: close\r\n\r\n"); len(got) != 2 || got[0].Close {
		t.Errorf("two plain requests: %d answers, want 2 on one connection", len(got))
	}
	// Nothing behind a closing request was served: the log, written in
	// batches in the order of the requests' ends (logbuf.go), has the
	// requests before and none behind.
	want := []string{"both-1", "chunked-1", "old-1", "kept-2"}
	logged := func(log string) bool {
		return !slices.ContainsFunc(want, func(id string) bool { return !strings.Contains(log, `"request_id":"`+id+`"`) })
	}
	log := logs.String()
	for deadline := time.Now().Add(5 * time.Second); !logged(log) && time.Now().Before(deadline); log = logs.String() {
		time.Sleep(10 * time.Millisecond)
	}
	if !logged(log) {
		t.Errorf("no log line of one of %v in\n%s", want, log)
	}
	for _, id := range []string{"both-smuggled", "chunked-smuggled", "old-smuggled"} {
		if strings.Contains(log, id) {
			t.Errorf("%s, sent behind a closing request, was served:\n%s", id, log)
		}
	}

	// OPTIONS * (RFC 9110 §9.3.7) is the API's, with its headers, not
	// net/http's bare 200; HSTS says Request.TLS is there over HTTP/1.1.
	star := pipeline("OPTIONS * HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: star-1\r\nConnection: close\r\n\r\n")
	if len(star) != 1 || star[0].StatusCode != 204 || star[0].Header.Get("Allow") == "" ||
		star[0].Header.Get("X-Request-Id") != "star-1" || star[0].Header.Get("Strict-Transport-Security") == "" {
		for _, r := range star {
			t.Logf("%d %v", r.StatusCode, r.Header)
		}
		t.Errorf("OPTIONS *: want one 204 with Allow, the request id and HSTS")
	}

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	resp, err := hc.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("HTTP/2 request: proto %s, HSTS %q", resp.Proto, resp.Header.Get("Strict-Transport-Security"))
	}
}

// TestDebugAddr: --debug-addr serves the profiler on a loopback address
// and refuses any other address before starting.
func TestDebugAddr(t *testing.T) {
	t.Parallel()
	if _, stderr, code := cli(t, "serve", "--data", t.TempDir(), "--debug-addr", "0.0.0.0:0"); code != 2 || !strings.Contains(stderr, "loopback") {
		t.Fatalf("--debug-addr 0.0.0.0:0: exit %d, %s", code, stderr)
	}
	port := freePort(t)
	s := startInProcess(t, "--data", t.TempDir(), "--debug-addr", fmt.Sprintf("127.0.0.1:%d", port))
	if !strings.Contains(s.Out.String(), "profiler on http://127.0.0.1:") {
		t.Fatalf("no profiler line in %q", s.Out.String())
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/cmdline", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/debug/pprof/cmdline: %d", resp.StatusCode)
	}
	// The metrics, without the credentials the API's /metrics needs.
	resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "yard_bark_tasks_pending") {
		t.Fatalf("debug /metrics: %d %.200s", resp.StatusCode, body)
	}
	// The runtime's and the process's gauges, which the console's server
	// page shows.
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_open_fds", "process_resident_memory_bytes"} {
		if !strings.Contains(string(body), "\n"+name+" ") {
			t.Errorf("debug /metrics has no %s", name)
		}
	}
}

// dogWriters are clients creating dogs as the administrator, one after
// another, until stopped; acked holds the ids of the dogs answered 201.
type dogWriters struct {
	mu    sync.Mutex
	acked []string
	done  chan struct{}
	wg    sync.WaitGroup
}

// startDogWriters starts n writers against the server at base.
func startDogWriters(base, password string, n int) *dogWriters {
	d := &dogWriters{done: make(chan struct{})}
	for w := range n {
		d.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-d.done:
					return
				default:
				}
				b, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("w%d-%d", w, i), "email": "d@example.org"})
				req, _ := http.NewRequest("POST", base+"/v1/dogs", bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth("admin", password)
				resp, err := insecure.Do(req)
				if err != nil {
					return
				}
				var dog map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&dog)
				resp.Body.Close()
				if id, ok := dog["id"].(string); ok && resp.StatusCode == 201 {
					d.mu.Lock()
					d.acked = append(d.acked, id)
					d.mu.Unlock()
				}
			}
		})
	}
	return d
}

// answered returns the ids answered so far.
func (d *dogWriters) answered() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.acked...)
}

// waitFor waits until n dogs were answered, failing t after limit.
func (d *dogWriters) waitFor(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for len(d.answered()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes answered in %s", len(d.answered()), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop stops the writers and returns every id answered.
func (d *dogWriters) stop() []string {
	close(d.done)
	d.wg.Wait()
	return d.answered()
}
