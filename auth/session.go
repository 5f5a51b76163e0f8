package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// Sessions is the cookie-session scheme (spec: Session; docs/auth.md). A
// session key has 256 random bits; the store keeps only its SHA-256. A
// session ends Idle after its last action or Max after it began.
//
// To keep a cookie request cheap, a process remembers a session it read for
// CacheTTL, and writes the last-action timestamp at most once per
// TouchInterval(Idle) (a twentieth of the idle time-out, at most a minute),
// so a session ends at most that interval before Idle after its last use,
// for any Idle. A remembered session whose idle time-out seems passed is
// read again before it is refused (another process may have used it). A
// logout on another process takes effect here within CacheTTL; on this
// process at once.
//
// Unsafe methods authenticated by the cookie must pass Go's
// http.CrossOriginProtection (Sec-Fetch-Site / Origin checks), or they are
// refused with 403.
type Sessions struct {
	Store    yard.AuthStateService
	Users    *UserCache
	Idle     time.Duration
	Max      time.Duration
	CacheTTL time.Duration
	Now      func() time.Time
	// CrossOrigin checks unsafe cookie-authenticated requests.
	CrossOrigin *http.CrossOriginProtection

	cache ttlCache[string, yard.Session]
}

// Name implements Scheme.
func (s *Sessions) Name() string { return "session" }

// Match implements Scheme.
func (s *Sessions) Match(r *http.Request) bool {
	_, err := r.Cookie(SessionCookie)
	return err == nil
}

// Challenges implements Scheme; cookies have no challenge.
func (s *Sessions) Challenges(*http.Request) []string { return nil }

// HashKey returns the stored form of a session key or an oauth_verifier:
// the hex SHA-256 of it.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CreateAt starts a session for a user and returns its key and when it
// began, as the store keeps it (milliseconds), for an answer that shows it.
func (s *Sessions) CreateAt(ctx context.Context, userID string) (string, time.Time, error) {
	key := randomString("", 32)
	now := s.Now().UTC().Truncate(time.Millisecond)
	if err := s.Store.CreateSession(ctx, &yard.Session{KeyHash: HashKey(key), UserID: userID, CreatedAt: now, LastSeen: now}); err != nil {
		return "", time.Time{}, err
	}
	return key, now, nil
}

// Delete ends the session with key and reports whether it existed.
func (s *Sessions) Delete(ctx context.Context, key string) (bool, error) {
	h := HashKey(key)
	s.cache.drop(h)
	return s.Store.DeleteSession(ctx, h)
}

// Cookie returns the Set-Cookie value that gives the client key.
func (s *Sessions) Cookie(key string) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: key, Path: "/", MaxAge: int(s.Max.Seconds()),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode}
}

// ExpiredCookie returns the Set-Cookie value that makes a client drop it.
func (s *Sessions) ExpiredCookie() *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode}
}

// Authenticate implements Scheme.
func (s *Sessions) Authenticate(r *http.Request) (*yard.Principal, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || len(c.Value) != 43 {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The session cookie is not valid.")
	}
	ctx := r.Context()
	h := HashKey(c.Value)
	now := s.Now()
	sess, err := s.lookup(ctx, h, now, s.CacheTTL)
	if err != nil {
		return nil, err
	}
	if s.expired(sess, now) {
		// The cache may hold an old last-action time: ask the store.
		if sess, err = s.lookup(ctx, h, now, 0); err != nil {
			return nil, err
		}
		if s.expired(sess, now) {
			s.cache.drop(h)
			_, _ = s.Store.DeleteSession(ctx, h)
			return nil, yard.Errorf(yard.EUNAUTHORIZED, "The session has expired; sign in again.")
		}
	}
	if now.Sub(sess.LastSeen) >= TouchInterval(s.Idle) {
		if err := s.Store.TouchSession(ctx, h, now); err != nil {
			return nil, err
		}
		// Keep the time the session was read: a session in constant use
		// must still be read again every CacheTTL, or a logout on another
		// process would never reach this one.
		s.cache.update(h, func(c *yard.Session) { c.LastSeen = now })
	}
	if !isSafe(r.Method) && s.CrossOrigin != nil {
		if err := s.CrossOrigin.Check(r); err != nil {
			return nil, yard.Errorf(yard.EFORBIDDEN, "Cross-site request refused: a cookie-authenticated %s must come from this site.", r.Method)
		}
	}
	return s.Users.Principal(ctx, sess.UserID, s.Name())
}

// TouchInterval is how often the last-action time of a session in use is
// written for an idle time-out: a twentieth of it (so the time-out is exact
// to within 5 %), at most a minute, at least 10 ms.
func TouchInterval(idle time.Duration) time.Duration {
	return min(max(idle/20, 10*time.Millisecond), time.Minute)
}

// ForgetUser drops the remembered sessions of a user (after a password
// change, which ends them in the store).
func (s *Sessions) ForgetUser(userID string) {
	s.cache.dropFunc(func(sess yard.Session) bool { return sess.UserID == userID })
}

func (s *Sessions) expired(sess yard.Session, now time.Time) bool {
	return now.Sub(sess.LastSeen) >= s.Idle || now.Sub(sess.CreatedAt) >= s.Max
}

// lookup returns the session of key hash h, read from the store unless
// the cache holds one read less than ttl ago.
func (s *Sessions) lookup(ctx context.Context, h string, now time.Time, ttl time.Duration) (yard.Session, error) {
	return s.cache.getOrLoad(h, now, ttl, 100000, func() (yard.Session, error) {
		sess, err := s.Store.FindSession(ctx, h)
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			s.cache.drop(h)
			return yard.Session{}, yard.Errorf(yard.EUNAUTHORIZED, "The session does not exist; sign in again.")
		} else if err != nil {
			return yard.Session{}, err
		}
		return *sess, nil
	})
}

func isSafe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// buildSessions is the session cookie's entry in the chain's ordered list
// (kit.go).
func buildSessions(_ context.Context, cfg Config, k *Kit) (Scheme, error) {
	k.Sessions = &Sessions{Store: cfg.Store, Users: k.Users, Idle: defaults.Positive(cfg.SessionIdle, 30*time.Minute),
		Max: defaults.Positive(cfg.SessionMax, 12*time.Hour), CacheTTL: k.cacheTTL, Now: k.Now,
		CrossOrigin: http.NewCrossOriginProtection()}
	return k.Sessions, nil
}
