package fetch_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	mover := fetchtest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, repo.URL+"/git/"+strings.TrimPrefix(r.URL.RequestURI(), "/moved/"), http.StatusFound)
	}))
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
			if fe.Kind != fetch.NotAllowed && !(strings.Contains(u, "/moved/") && strings.Contains(err.Error(), "redirect")) {
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
	if !errors.As(err, &fe) || fe.Kind != fetch.TimedOut || !fe.Temp {
		t.Fatalf("got %v, want a temporary time-out", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the stalled fetch ran %s with an idle time-out of 0.5s", d)
	}
}

// TestSSHIsPinnedToTheCheckedAddress: ssh gets the address checked before
// the fetch, keeps the URL's name for the host key, and ignores proxies of
// its configuration. ssh -G prints the configuration ssh would use, so the
// options are checked by the real ssh.
func TestSSHIsPinnedToTheCheckedAddress(t *testing.T) {
	p := &fetch.Policy{Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		if host == "git.example" {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return nil, errors.New("no such host")
	}}
	r := &fetch.Runner{Policy: p, Command: []string{"sh", "-c", `eval "$GIT_SSH_COMMAND -G -p 2222 git@git.example"`, "{url}", "{dir}"}}
	res, err := r.Fetch(context.Background(), "ssh://git@git.example:2222/x.git", filepath.Join(t.TempDir(), "code"))
	if err != nil {
		t.Fatalf("%v: %s", err, res.Output)
	}
	for _, want := range []string{"\nhostname 93.184.215.14\n", "\nport 2222\n", "\nhostkeyalias [git.example]:2222\n",
		"\ncheckhostip no\n", "\nbatchmode yes\n", "\ncontrolmaster false\n"} {
		if !strings.Contains("\n"+res.Output, want) {
			t.Errorf("ssh configuration lacks %q:\n%s", strings.TrimSpace(want), res.Output)
		}
	}
	// A name with an address inside is refused before ssh runs.
	p.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.5")}, nil
	}
	_, err = r.Fetch(context.Background(), "git@git.example:x.git", filepath.Join(t.TempDir(), "code"))
	var fe *fetch.Error
	if !errors.As(err, &fe) || fe.Kind != fetch.NotAllowed {
		t.Fatalf("got %v, want %q", err, fetch.NotAllowed)
	}
}

// TestRebindingCaughtAtDialTime: a name that resolves to a public address
// when the fetch starts and to loopback when git connects is refused by
// the proxy, and nothing is cloned.
func TestRebindingCaughtAtDialTime(t *testing.T) {
	root := t.TempDir()
	fetchtest.Repo(t, root, "rex")
	srv := fetchtest.NewServer(t, root)
	var calls atomic.Int32
	p := &fetch.Policy{Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		if calls.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}
	target := filepath.Join(t.TempDir(), "code")
	_, err := httpsRunner(srv, p).Fetch(context.Background(), "https://rebind.example:"+srv.Port()+"/git/rex", target)
	var fe *fetch.Error
	if !errors.As(err, &fe) || fe.Kind != fetch.NotAllowed {
		t.Fatalf("got %v, want %q", err, fetch.NotAllowed)
	}
	if calls.Load() < 2 {
		t.Errorf("the name was resolved %d times, want again at connection time", calls.Load())
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("something was cloned")
	}
}

func TestCheckAddr(t *testing.T) {
	for _, s := range []string{"93.184.215.14", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1", "64:ff9b::808:808"} {
		if err := fetch.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: got %v, want public", s, err)
		}
	}
	for _, s := range []string{"0.0.0.0", "127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.0.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.255", "192.0.0.8", "192.0.2.1", "198.18.0.1", "198.51.100.1", "203.0.113.1",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "fe80::1", "fc00::1", "fd12::1",
		"ff02::1", "fec0::1", "100::1", "2001:db8::1", "2001::1", "2002:7f00:1::1", "2002:a00:1::1", "64:ff9b::7f00:1", "64:ff9b:1::1", "3fff::1"} {
		err := fetch.CheckAddr(netip.MustParseAddr(s))
		if !errors.Is(err, fetch.ErrNotPublic) {
			t.Errorf("%s: got %v, want refused", s, err)
		}
	}
}
