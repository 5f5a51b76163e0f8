// Package conform is a conformance kit: black-box checks of a running
// server that claims the specification, over HTTPS, grouped by the
// specification's parts (docs/conformance.md lists every check).
//
// The kit talks HTTP itself and uses nothing of yard's server: it signs
// in as an administrator, creates what it needs under a unique prefix,
// runs the checks and removes what it created, also when a check fails
// or the run times out. Run is the whole kit; Checks is its table.
package conform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Level is how strongly the specification asks for what a check tests.
type Level string

// The levels of a check (RFC 2119 words).
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
)

// Status is the outcome of one check.
type Status string

// The outcomes of a check.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Check is one row of the check table.
type Check struct {
	ID      string // unique, "<part>.<name>"
	Part    string // the part of the specification it tests
	Level   Level
	Doc     string // the docs page (and section) that states the rule
	Sends   string // what the check sends, for people
	Expects string // what it expects, for people
	run     func(*T)
}

// Config is what a run needs.
type Config struct {
	URL           string // the server's base URL (https://host:port)
	Admin         string // the administrator the kit signs in as
	AdminPassword string
	Client        *http.Client // trusts the server's certificate; redirects are not followed
	Only          []string     // parts to run; all when empty
	Skip          []string     // check ids to leave out
	Timeout       time.Duration
	// ReceiverAddr is the loopback address the kit's webhook receiver
	// listens on ("127.0.0.1:0" when empty).
	ReceiverAddr string
	// UserAgent is sent with every request ("yard-conform" when empty).
	UserAgent string
}

// ErrSetup wraps the errors that stop a run before any check: a server
// the kit cannot reach or sign in to, or bad arguments.
var ErrSetup = errors.New("conform")

func setupErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSetup, fmt.Sprintf(format, args...))
}

// Parts is the order of the parts in reports.
func Parts() []string {
	return []string{"discovery", "dogs", "versions", "barks", "schedules", "cars", "searches", "orders",
		"basic", "digest", "sessions", "token-pair", "pk-token", "signed", "oauth1", "openid",
		"events", "webhooks", "hostile"}
}

// Checks returns the check table in the order the kit runs it.
func Checks() []Check {
	return slices.Concat(discoveryChecks(), dogChecks(), versionChecks(), barkChecks(), scheduleChecks(),
		carChecks(), searchChecks(), orderChecks(), basicChecks(), digestChecks(), sessionChecks(),
		tokenPairChecks(), pkTokenChecks(), signedChecks(), oauth1Checks(), openidChecks(),
		eventChecks(), webhookChecks(), hostileChecks())
}

// selectChecks applies --only and --skip, refusing names it does not know.
func selectChecks(only, skip []string) ([]Check, error) {
	all := Checks()
	parts := Parts()
	for _, p := range only {
		if !slices.Contains(parts, p) {
			return nil, setupErr("--only: unknown part %q (parts: %s)", p, strings.Join(parts, ", "))
		}
	}
	for _, id := range skip {
		if !slices.ContainsFunc(all, func(c Check) bool { return c.ID == id }) {
			return nil, setupErr("--skip: unknown check %q", id)
		}
	}
	if len(only) > 0 {
		all = slices.DeleteFunc(all, func(c Check) bool { return !slices.Contains(only, c.Part) })
	}
	return all, nil
}

// Run runs the checks against the server and removes what it created.
// The error is non-nil (wrapping ErrSetup) only when no check could run:
// bad arguments, a server the kit cannot reach or sign in to.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	checks, err := selectChecks(cfg.Only, cfg.Skip)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil || base.Scheme != "https" || base.Host == "" || base.RawQuery != "" {
		return nil, setupErr("URL %q: want https://HOST[:PORT][/PATH]", cfg.URL)
	}
	if cfg.Admin == "" || cfg.AdminPassword == "" {
		return nil, setupErr("the administrator's name (--admin) and password (standard input or YARD_ADMIN_PASSWORD) are needed")
	}
	if cfg.Client == nil {
		return nil, setupErr("no HTTP client")
	}
	hc := *cfg.Client
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	k := newKit(base, &hc, cfg)
	if err := k.signIn(runCtx); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{URL: base.String(), Started: start.UTC()}
	for _, c := range checks {
		if slices.Contains(cfg.Skip, c.ID) {
			rep.add(c, Skipped, "left out by --skip", "", 0)
			continue
		}
		if runCtx.Err() != nil {
			why := "the run's time-out (--timeout) passed before this check"
			if ctx.Err() != nil {
				why = "the run was interrupted before this check"
			}
			rep.add(c, Skipped, why, "", 0)
			rep.TimedOut = true
			continue
		}
		rep.add(k.runCheck(runCtx, c))
	}
	// Clean up with a context of its own: a run that timed out or was
	// interrupted still removes what it made.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer ccancel()
	rep.Leftovers = k.cleanup(cctx)
	rep.Duration = time.Since(start)
	return rep, nil
}

// runCheck runs one check, turning its failure, skip or panic into a result.
func (k *kit) runCheck(ctx context.Context, c Check) (Check, Status, string, string, time.Duration) {
	t := &T{k: k, ctx: ctx, check: c}
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stop); !ok {
					t.status, t.msg = Failed, fmt.Sprintf("the check itself failed: %v", r)
				}
			}
		}()
		c.run(t)
	}()
	t.status = cmp.Or(t.status, Passed)
	if t.status == Failed && ctx.Err() != nil && !strings.Contains(t.msg, "time-out") {
		t.msg += " (the run's time-out passed)"
	}
	ex := ""
	if t.status == Failed && len(t.exchanges) > 0 {
		ex = t.exchanges[len(t.exchanges)-1]
	}
	return c, t.status, t.msg, ex, time.Since(start)
}

// T is the state of one running check.
type T struct {
	k         *kit
	ctx       context.Context
	check     Check
	status    Status
	msg       string
	exchanges []string
}

// stop unwinds a check that failed or was skipped.
type stop struct{}

// Fatalf fails the check with a message and ends it.
func (t *T) Fatalf(format string, args ...any) {
	t.status, t.msg = Failed, fmt.Sprintf(format, args...)
	panic(stop{})
}

// Skipf skips the check with the reason and ends it.
func (t *T) Skipf(format string, args ...any) {
	t.status, t.msg = Skipped, fmt.Sprintf(format, args...)
	panic(stop{})
}

// Check fails the check with the message when ok is false.
func (t *T) Check(ok bool, format string, args ...any) {
	if !ok {
		t.Fatalf(format, args...)
	}
}
