// Package fetch runs the fetch-code effect of a bark: it fetches a dog's
// code into the data directory with git (clone the first time, fetch after)
// or with the operator's command, never through a shell, with a time limit,
// a clean environment and its output captured and truncated.
package fetch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/defaults"
	"github.com/yard-api/yard/internal/tracing"
)

// Defaults of a Runner.
const (
	DefaultTimeout     = 2 * time.Minute
	DefaultIdleTimeout = 30 * time.Second
	DefaultMaxOutput   = 16 << 10
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
	// IdleTimeout ends a fetch when no byte came from the remote for that
	// long (and bounds connecting).
	IdleTimeout time.Duration
	// MaxOutput bounds the captured output kept for the task.
	MaxOutput int
	// Env is the environment of the commands; nil means CleanEnv().
	Env []string
	// Policy says where fetches may go; nil means the zero Policy (public
	// hosts only, no file://).
	Policy *Policy
	// Logger, when set, gets the raw output of failed fetches, which the
	// task does not show.
	Logger *slog.Logger
}

// Result is a finished fetch.
type Result struct {
	// Revision is the commit now checked out ("" when the directory holds
	// no git repository after an operator's command).
	Revision string
	// Output is the combined, truncated output of the commands.
	Output string
}

// Kind is the category of a failed fetch, what a task's error names. It
// never carries network text (an address, a port's state), so a fetch
// cannot be used to scan the network.
type Kind string

// Kinds of failure.
const (
	NotAllowed  Kind = "host not allowed"
	CannotReach Kind = "could not connect"
	TimedOut    Kind = "timed out"
	NotFound    Kind = "repository not found"
	Failed      Kind = "fetch failed"
)

// Error is a failed fetch; Temp reports whether a later retry may succeed
// (a time-out, a network failure).
type Error struct {
	Kind Kind
	// Reason, when set, says more in words of yard's own (never the
	// remote's or the network's).
	Reason string
	// Err is the underlying failure, for the operator's log.
	Err  error
	Temp bool
	// Output is what the commands wrote, for the operator's log; it may
	// hold network details and is not shown to users on failure.
	Output string
}

// Error names the category and yard's own reason.
func (e *Error) Error() string {
	if e.Reason != "" {
		return string(e.Kind) + ": " + e.Reason
	}
	return string(e.Kind)
}

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

var errIdle = errors.New("no data from the remote")

// Fetch brings the code at url into dir and returns the checked-out
// revision. The URL is checked again here against the form rules and the
// policy, and every connection the commands make is checked when it is
// made (docs/barks.md, "Where fetches may go"). A traced fetch is a span
// (its scheme and host, never the URL) and passes its traceparent on
// (docs/operations.md, "Metrics and traces").
func (r *Runner) Fetch(ctx context.Context, url, dir string) (Result, error) {
	ctx, span := tracing.StartClient(ctx, "fetch code")
	defer span.End()
	if span.IsRecording() {
		if t, err := ParseTarget(url); err == nil {
			span.SetAttributes(tracing.FetchScheme.String(t.Scheme), tracing.ServerAddress.String(t.Host))
		}
	}
	res, err := r.fetch(ctx, url, dir)
	if fe, ok := errors.AsType[*Error](err); ok {
		tracing.Failf(span, string(fe.Kind), fe.Error())
	}
	return res, err
}

