package auth

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
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
// Verified credentials are cached in memory for CacheTTL, keyed by a
// SHA-256 of the user name and password, so a client sending Basic on every
// request pays the slow hash once per TTL. Invalidate drops a user's entries
// when the password or the user changes.
type Basic struct {
	Users    Users
	Limiter  *LoginLimiter
	CacheTTL time.Duration
	Now      func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]basicEntry
	// flights shares one verification among concurrent requests carrying
	// the same credentials, so a burst after a cache miss pays argon2id once.
	flights singleflight.Group
}

type basicEntry struct {
	principal yard.Principal
	expires   time.Time
}

// NewBasic returns a Basic scheme with a one-minute cache.
func NewBasic(users Users, limiter *LoginLimiter) *Basic {
	return &Basic{Users: users, Limiter: limiter, CacheTTL: time.Minute, Now: time.Now, cache: map[[32]byte]basicEntry{}}
}

// Name implements Scheme.
func (b *Basic) Name() string { return "basic" }

// Match implements Scheme.
func (b *Basic) Match(r *http.Request) bool {
	s, _ := AuthScheme(r.Header.Get("Authorization"))
	return s == "basic"
}

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
	b.mu.Lock()
	e, hit := b.cache[key]
	b.mu.Unlock()
	if hit && now.Before(e.expires) {
		p := e.principal
		return &p, nil
	}
	keys := Keys(r, username)
	if err := b.Limiter.Check(keys...); err != nil {
		return nil, err
	}
	v, err, _ := b.flights.Do(string(key[:]), func() (any, error) {
		return VerifyUserPassword(context.WithoutCancel(r.Context()), b.Users, username, password)
	})
	if err != nil {
		if yard.ErrorCode(err) == yard.EUNAUTHORIZED {
			b.Limiter.Fail(keys...)
		}
		return nil, err
	}
	p := *v.(*yard.Principal) // a copy: concurrent callers share the flight's result
	p.Scheme = b.Name()
	b.mu.Lock()
	if len(b.cache) > 100000 {
		clear(b.cache)
	}
	b.cache[key] = basicEntry{principal: p, expires: now.Add(b.CacheTTL)}
	b.mu.Unlock()
	return &p, nil
}

// Invalidate drops every cached entry of the user.
func (b *Basic) Invalidate(userID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.cache {
		if e.principal.UserID == userID {
			delete(b.cache, k)
		}
	}
}

// VerifyUserPassword checks a user name and password against the store and
// returns the principal of an enabled user, or EUNAUTHORIZED. The slow hash
// runs even for an unknown name, so timing does not tell which names exist.
func VerifyUserPassword(ctx context.Context, users Users, username, password string) (*yard.Principal, error) {
	refused := yard.Errorf(yard.EUNAUTHORIZED, "The user name or password is wrong.")
	u, err := users.FindUserByName(ctx, username)
	if yard.ErrorCode(err) == yard.ENOTFOUND {
		VerifyPassword(dummyHash, password)
		return nil, refused
	} else if err != nil {
		return nil, err
	}
	creds, err := users.FindCredentials(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	if !VerifyPassword(creds.PasswordHash, password) {
		return nil, refused
	}
	if u.Disabled {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The account is disabled.")
	}
	return &yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}, nil
}

var dummyHash, _ = HashPassword("not a real password")

func foldName(s string) string { return strings.ToLower(s) }
