package auth

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/yard-api/yard"
)

// LoginLimiter counts failed sign-in attempts in a sliding window per key
// (a client address, a user name). Once a key has Limit failures inside the
// window, every attempt for it is refused with 429 (even with the right
// password) until the oldest failure leaves the window (CONTRACT 4).
//
// The counts live in the memory of one process: with several processes a
// client gets at most Limit failures per process per window.
type LoginLimiter struct {
	Limit  int
	Window time.Duration
	Now    func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time
	lastGC   time.Time
}

// NewLoginLimiter returns a limiter of limit failures per minute.
func NewLoginLimiter(limit int) *LoginLimiter {
	return &LoginLimiter{Limit: limit, Window: time.Minute, Now: time.Now, failures: map[string][]time.Time{}}
}

// Check returns a rate-limit error if any key is over its limit.
func (l *LoginLimiter) Check(keys ...string) error {
	if l == nil || l.Limit <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	var wait time.Duration
	for _, k := range keys {
		f := l.prune(k, now)
		if len(f) >= l.Limit {
			if d := f[len(f)-l.Limit].Add(l.Window).Sub(now); d > wait {
				wait = d
			}
		}
	}
	if wait > 0 {
		return &yard.Error{Code: yard.ERATELIMIT, Message: "Too many failed sign-in attempts; try again later.",
			RetryAfter: int(math.Ceil(wait.Seconds()))}
	}
	return nil
}

// Fail records a failed attempt for each key.
func (l *LoginLimiter) Fail(keys ...string) {
	if l == nil || l.Limit <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	for _, k := range keys {
		l.failures[k] = append(l.prune(k, now), now)
	}
	if now.Sub(l.lastGC) > l.Window {
		for k := range l.failures {
			if len(l.prune(k, now)) == 0 {
				delete(l.failures, k)
			}
		}
		l.lastGC = now
	}
}

func (l *LoginLimiter) prune(k string, now time.Time) []time.Time {
	f := l.failures[k]
	i := 0
	for i < len(f) && now.Sub(f[i]) >= l.Window {
		i++
	}
	f = f[i:]
	if len(f) == 0 {
		delete(l.failures, k)
		return nil
	}
	l.failures[k] = f
	return f
}

// Keys returns the limiter keys of a sign-in attempt: the client address
// and the (case-folded) user name.
func Keys(r *http.Request, username string) []string {
	keys := []string{"ip:" + ClientIP(r)}
	if username != "" {
		keys = append(keys, "user:"+foldName(username))
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
