package fetch_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/fetch/fetchtest"
)

// httpsRunner is a runner that trusts srv's certificate.
func httpsRunner(srv *fetchtest.Server, p *fetch.Policy) *fetch.Runner {
	return &fetch.Runner{Timeout: time.Minute, Policy: p, Env: append(fetch.CleanEnv(), "GIT_SSL_CAINFO="+srv.CAFile)}
}

func TestHTTPSCloneThroughTheGuard(t *testing.T) {
	root := t.TempDir()
	commit := fetchtest.Repo(t, root, "rex")
	head := commit("second")
	srv := fetchtest.NewServer(t, root)
	r := httpsRunner(srv, &fetch.Policy{AllowHosts: []string{"127.0.0.1:" + srv.Port()}})
	target := filepath.Join(t.TempDir(), "code")
	res, err := r.Fetch(context.Background(), srv.URL+"/git/rex", target)
	if err != nil {
		t.Fatalf("clone: %v (%s)", err, res.Output)
	}
	if res.Revision != head {
		t.Fatalf("revision: got %q, want %q", res.Revision, head)
	}
	head = commit("third")
	if res, err = r.Fetch(context.Background(), srv.URL+"/git/rex", target); err != nil || res.Revision != head {
		t.Fatalf("fetch: got %q, %v, want %q", res.Revision, err, head)
	}
}

// TestRefusedTargets: every way of pointing a fetch inside the machine
// fails as "host not allowed" and clones nothing, whether the URL itself
// gives it away, its name resolves inside, or the server redirects inside.
func TestRefusedTargets(t *testing.T) {
	root := t.TempDir()
	fetchtest.Repo(t, root, "rex")
	repo := fetchtest.NewServer(t, root)
	// A second server the operator allows (with its port), redirecting to
	// the first, which is not allowed.
	mover := fetchtest.NewServer(t, t.TempDir())
	mover.RedirectTo(repo.URL + "/git/")
	allowedDir := t.TempDir()
	p := &fetch.Policy{
		AllowDirs:  []string{allowedDir},
		AllowHosts: []string{"127.0.0.1:" + mover.Port()},
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "inside.example":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "mapped.example":
				return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("::ffff:10.1.2.3")}, nil
			}
			return nil, errors.New("no such host")
		},
	}
	port := repo.Port()
	for _, u := range []string{
		"file://" + root + "/rex",
		"https://127.0.0.1:" + port + "/git/rex",
		"https://[::1]:" + port + "/git/rex",
		"https://[::ffff:127.0.0.1]:" + port + "/git/rex",
		"https://2130706433:" + port + "/git/rex",
		"https://0x7f.1:" + port + "/git/rex",
		"https://017700000001:" + port + "/git/rex",
		"https://127.1:" + port + "/git/rex",
		"https://169.254.169.254/latest/meta-data",
		"https://10.0.0.1/x.git",
		"https://100.64.0.1/x.git",
		"https://[fe80::1]/x.git",
		"https://[fd00::1]/x.git",
		"ssh://[::1]/x.git",
		"git@127.0.0.1:x.git",
		"https://localhost:" + port + "/git/rex",
		"https://inside.example:" + port + "/git/rex",
		"https://mapped.example:" + port + "/git/rex",
		"https://127.0.0.1:" + mover.Port() + "/moved/rex",
	} {
		t.Run(u, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "code")
			res, err := httpsRunner(repo, p).Fetch(context.Background(), u, target)
			var fe *fetch.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a fetch error", err)
			}
			t.Logf("%v; output %q", err, fe.Output)
			if fe.Kind != fetch.NotAllowed && !(strings.Contains(u, "/moved/") && fe.Kind == fetch.NotFound) {
				t.Errorf("kind: got %q, want %q", fe.Kind, fetch.NotAllowed)
			}
			if strings.Contains(err.Error(), ":"+port) || strings.Contains(err.Error(), "returned") {
				t.Errorf("the error shows network details: %v", err)
			}
			if _, serr := os.Stat(target); serr == nil || res.Revision != "" {
				t.Errorf("something was cloned into %s", target)
			}
		})
	}
}

// TestSilentServerEndsOnIdle: a server that accepts and never answers ends
// the fetch after the idle time-out, long before the total limit.
func TestSilentServerEndsOnIdle(t *testing.T) {
	addr := fetchtest.Silent(t)
	host, port, _ := net.SplitHostPort(addr)
	r := &fetch.Runner{Timeout: time.Minute, IdleTimeout: 500 * time.Millisecond,
		Policy: &fetch.Policy{AllowHosts: []string{host}}}
	start := time.Now()
	_, err := r.Fetch(context.Background(), "https://"+host+":"+port+"/x.git", filepath.Join(t.TempDir(), "code"))
	var fe *fetch.Error
	if !errors.As(err, &fe) || fe.Kind != fetch.TimedOut || !fe.Temp || !fe.TimedOut() {
		t.Fatalf("got %v, want a temporary time-out", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the stalled fetch ran %s with an idle time-out of 0.5s", d)
	}
}
