package auth

import (
	"context"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yard-api/yard"
)

// LoginLimiter counts sign-in attempts in a sliding window per key (a
// client address, a user name). An attempt takes its place in the count
// before its password is checked (guard) and gives it back only when the
// check succeeds, so a burst of parallel guesses cannot all pass the
// limiter before the first failure is recorded. Once a key holds Limit
// attempts inside the window, every attempt for it is refused with 429
// (even with the right password) until the oldest one leaves the window
// (docs/auth.md, "Login rate limit").
//
// With Store set, the counts live in the store and every process sharing it
// enforces one limit; without, they live in this process's memory. With a
// store, the process also keeps its own attempts in memory (a part of the
// store's count, so a key this process alone has filled is refused without
// asking the store), and remembers a refusal by the store for at most a
// second: a burst against one key costs the store a few statements, not
// one per request.
type LoginLimiter struct {
	Limit int
	Now   func() time.Time
	// Store keeps the counts for every process; nil keeps them in memory.
	Store yard.LoginAttemptService

	mu       sync.Mutex
	attempts map[string][]memAttempt
	refused  map[string]storeRefusal // by the attempt's keys joined
	lastGC   time.Time
}

// storeRefusal is a refusal by the store, remembered until until (at most
// a second) for the same keys; retryAt is when the store said the keys
// allow again.
type storeRefusal struct{ until, retryAt time.Time }

type memAttempt struct {
	id string
	at time.Time
}

// NewLoginLimiter returns a limiter of limit attempts per minute (0: no
// limit) whose counts live in store, shared by every process on it, or in
// this process's memory when store is nil.
func NewLoginLimiter(limit int, store yard.LoginAttemptService) *LoginLimiter {
	return &LoginLimiter{Limit: limit, Now: time.Now, Store: store, attempts: map[string][]memAttempt{},
		refused: map[string]storeRefusal{}}
}

// guard runs a password check as a sign-in attempt under every key of
// keys. The attempt takes its place before check runs (a key that is
// full answers 429, and check does not run), and gives it back unless
// check refused the password (EUNAUTHORIZED): a right password, or one not
// checked at all (busy, store down), was not a guess. So a burst of
// parallel guesses cannot all pass before the first failure is counted.
func (l *LoginLimiter) guard(ctx context.Context, keys []string, check func() error) error {
	if l == nil || l.Limit <= 0 {
		return check()
	}
	id, err := l.reserve(ctx, keys)
	if err != nil {
		return err
	}
	err = check()
	if yard.ErrorCode(err) != yard.EUNAUTHORIZED {
		l.forget(id, keys)
		if l.Store != nil {
			// Best effort: a place not given back only counts one attempt
			// too many, until it leaves the window.
			_ = l.Store.ReleaseLoginAttempt(context.WithoutCancel(ctx), id, keys)
		}
	}
	return err
}

// reserve takes a place for an attempt under every key and returns its
// id, or returns the 429 of a key that is full.
func (l *LoginLimiter) reserve(ctx context.Context, keys []string) (string, error) {
	id := randomString("", 12)
	now := l.Now()
	l.mu.Lock()
	combo := strings.Join(keys, "\x00")
	if wait := l.blockedLocked(keys, now); wait > 0 {
		l.mu.Unlock()
		return "", l.refusal(wait)
	}
	for _, k := range keys {
		l.attempts[k] = append(l.attempts[k], memAttempt{id: id, at: now})
	}
	l.gcLocked(now)
	l.mu.Unlock()
	if l.Store == nil {
		return id, nil
	}
	reserveCtx, cancel := detach(ctx)
	ok, oldest, err := l.Store.ReserveLoginAttempt(reserveCtx, id, keys, now, now.Add(-loginWindow), l.Limit)
	cancel()
	if err != nil || !ok {
		l.forget(id, keys)
	}
	if err != nil {
		return "", err
	}
	if !ok {
		wait := oldest.Add(loginWindow).Sub(now)
		l.mu.Lock()
		l.refused[combo] = storeRefusal{until: now.Add(min(wait, time.Second)), retryAt: now.Add(wait)}
		l.mu.Unlock()
		return "", l.refusal(wait)
	}
	return id, nil
}