func (r *Runner) fetch(ctx context.Context, url, dir string) (Result, error) {
	policy := cmp.Or(r.Policy, &Policy{})
	if err := policy.CheckURL(url); err != nil {
		return Result{}, &Error{Kind: NotAllowed, Reason: "codeUrl " + strings.TrimPrefix(err.Error(), string(NotAllowed)+": "), Err: err}
	}
	target, _ := ParseTarget(url) // CheckURL parsed it
	timeout, idle := r.timeout(), r.idleTimeout()
	tctx, cancelT := context.WithTimeout(ctx, timeout)
	defer cancelT()
	ctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)

	env := slices.Clone(r.Env)
	if env == nil {
		env = CleanEnv()
	}
	var gitArgs []string
	var g *guard
	var err error
	if target.Scheme != "file" {
		// Resolve before starting anything: a host with an address
		// inside fails here; the proxy checks again at every connection.
		var pinned netip.Addr
		if !policy.HostAllowed(target.Host, target.defaultPort()) {
			addrs, err := policy.resolve(ctx, target.Host)
			if err != nil {
				return Result{}, r.failure(tctx, ctx, err, "", nil)
			}
			pinned = addrs[0]
		}
		g, err = startGuard(policy, idle)
		if err != nil {
			return Result{}, &Error{Kind: Failed, Err: err, Temp: true}
		}
		defer g.close()
		// What git (http.proxy) and operator commands (https_proxy) are
		// given.
		proxy := "http://yard:" + g.secret + "@" + g.ln.Addr().String()
		ssh := sshCommand(target, pinned, idle)
		env = append(env, "GIT_ALLOW_PROTOCOL="+target.Scheme,
			"https_proxy="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "ALL_PROXY="+proxy, "all_proxy="+proxy,
			"NO_PROXY=", "no_proxy=", "GIT_SSH_COMMAND="+ssh)
		gitArgs = []string{"-c", "protocol.allow=never", "-c", "protocol." + target.Scheme + ".allow=always",
			"-c", "http.followRedirects=false", "-c", "http.proxy=" + proxy,
			"-c", "http.lowSpeedLimit=1", "-c", "http.lowSpeedTime=" + strconv.Itoa(max(1, int(idle/time.Second))),
			"-c", "core.sshCommand=" + ssh}
		go r.watchIdle(ctx, cancel, g, idle)
	} else {
		env = append(env, "GIT_ALLOW_PROTOCOL=file")
		gitArgs = []string{"-c", "protocol.allow=never", "-c", "protocol.file.allow=always"}
	}
	if tp := tracing.TraceParent(ctx); tp != "" {
		// W3C trace context for the commands (TRACEPARENT, the
		// environment carrier of OpenTelemetry) and, over https, in
		// git's requests to the code's host.
		env = append(env, "TRACEPARENT="+tp)
		if target.Scheme == "https" {
			gitArgs = append(gitArgs, "-c", "http.extraHeader=traceparent: "+tp)
		}
	}

	out := &limitedBuffer{max: defaults.Positive(r.MaxOutput, DefaultMaxOutput)}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return Result{}, &Error{Kind: Failed, Err: err, Temp: true}
	}
	// One fetch at a time per directory, also across processes sharing the
	// data directory.
	unlock, err := lockDir(ctx, dir+".lock")
	if err != nil {
		return Result{}, r.failure(tctx, ctx, fmt.Errorf("waiting for another fetch of the same code: %w", err), "", g)
	}
	defer unlock()
	if len(r.Command) > 0 {
		argv := make([]string, len(r.Command))
		for i, a := range r.Command {
			argv[i] = strings.NewReplacer("{url}", url, "{dir}", dir).Replace(a)
		}
		err = r.run(ctx, env, out, "", argv...)
	} else {
		err = r.git(ctx, env, gitArgs, out, url, dir)
	}
	res := Result{Output: out.String()}
	if err != nil {
		return res, r.failure(tctx, ctx, err, res.Output, g)
	}
	if _, statErr := os.Stat(filepath.Join(dir, ".git")); statErr == nil {
		rev := limitedBuffer{max: 200}
		if err := r.run(ctx, env, &rev, dir, "git", "rev-parse", "--verify", "HEAD"); err != nil {
			return res, r.failure(tctx, ctx, err, rev.String(), g)
		}
		res.Revision = strings.TrimSpace(rev.String())
	}
	return res, nil
}

// watchIdle ends the fetch when a tunnel has waited for an answer from the
// remote for idle.
func (r *Runner) watchIdle(ctx context.Context, cancel context.CancelCauseFunc, g *guard, idle time.Duration) {
	t := time.NewTicker(max(10*time.Millisecond, min(idle/4, time.Second)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if g.stalled(idle) {
				cancel(errIdle)
				return
			}
		}
	}
}

// sshCommand is the ssh git runs. For a host the operator did not allow,
// it connects only to the address checked before the fetch (HostName),
// keeps checking the host key under the URL's name (HostKeyAlias), and
// ignores any proxy or jump host of the ssh configuration. A silent server
// ends within the idle time-out (ConnectTimeout covers the banner,
// ServerAlive the rest).
func sshCommand(t Target, pinned netip.Addr, idle time.Duration) string {
	secs := max(1, int(idle/time.Second))
	cmd := fmt.Sprintf("ssh -o BatchMode=yes -o ConnectTimeout=%d -o ServerAliveInterval=%d -o ServerAliveCountMax=3",
		secs, max(1, secs/3))
	if pinned.IsValid() {
		alias := t.Host
		if t.Port != "" && t.Port != "22" {
			alias = "[" + t.Host + "]:" + t.Port
		}
		// Both values are checked (an address; a host name of letters,
		// digits, '-', '_' and '.'), and quoted for the shell git uses.
		cmd += " -o ProxyCommand=none -o ProxyJump=none -o CanonicalizeHostname=no -o ControlMaster=no -o ControlPath=none" +
			" -o CheckHostIP=no -o 'HostName=" + pinned.String() + "' -o 'HostKeyAlias=" + alias + "'"
	}
	return cmd
}

