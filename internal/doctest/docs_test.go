package doctest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDocs runs the shell examples of README.md and every docs/*.md (see
// the package comment for the conventions).
func TestDocs(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("the document examples need bash")
	}
	for _, tool := range []string{"curl", "git", "openssl", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the document examples need %s (./scripts/test installs it)", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildYard(t)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	for _, doc := range docs {
		name, _ := filepath.Rel(root, doc)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			runDoc(t, t, name, string(src), bin)
		})
	}
}

var (
	buildOnce sync.Once
	yardBin   string
	buildErr  error
)

// buildYard builds ./cmd/yard once for the tests of this package.
func buildYard(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "doctest-yard-")
		if err != nil {
			buildErr = err
			return
		}
		yardBin = filepath.Join(dir, "yard")
		cmd := exec.Command("go", "build", "-o", yardBin, "./cmd/yard")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/yard: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return yardBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if yardBin != "" {
		_ = os.RemoveAll(filepath.Dir(yardBin))
	}
	os.Exit(code)
}

var statusRe = regexp.MustCompile(`(?m)^HTTP/[0-9.]+ (\d{3})`)

// reporter receives what runDoc finds: a *testing.T, or a recorder in the
// runner's own test.
type reporter interface {
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Failed() bool
}

// runDoc runs the examples of the document src, reporting to r; t is for
// the set-up (temporary directories, fatal errors).
func runDoc(t *testing.T, r reporter, name, src, bin string) {
	blocks, err := Parse(src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// The script: a prelude (the recording curl), then each block that
	// runs, each line of a block at the script line the call log names.
	work := t.TempDir()
	internal := filepath.Join(work, ".doctest")
	home := filepath.Join(work, ".home")
	binDir := filepath.Join(internal, "bin")
	for _, d := range []string{internal, home, binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, link := range []string{filepath.Join(binDir, "yard"), filepath.Join(work, "yard")} {
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	if err := os.WriteFile(filepath.Join(home, ".curlrc"), fmt.Appendf(nil, "connect-to = localhost:8443:127.0.0.1:%d\n", port), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(internal, "calls")
	var script strings.Builder
	lineOf := map[int]int{} // script line → document line
	script.WriteString("set -eo pipefail\n")
	fmt.Fprintf(&script, "__doctest_dir=%q\n", internal)
	script.WriteString(`curl() {
  local __h __b __rc=0 __line=${BASH_LINENO[0]}
  __h=$(mktemp "$__doctest_dir/h.XXXXXX"); __b=$(mktemp "$__doctest_dir/b.XXXXXX")
  command curl -D "$__h" "$@" >"$__b" || __rc=$?
  cat "$__b"
  printf 'call %s %s %s %s\n' "$__line" "$__rc" "$__h" "$__b" >>"$__doctest_dir/calls"
  return $__rc
}
__doctest_block() { printf 'block %s\n' "$1" >>"$__doctest_dir/calls"; }
`)
	lines := strings.Count(script.String(), "\n")
	ran := 0
	for _, b := range blocks {
		if b.Skip != "" {
			first := ""
			if len(b.Commands) > 0 {
				first = strings.SplitN(b.Commands[0].Text, "\n", 2)[0]
			}
			r.Logf("%s:%d: skipped (%s: %s): %s", name, b.Line, b.Skip, SkipReasons[b.Skip], first)
			continue
		}
		fmt.Fprintf(&script, "__doctest_block %d\n", b.Line)
		lines++
		for i, l := range b.Lines {
			script.WriteString(l + "\n")
			lines++
			lineOf[lines] = b.Line + 1 + i
		}
		ran++
	}
	if ran == 0 {
		r.Logf("%s: no example to run", name)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		fmt.Sprintf("YARD_ADDR=127.0.0.1:%d", port),
		"YARD_BASE_URL=https://localhost:8443",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Start()
	if runErr == nil {
		pgid := cmd.Process.Pid
		// The document's server runs in the background: end the whole
		// process group once the script is done.
		defer func() {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			time.Sleep(200 * time.Millisecond)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}()
		runErr = cmd.Wait()
	}
	r.Logf("%s: %d blocks ran in %v", name, ran, time.Since(start).Round(time.Millisecond))

	// Check every recorded curl call against the document.
	f, _ := os.ReadFile(calls)
	block := 0
	called := map[*Command]bool{}
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if fields[0] == "block" {
			block, _ = strconv.Atoi(fields[1])
			continue
		}
		scriptLine, _ := strconv.Atoi(fields[1])
		rc, hdrFile, bodyFile := fields[2], fields[3], fields[4]
		docLine := lineOf[scriptLine]
		c := CommandAt(blocks, docLine)
		where := fmt.Sprintf("%s:%d", name, docLine)
		if c == nil {
			r.Errorf("%s: a curl call outside every command (block at line %d)", where, block)
			continue
		}
		called[c] = true
		if rc != "0" {
			r.Errorf("%s: curl exited with status %s: %s", where, rc, c.Text)
			continue
		}
		hdr, _ := os.ReadFile(hdrFile)
		body, _ := os.ReadFile(bodyFile)
		ms := statusRe.FindAllSubmatch(hdr, -1)
		if len(ms) == 0 {
			r.Errorf("%s: no HTTP response recorded: %s", where, c.Text)
			continue
		}
		status, _ := strconv.Atoi(string(ms[len(ms)-1][1]))
		if c.Expect == nil {
			if status >= 400 {
				r.Errorf("%s: answered %d, and the document shows no status (add `# → %d`): %s\n%s%s", where, status, status, c.Text, hdr, clip(body))
			}
			continue
		}
		if status != c.Expect.Status {
			r.Errorf("%s: answered %d, the document says %d: %s\n%s%s", where, status, c.Expect.Status, c.Text, hdr, clip(body))
			continue
		}
		resp := strings.ToLower(string(hdr) + string(body))
		for _, frag := range c.Expect.Fragments {
			if !strings.Contains(resp, strings.ToLower(frag)) {
				r.Errorf("%s: the answer lacks %q: %s\n%s%s", where, frag, c.Text, hdr, clip(body))
			}
		}
	}
	// Every answer the document shows must have been checked, in the
	// blocks that ran to their end.
	for bi := range blocks {
		if blocks[bi].Skip != "" || (runErr != nil && blocks[bi].Line >= block) {
			continue
		}
		for ci := range blocks[bi].Commands {
			c := &blocks[bi].Commands[ci]
			if c.Expect != nil && !called[c] {
				r.Errorf("%s:%d: the document shows an answer (# → %d) but no curl ran there: %s", name, c.First, c.Expect.Status, c.Text)
			}
		}
	}
	if runErr != nil {
		r.Errorf("%s: the examples stopped (%v) in the block at line %d; output:\n%s", name, runErr, block, tail(out.String()))
		return
	}
	if r.Failed() {
		r.Logf("output of the examples:\n%s", tail(out.String()))
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

func tail(s string) string {
	if len(s) > 8000 {
		return "…" + s[len(s)-8000:]
	}
	return s
}

// recorder collects what runDoc reports.
type recorder struct{ errors []string }

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Failed() bool        { return len(r.errors) > 0 }

// The runner fails a document whose answers differ from what it shows: a
// wrong status, a missing fragment, an error status shown nowhere, a shown
// answer whose command never ran, and a command that fails.
func TestRunnerFindsWrongAnswers(t *testing.T) {
	bin := buildYard(t)
	doc := "```sh\n" + `./yard serve > yard.out 2> yard.log &
until grep -q '^listening on' yard.out; do sleep 0.2; done
export CURL_CA_BUNDLE=$PWD/data/tls/cert.pem
curl -s https://localhost:8443/healthz          # → 200
curl -s https://localhost:8443/healthz          # → 404
curl -s https://localhost:8443/openapi.json     # → 200 ` + "`no such text`" + `
curl -s https://localhost:8443/v1/dogs
false && curl -s https://localhost:8443/healthz # → 200
` + "```\n```sh\n" + `curl -s https://localhost:8443/v1/dogs     # → 401
false
curl -s https://localhost:8443/healthz          # → 200
` + "```\n"
	var r recorder
	runDoc(t, &r, "wrong.md", doc, bin)
	want := []string{
		"wrong.md:6: answered 200, the document says 404",
		"wrong.md:7: the answer lacks \"no such text\"",
		"wrong.md:8: answered 401, and the document shows no status",
		"wrong.md:9: the document shows an answer (# → 200) but no curl ran there",
		"wrong.md: the examples stopped (exit status 1) in the block at line 11",
	}
	if len(r.errors) != len(want) {
		t.Fatalf("reported %d errors, want %d:\n%s", len(r.errors), len(want), strings.Join(r.errors, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(r.errors[i], w) {
			t.Errorf("error %d = %.200q, want it to start with %q", i, r.errors[i], w)
		}
	}
}