// forget drops an attempt from this process's memory.
func (l *LoginLimiter) forget(id string, keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		l.attempts[k] = slices.DeleteFunc(l.attempts[k], func(m memAttempt) bool { return m.id == id })
		if len(l.attempts[k]) == 0 {
			delete(l.attempts, k)
		}
	}
}

// Blocked returns the 429 of keys this process knows to be full (its own
// attempts in the window, a refusal by the store it remembers) without
// asking the store or reserving a place: for credentials a cache vouches
// for (Basic), which must still be refused while their address or name is
// over the limit, "even for the right password" (docs/auth.md, "Login rate
// limit"). Failures another process recorded in the store are seen by the
// next check that goes to the store.
func (l *LoginLimiter) Blocked(keys ...string) error {
	if l == nil || l.Limit <= 0 {
		return nil
	}
	now := l.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if wait := l.blockedLocked(keys, now); wait > 0 {
		return l.refusal(wait)
	}
	return nil
}

// blockedLocked returns how long keys stay refused by what this process
// knows: its own attempts, and a refusal by the store it remembers for
// the same keys (0: not refused).
func (l *LoginLimiter) blockedLocked(keys []string, now time.Time) time.Duration {
	wait := l.waitLocked(keys, now)
	if r, ok := l.refused[strings.Join(keys, "\x00")]; ok && now.Before(r.until) {
		wait = max(wait, r.retryAt.Sub(now))
	}
	return wait
}

// Purge drops attempts that have left the window from the store.
func (l *LoginLimiter) Purge(ctx context.Context) error {
	if l == nil || l.Store == nil {
		return nil
	}
	return l.Store.PurgeLoginAttempts(ctx, l.Now().Add(-loginWindow))
}

// loginWindow is the limiter's sliding window.
const loginWindow = time.Minute

func (l *LoginLimiter) refusal(wait time.Duration) error {
	return &yard.Error{Code: yard.ERATELIMIT, Message: "Too many sign-in attempts; try again later.",
		RetryAfter: max(1, int(math.Ceil(wait.Seconds())))}
}

// waitLocked returns how long until every key allows an attempt again (0:
// now).
func (l *LoginLimiter) waitLocked(keys []string, now time.Time) time.Duration {
	var wait time.Duration
	for _, k := range keys {
		f := l.pruneLocked(k, now)
		if len(f) >= l.Limit {
			wait = max(wait, f[len(f)-l.Limit].at.Add(loginWindow).Sub(now))
		}
	}
	return wait
}

func (l *LoginLimiter) gcLocked(now time.Time) {
	if now.Sub(l.lastGC) > loginWindow {
		for k := range l.attempts {
			l.pruneLocked(k, now)
		}
		maps.DeleteFunc(l.refused, func(_ string, r storeRefusal) bool { return !now.Before(r.until) })
		l.lastGC = now
	}
}

func (l *LoginLimiter) pruneLocked(k string, now time.Time) []memAttempt {
	f := l.attempts[k]
	i := slices.IndexFunc(f, func(a memAttempt) bool { return now.Sub(a.at) < loginWindow })
	if i < 0 {
		delete(l.attempts, k)
		return nil
	}
	f = f[i:]
	l.attempts[k] = f
	return f
}

// Keys returns the limiter keys of a sign-in attempt: the client address
// and the (case-folded) user name.
func Keys(r *http.Request, username string) []string {
	keys := []string{"ip:" + ClientIP(r)}
	if username != "" {
		keys = append(keys, "user:"+strings.ToLower(username))
	}
	return keys
}

// ClientIP returns the address of the peer that sent r.
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
