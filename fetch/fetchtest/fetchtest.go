// Package fetchtest serves git repositories over HTTPS for tests of code
// fetches: the real git http-backend behind a TLS test server, and a
// listener that accepts connections and never answers.
package fetchtest

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Server serves the repositories under a root directory over HTTPS at
// /git/<name>, and answers every request under /moved/ with a 302 as
// RedirectTo says.
type Server struct {
	*httptest.Server
	// CAFile holds the server's certificate (PEM), for GIT_SSL_CAINFO.
	CAFile string

	redirect atomic.Value // string, the prefix of RedirectTo
	mu       sync.Mutex
	parents  []string
}

// NewServer starts a server for the repositories under root.
func NewServer(t testing.TB, root string) *Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Root: "/git",
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	s := &Server{}
	mux := http.NewServeMux()
	mux.Handle("/git/", backend)
	mux.HandleFunc("/moved/", func(w http.ResponseWriter, r *http.Request) {
		to, _ := s.redirect.Load().(string)
		target := to + strings.TrimPrefix(r.URL.Path, "/moved/")
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusFound)
	})
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("traceparent"); tp != "" {
			s.mu.Lock()
			s.parents = append(s.parents, tp)
			s.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	s.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(s.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// TraceParents returns the traceparent headers of the requests so far.
func (s *Server) TraceParents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.parents...)
}

// RedirectTo makes /moved/<path> answer 302 to prefix+<path>.
func (s *Server) RedirectTo(prefix string) {
	s.redirect.Store(prefix)
}

// Port is the server's port.
func (s *Server) Port() string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return port
}

// Repo makes a bare-servable repository root/name with one commit and
// returns a function that adds a commit and returns its id.
func Repo(t testing.TB, root, name string) func(msg string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.org", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet")
	commit := func(msg string) string {
		if err := os.WriteFile(filepath.Join(dir, "bark.txt"), []byte(msg), 0o600); err != nil {
			t.Fatal(err)
		}
		git("add", "bark.txt")
		git("commit", "--quiet", "-m", msg)
		return git("rev-parse", "HEAD")
	}
	commit("first")
	return commit
}

// Silent listens on 127.0.0.1, accepts every connection and never writes
// to it (until the test ends). It returns the address.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}
