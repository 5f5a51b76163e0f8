package fetch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/fetch/fetchtest"
)

// gitRepo makes a repository with one commit and returns its path and a
// function that adds a commit and returns its id.
func gitRepo(t *testing.T) (string, func(msg string) string) {
	root := t.TempDir()
	return filepath.Join(root, "repo"), fetchtest.Repo(t, root, "repo")
}

// exampleOrg lets operator commands "fetch" from example.org without a
// network (the host is not resolved when the operator allows it).
var exampleOrg = &fetch.Policy{AllowHosts: []string{"example.org"}}

func TestGitCloneThenFetch(t *testing.T) {
	repo, commit := gitRepo(t)
	head := commit("second")
	target := filepath.Join(t.TempDir(), "dogs", "rex", "code")
	r := &fetch.Runner{Timeout: time.Minute, Policy: &fetch.Policy{AllowDirs: []string{repo}}}
	res, err := r.Fetch(context.Background(), "file://"+repo, target)
	if err != nil {
		t.Fatalf("clone: %v (%s)", err, res.Output)
	}
	if res.Revision != head {
		t.Fatalf("revision after clone: got %q, want %q", res.Revision, head)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "bark.txt")); string(b) != "second" {
		t.Errorf("working tree: got %q", b)
	}
	head = commit("third")
	res, err = r.Fetch(context.Background(), "file://"+repo, target)
	if err != nil {
		t.Fatalf("fetch: %v (%s)", err, res.Output)
	}
	if res.Revision != head {
		t.Fatalf("revision after fetch: got %q, want %q", res.Revision, head)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "bark.txt")); string(b) != "third" {
		t.Errorf("working tree after fetch: got %q", b)
	}
}

func TestMissingRepositoryFailsPermanently(t *testing.T) {
	r := &fetch.Runner{Timeout: time.Minute, Policy: &fetch.Policy{AllowDirs: []string{"/nonexistent"}}}
	_, err := r.Fetch(context.Background(), "file:///nonexistent/repo.git", filepath.Join(t.TempDir(), "code"))
	var fe *fetch.Error
	if !errors.As(err, &fe) || fe.Temp || fe.Kind != fetch.NotFound {
		t.Fatalf("got %v, want a permanent %q", err, fetch.NotFound)
	}
	if !strings.Contains(fe.Output, "does not exist") && !strings.Contains(fe.Output, "not found") && !strings.Contains(fe.Output, "fatal") {
		t.Errorf("output not captured: %q", fe.Output)
	}
}

func TestHostileURLRefused(t *testing.T) {
	r := &fetch.Runner{}
	for _, u := range []string{"--upload-pack=touch /tmp/pwned", "ext::sh -c touch% /tmp/pwned", "file:///tmp/-oops", "https://-x/"} {
		if _, err := r.Fetch(context.Background(), u, filepath.Join(t.TempDir(), "code")); err == nil {
			t.Errorf("Fetch(%q): no error", u)
		}
	}
}

func TestOperatorCommandTemplateAndCleanEnv(t *testing.T) {
	t.Setenv("YARD_SECRET_FOR_TEST", "leak")
	dir := filepath.Join(t.TempDir(), "code")
	r := &fetch.Runner{Command: []string{"env", "FETCH_URL={url}", "FETCH_DIR={dir}"}, Policy: exampleOrg}
	res, err := r.Fetch(context.Background(), "https://example.org/rex.git", dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Output, "YARD_SECRET_FOR_TEST") {
		t.Error("the process environment leaked into the fetch command")
	}
	if !strings.Contains(res.Output, "FETCH_URL=https://example.org/rex.git") || !strings.Contains(res.Output, "FETCH_DIR="+dir) {
		t.Errorf("template not applied: %s", res.Output)
	}
	if !strings.Contains(res.Output, "GIT_TERMINAL_PROMPT=0") {
		t.Errorf("clean environment missing git settings: %s", res.Output)
	}
	if !strings.Contains(res.Output, "https_proxy=http://yard:") || !strings.Contains(res.Output, "GIT_ALLOW_PROTOCOL=https\n") {
		t.Errorf("the command is not pointed at the fetch proxy: %s", res.Output)
	}
	if res.Revision != "" {
		t.Errorf("revision without a repository: %q", res.Revision)
	}
}

func TestTimeoutKillsCommand(t *testing.T) {
	r := &fetch.Runner{Command: []string{"sleep", "30"}, Timeout: 300 * time.Millisecond, Policy: exampleOrg}
	start := time.Now()
	_, err := r.Fetch(context.Background(), "https://example.org/x.git", filepath.Join(t.TempDir(), "code"))
	var fe *fetch.Error
	if !errors.As(err, &fe) || !fe.Temp || fe.Kind != fetch.TimedOut {
		t.Fatalf("got %v, want a temporary time-out error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the command ran %s past its time limit", d)
	}
}

func TestOutputTruncated(t *testing.T) {
	r := &fetch.Runner{Command: []string{"seq", "1", "100000", "{url}", "{dir}"}, MaxOutput: 100, Policy: exampleOrg}
	res, err := r.Fetch(context.Background(), "https://example.org/x.git", filepath.Join(t.TempDir(), "code"))
	// seq fails on the extra arguments; either way the output is bounded.
	_ = err
	if len(res.Output) > 200 {
		t.Errorf("output not truncated: %d bytes", len(res.Output))
	}
	r = &fetch.Runner{Command: []string{"yes", "{url}{dir}"}, MaxOutput: 100, Timeout: 300 * time.Millisecond, Policy: exampleOrg}
	_, err = r.Fetch(context.Background(), "https://example.org/x.git", filepath.Join(t.TempDir(), "code"))
	var fe *fetch.Error
	if !errors.As(err, &fe) || len(fe.Output) > 200 || !strings.Contains(fe.Output, "truncated") {
		t.Errorf("got %v with %d bytes of output, want truncated output", err, len(fe.Output))
	}
}

func TestParseCommand(t *testing.T) {
	argv, err := fetch.ParseCommand(`["/usr/bin/git", "clone", "--", "{url}", "{dir}"]`)
	if err != nil || len(argv) != 5 {
		t.Fatalf("got %v, %v", argv, err)
	}
	argv, err = fetch.ParseCommand(`hg clone {url} {dir}`)
	if err != nil || len(argv) != 4 {
		t.Fatalf("got %v, %v", argv, err)
	}
	if _, err := fetch.ParseCommand(`git clone {url}`); err == nil {
		t.Error("a command without {dir} was accepted")
	}
}

func TestConcurrentFetchesOfOneDirectory(t *testing.T) {
	repo, _ := gitRepo(t)
	target := filepath.Join(t.TempDir(), "code")
	r := &fetch.Runner{Timeout: time.Minute, Policy: &fetch.Policy{AllowDirs: []string{repo}}}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := r.Fetch(context.Background(), "file://"+repo, target)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent fetch: %v", err)
		}
	}
}
