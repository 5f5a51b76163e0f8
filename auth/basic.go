package auth

import (
	"context"
	"crypto/sha256"
	"net/http"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/yard-api/yard"
)

// Users is what the password-based schemes need of the user store.
type Users interface {
	FindUserByName(ctx context.Context, name string) (*yard.User, error)
	FindUserByID(ctx context.Context, id string) (*yard.User, error)
	FindCredentials(ctx context.Context, userID string) (*yard.Credentials, error)
}

// Basic is HTTP Basic authentication (RFC 7617) against argon2id hashes.
//
// Verified credentials are remembered in memory, keyed by a SHA-256 of the
// user name and password, so a client sending Basic on every request pays
// the slow hash rarely. A remembered entry is trusted for CacheTTL; after
// that, the next request compares it with the store (the user's stored
// password hash and whether the user is enabled: two cheap reads, no slow
// hash) and keeps it only if nothing changed. A password changed or a user
// disabled anywhere, even by the command line on another process, thus
// stops working within CacheTTL; Invalidate drops a user's entries at once
// in this process. An entry is verified afresh after MaxAge.
//
// A verification that does run takes a place in the login limiter first
// (docs/auth.md, "Login rate limit"), and concurrent requests carrying the
// same credentials share one verification.
type Basic struct {
	Users    Users
	Limiter  *LoginLimiter
	Hashing  *HashGate // bounds the password checks (nil: none)
	CacheTTL time.Duration
	MaxAge   time.Duration
	Now      func() time.Time

	// cache holds each verification from when it ran.
	cache ttlCache[[32]byte, basicEntry]
	// flights shares one verification among concurrent requests carrying
	// the same credentials, so a burst after a cache miss pays argon2id once.
	flights singleflight.Group
}

type basicEntry struct {
	principal yard.Principal
	// hash is the stored password hash the entry was verified against.
	hash string
	// checked is when the entry was last compared with the store.
	checked time.Time
}

// NewBasic returns a Basic scheme that trusts a verification for 5 s
// before comparing it with the store, and verifies afresh every 10 minutes.
func NewBasic(users Users, limiter *LoginLimiter, hashing *HashGate) *Basic {
	return &Basic{Users: users, Limiter: limiter, Hashing: hashing, CacheTTL: 5 * time.Second, MaxAge: 10 * time.Minute,
		Now: time.Now}
}

// Name implements Scheme.
func (b *Basic) Name() string { return "basic" }

// Match implements Scheme.
func (b *Basic) Match(r *http.Request) bool { return hasScheme(r, b.Name()) }

// Challenges implements Scheme (RFC 7617 §2).
func (b *Basic) Challenges(*http.Request) []string {
	return []string{`Basic realm="` + Realm + `", charset="UTF-8"`}
}

// Authenticate implements Scheme.
func (b *Basic) Authenticate(r *http.Request) (*yard.Principal, error) {
	username, password, ok := r.BasicAuth()
	if !ok || username == "" {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "Malformed Basic credentials.")
	}
	key := sha256.Sum256([]byte(username + "\x00" + password))
	now := b.Now()
	keys := Keys(r, username)
	// Over the limit, the right password is refused too, remembered or not.
	if err := b.Limiter.Blocked(keys...); err != nil {
		return nil, err
	}
	if p, ok, err := b.cached(r.Context(), key, now); err != nil {
		return nil, err
	} else if ok {
		return p, nil
	}
	v, err, _ := b.flights.Do(string(key[:]), func() (any, error) {
		ctx, cancel := detach(r.Context())
		defer cancel()
		var e basicEntry
		err := b.Limiter.guard(ctx, keys, func() error {
			p, hash, err := verifyUserPassword(ctx, b.Hashing, b.Users, username, password)
			if err == nil {
				e = basicEntry{principal: *p, hash: hash}
			}
			return err
		})
		return e, err
	})
	if err != nil {
		return nil, err
	}
	e := v.(basicEntry) // a copy: concurrent callers share the flight's result
	e.principal.Scheme = b.Name()
	e.checked = now
	b.cache.put(key, e, now, 100000)
	p := e.principal
	return &p, nil
}

// cached answers from a remembered verification, comparing it with the
// store when it is older than CacheTTL.
func (b *Basic) cached(ctx context.Context, key [32]byte, now time.Time) (*yard.Principal, bool, error) {
	e, hit := b.cache.get(key, now, b.MaxAge)
	if !hit {
		return nil, false, nil
	}
	if now.Sub(e.checked) >= b.CacheTTL {
		u, err := b.Users.FindUserByID(ctx, e.principal.UserID)
		var creds *yard.Credentials
		if err == nil {
			creds, err = b.Users.FindCredentials(ctx, u.ID)
		}
		if yard.ErrorCode(err) == yard.ENOTFOUND || err == nil && (u.Disabled || creds.PasswordHash != e.hash) {
			// Gone or changed: verify afresh (and refuse) the slow way.
			b.cache.drop(key)
			return nil, false, nil
		} else if err != nil {
			return nil, false, err
		}
		e.principal.Name, e.principal.Roles, e.checked = u.Name, u.Roles, now
		b.cache.update(key, func(c *basicEntry) { *c = e })
	}
	p := e.principal
	return &p, true, nil
}

// Invalidate drops every cached entry of the user.
func (b *Basic) Invalidate(userID string) {
	b.cache.dropFunc(func(e basicEntry) bool { return e.principal.UserID == userID })
}

// VerifyUserPassword checks a user name and password against the store and
// returns the principal of an enabled user, or EUNAUTHORIZED. The slow hash
// runs even for an unknown name, so timing does not tell which names exist.
// The hash runs through hashing (EUNAVAILABLE when the server is busy); it
// takes no place in a login limiter: sign-in paths go through Kit.Login or
// a scheme, which do.
func VerifyUserPassword(ctx context.Context, hashing *HashGate, users Users, username, password string) (*yard.Principal, error) {
	p, _, err := verifyUserPassword(ctx, hashing, users, username, password)
	return p, err
}

// verifyUserPassword is VerifyUserPassword that also returns the stored
// hash the password matched.
func verifyUserPassword(ctx context.Context, hashing *HashGate, users Users, username, password string) (*yard.Principal, string, error) {
	refused := yard.Errorf(yard.EUNAUTHORIZED, "The user name or password is wrong.")
	u, err := users.FindUserByName(ctx, username)
	if yard.ErrorCode(err) == yard.ENOTFOUND {
		if _, err := hashing.Check(ctx, unknownUserHash(), password); err != nil {
			return nil, "", err
		}
		return nil, "", refused
	} else if err != nil {
		return nil, "", err
	}
	creds, err := users.FindCredentials(ctx, u.ID)
	if err != nil {
		return nil, "", err
	}
	ok, err := hashing.Check(ctx, creds.PasswordHash, password)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", refused
	}
	if u.Disabled {
		return nil, "", yard.Errorf(yard.EUNAUTHORIZED, "The account is disabled.")
	}
	return &yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}, creds.PasswordHash, nil
}

// buildBasic is Basic's entry in the chain's ordered list (kit.go): the
// server's own Basic (Config.Basic, shared with endpoints that check
// passwords before the kit exists), put first; nil when there is none.
func buildBasic(_ context.Context, cfg Config, k *Kit) (Scheme, error) {
	if cfg.Basic == nil {
		return nil, nil
	}
	// A Basic verification is compared with the store as often as
	// everything else a process caches (docs/auth.md).
	cfg.Basic.CacheTTL = k.cacheTTL
	return cfg.Basic, nil
}
