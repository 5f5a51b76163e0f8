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
	"testing"
)

// Server is an HTTPS test server, closed when the test ends.
type Server struct {
	*httptest.Server
	// CAFile holds the server's certificate (PEM), for GIT_SSL_CAINFO.
	CAFile string
}

// NewServer starts a server of the repositories under root (Git).
func NewServer(t testing.TB, root string) *Server {
	t.Helper()
	return Serve(t, Git(t, root))
}

// Git is git's http-backend serving the repositories under root at
// /git/<name>.
func Git(t testing.TB, root string) http.Handler {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	return &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Root: "/git",
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
}

// Serve starts a server of h.
func Serve(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{Server: httptest.NewTLSServer(h), CAFile: filepath.Join(t.TempDir(), "ca.pem")}
	t.Cleanup(s.Close)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(s.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
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
