// Package fetch runs the fetch-code effect of a bark: it fetches a dog's
// code into the data directory with git (clone the first time, fetch after)
// or with the operator's command, never through a shell, with a time limit,
// a clean environment and its output captured and truncated.
package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// Defaults of a Runner.
const (
	DefaultTimeout   = 5 * time.Minute
	DefaultMaxOutput = 16 << 10
)

// Runner fetches code.
type Runner struct {
	// Command is the operator's argument vector; {url} and {dir} in any
	// argument are replaced by the code URL and the target directory. Empty
	// means git: clone when the directory holds no repository, else fetch
	// the remote HEAD and check it out.
	Command []string
	// Timeout bounds the whole fetch (every step together).
	Timeout time.Duration
	// MaxOutput bounds the captured output kept for the task.
	MaxOutput int
	// Env is the environment of the commands; nil means CleanEnv().
	Env []string
}

// Result is a finished fetch.
type Result struct {
	// Revision is the commit now checked out ("" when the directory holds
	// no git repository after an operator's command).
	Revision string
	// Output is the combined, truncated output of the commands.
	Output string
}

// Error is a failed fetch; Temp reports whether a later retry may succeed
// (a time-out, a network failure).
type Error struct {
	Err    error
	Temp   bool
	Output string
}

// Error returns the message of the underlying error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether a retry may succeed.
func (e *Error) Temporary() bool { return e.Temp }

// CleanEnv returns the environment fetch commands run with: a fixed PATH,
// HOME (so an operator's ssh keys and known_hosts still work), C locale,
// and git settings that forbid prompts, system and global configuration,
// and every transport but https, ssh and file.
func CleanEnv() []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C", "LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ALLOW_PROTOCOL=https:ssh:file",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes",
	}
	if h, err := os.UserHomeDir(); err == nil {
		env = append(env, "HOME="+h)
	}
	return env
}

// Fetch brings the code at url into dir and returns the checked-out
// revision. The URL is checked again here, so no value can become an option
// of the command.
func (r *Runner) Fetch(ctx context.Context, url, dir string) (Result, error) {
	if url == "" {
		return Result{}, &Error{Err: errors.New("the dog has no codeUrl")}
	}
	if err := yard.ValidateCodeURL(url); err != nil {
		return Result{}, &Error{Err: fmt.Errorf("codeUrl %v", err)}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &limitedBuffer{max: r.MaxOutput}
	if out.max <= 0 {
		out.max = DefaultMaxOutput
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return Result{}, &Error{Err: err, Temp: true}
	}
	// One fetch at a time per directory, also across processes sharing the
	// data directory.
	unlock, err := lockDir(ctx, dir+".lock")
	if err != nil {
		return Result{}, &Error{Err: fmt.Errorf("waiting for another fetch of the same code: %w", err), Temp: true}
	}
	defer unlock()
	if len(r.Command) > 0 {
		argv := make([]string, len(r.Command))
		for i, a := range r.Command {
			argv[i] = strings.NewReplacer("{url}", url, "{dir}", dir).Replace(a)
		}
		err = r.run(ctx, out, "", argv...)
	} else {
		err = r.git(ctx, out, url, dir)
	}
	if err != nil {
		return Result{Output: out.String()}, r.classify(ctx, err, out.String())
	}
	res := Result{Output: out.String()}
	if _, statErr := os.Stat(filepath.Join(dir, ".git")); statErr == nil {
		var rev limitedBuffer
		rev.max = 200
		if err := r.run(ctx, &rev, dir, "git", "rev-parse", "--verify", "HEAD"); err != nil {
			return res, r.classify(ctx, err, rev.String())
		}
		res.Revision = strings.TrimSpace(rev.String())
	}
	return res, nil
}

// git clones url into dir, or, when dir already holds a repository, fetches
// the remote HEAD from url and checks it out.
func (r *Runner) git(ctx context.Context, out *limitedBuffer, url, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		// No repository yet (or the remains of an interrupted clone):
		// clone next to it, then rename, so the directory is either
		// absent or a whole clone, even if this process dies half-way.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), ".clone-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		target := filepath.Join(tmp, "code")
		if err := r.run(ctx, out, "", "git", "clone", "--quiet", "--", url, target); err != nil {
			return err
		}
		return os.Rename(target, dir)
	}
	if err := r.run(ctx, out, dir, "git", "fetch", "--quiet", "--", url, "HEAD"); err != nil {
		return err
	}
	return r.run(ctx, out, dir, "git", "reset", "--quiet", "--hard", "FETCH_HEAD")
}

func (r *Runner) run(ctx context.Context, out *limitedBuffer, dir string, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = r.Env
	if cmd.Env == nil {
		cmd.Env = CleanEnv()
	}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	killGroup(cmd)
	return cmd.Run()
}

// classify turns a command failure into an Error, temporary for time-outs
// and network trouble.
func (r *Runner) classify(ctx context.Context, err error, output string) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &Error{Err: fmt.Errorf("fetch timed out after %s", r.timeout()), Temp: true, Output: output}
		}
		return &Error{Err: ctx.Err(), Temp: true, Output: output}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		temp := false
		// Network trouble, and another git (say, one left running by a
		// process that died) holding the repository's lock files.
		for _, s := range []string{"Could not resolve host", "Connection timed out", "Connection refused", "early EOF",
			"Operation timed out", "remote end hung up unexpectedly", "HTTP 5", "returned error: 5",
			".lock': File exists", "already exists and is not an empty directory"} {
			if strings.Contains(output, s) {
				temp = true
			}
		}
		return &Error{Err: fmt.Errorf("fetch command failed: %v", ee), Temp: temp, Output: output}
	}
	return &Error{Err: fmt.Errorf("fetch command: %v", err), Output: output}
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

// ParseCommand reads --fetch-command: a JSON array of strings, or words
// separated by white space (no quoting, no shell).
func ParseCommand(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var argv []string
	if strings.HasPrefix(s, "[") {
		if err := json.Unmarshal([]byte(s), &argv); err != nil {
			return nil, fmt.Errorf("fetch command: %w", err)
		}
	} else {
		argv = strings.Fields(s)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("fetch command: empty")
	}
	joined := strings.Join(argv, " ")
	if !strings.Contains(joined, "{url}") || !strings.Contains(joined, "{dir}") {
		return nil, errors.New("fetch command: must use {url} and {dir}")
	}
	return argv, nil
}

// limitedBuffer keeps the first max bytes written and counts the rest.
type limitedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room >= len(p) {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	if b.dropped > 0 {
		return b.buf.String() + fmt.Sprintf("\n[output truncated: %d more bytes]", b.dropped)
	}
	return b.buf.String()
}
