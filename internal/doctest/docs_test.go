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
	bin := filepath.Join(t.TempDir(), "yard")
	build := exec.Command("go", "build", "-o", bin, "./cmd/yard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/yard: %v\n%s", err, out)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	for _, doc := range docs {
		name, _ := filepath.Rel(root, doc)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runDoc(t, name, doc, bin)
		})
	}
}

var statusRe = regexp.MustCompile(`(?m)^HTTP/[0-9.]+ (\d{3})`)

func runDoc(t *testing.T, name, path, bin string) {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(string(src))
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
			t.Logf("%s:%d: skipped (%s: %s): %s", name, b.Line, b.Skip, SkipReasons[b.Skip], first)
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
		t.Logf("%s: no example to run", name)
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
	t.Logf("%s: %d blocks ran in %v", name, ran, time.Since(start).Round(time.Millisecond))

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
			t.Errorf("%s: a curl call outside every command (block at line %d)", where, block)
			continue
		}
		called[c] = true
		if rc != "0" {
			t.Errorf("%s: curl exited with status %s: %s", where, rc, c.Text)
			continue
		}
		hdr, _ := os.ReadFile(hdrFile)
		body, _ := os.ReadFile(bodyFile)
		ms := statusRe.FindAllSubmatch(hdr, -1)
		if len(ms) == 0 {
			t.Errorf("%s: no HTTP response recorded: %s", where, c.Text)
			continue
		}
		status, _ := strconv.Atoi(string(ms[len(ms)-1][1]))
		if c.Expect == nil {
			if status >= 400 {
				t.Errorf("%s: answered %d, and the document shows no status (add `# → %d`): %s\n%s%s", where, status, status, c.Text, hdr, clip(body))
			}
			continue
		}
		if status != c.Expect.Status {
			t.Errorf("%s: answered %d, the document says %d: %s\n%s%s", where, status, c.Expect.Status, c.Text, hdr, clip(body))
			continue
		}
		resp := strings.ToLower(string(hdr) + string(body))
		for _, frag := range c.Expect.Fragments {
			if !strings.Contains(resp, strings.ToLower(frag)) {
				t.Errorf("%s: the answer lacks %q: %s\n%s%s", where, frag, c.Text, hdr, clip(body))
			}
		}
	}
	if runErr != nil {
		t.Errorf("%s: the examples stopped (%v) in the block at line %d; output:\n%s", name, runErr, block, tail(out.String()))
		return
	}
	for bi := range blocks {
		if blocks[bi].Skip != "" {
			continue
		}
		for ci := range blocks[bi].Commands {
			c := &blocks[bi].Commands[ci]
			if c.Expect != nil && !called[c] {
				t.Errorf("%s:%d: the document shows an answer (# → %d) but no curl ran there: %s", name, c.First, c.Expect.Status, c.Text)
			}
		}
	}
	if t.Failed() {
		t.Logf("output of the examples:\n%s", tail(out.String()))
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