// git clones url into dir, or, when dir already holds a repository, fetches
// the remote HEAD from url and checks it out.
func (r *Runner) git(ctx context.Context, env, gitArgs []string, out *limitedBuffer, url, dir string) error {
	git := func(dir string, args ...string) error {
		return r.run(ctx, env, out, dir, append(append([]string{"git"}, gitArgs...), args...)...)
	}
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
		if err := git("", "clone", "--quiet", "--no-recurse-submodules", "--", url, target); err != nil {
			return err
		}
		return os.Rename(target, dir)
	}
	if err := git(dir, "fetch", "--quiet", "--no-recurse-submodules", "--", url, "HEAD"); err != nil {
		return err
	}
	return git(dir, "reset", "--quiet", "--hard", "FETCH_HEAD")
}

func (r *Runner) run(ctx context.Context, env []string, out *limitedBuffer, dir string, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	killGroup(cmd)
	return cmd.Run()
}

// failure turns a failed step into an Error of one category. What the
// guard saw comes first (it knows why a connection was refused or failed);
// then the time limits; then git's words.
func (r *Runner) failure(tctx, ctx context.Context, err error, output string, g *guard) error {
	fe := &Error{Kind: Failed, Err: err, Output: output}
	switch {
	case errors.Is(err, ErrNotPublic) || (g != nil && g.refused.Load()):
		fe.Kind = NotAllowed
		fe.Reason = "the host has an address that is not public"
	case errors.Is(context.Cause(ctx), errIdle):
		fe.Kind, fe.Temp = TimedOut, true
		fe.Reason = "no data for " + r.idleTimeout().String()
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		fe.Kind, fe.Temp = TimedOut, true
		fe.Reason = "the fetch took longer than " + r.timeout().String()
	case ctx.Err() != nil:
		fe.Temp = true
		fe.Reason = "stopped"
	case errors.As(err, new(*connectError)) || (g != nil && g.unreach.Load()):
		fe.Kind, fe.Temp = CannotReach, true
	default:
		fe.Kind, fe.Temp = classifyOutput(output)
		if fe.Kind == NotFound && strings.Contains(output, "returned error: 30") {
			fe.Reason = "the server answered with a redirect, and fetches do not follow redirects"
		}
	}
	if r.Logger != nil {
		r.Logger.Info("fetch failed", slog.String("kind", string(fe.Kind)), slog.String("error", err.Error()), slog.String("output", output))
	}
	return fe
}

// classifyOutput reads git's and ssh's messages.
func classifyOutput(output string) (Kind, bool) {
	has := func(ss ...string) bool {
		return slices.ContainsFunc(ss, func(s string) bool { return strings.Contains(output, s) })
	}
	switch {
	case has("returned error: 30"):
		// http.followRedirects=false: a codeUrl must name the
		// repository's own place.
		return NotFound, false
	case has("Operation timed out", "Operation too slow", "Connection timed out"):
		return TimedOut, true
	case has("Could not resolve", "Connection refused", "No route to host", "Network is unreachable",
		"early EOF", "remote end hung up unexpectedly", "Connection reset", "Connection closed by",
		"HTTP 5", "returned error: 5", "from proxy after CONNECT", "SSL", "TLS", "handshake"):
		return CannotReach, true
	case has("not found", "does not exist", "does not appear to be a git repository", "Could not read from remote repository",
		"returned error: 4", "returned error: 3", "Authentication failed", "could not read Username",
		"terminal prompts disabled", "Permission denied"):
		return NotFound, false
	case has(".lock': File exists", "already exists and is not an empty directory"):
		// Another git (say, one left running by a process that died)
		// holding the repository's lock files.
		return Failed, true
	}
	return Failed, false
}

func (r *Runner) timeout() time.Duration {
	return defaults.Positive(r.Timeout, DefaultTimeout)
}

func (r *Runner) idleTimeout() time.Duration {
	return defaults.Positive(r.IdleTimeout, DefaultIdleTimeout)
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
	n := min(b.max-b.buf.Len(), len(p)) // the room left, never negative
	b.buf.Write(p[:n])
	b.dropped += len(p) - n
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	if b.dropped > 0 {
		return b.buf.String() + fmt.Sprintf("\n[output truncated: %d more bytes]", b.dropped)
	}
	return b.buf.String()
}
