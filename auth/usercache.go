package auth

import (
	"context"
	"sync"
	"time"

	"github.com/yard-api/yard"
)

// UserCache answers "may this user use the API, and with which roles" for
// the token and key schemes, keeping each answer for TTL so that verifying
// a token does not cost a store read per request. A disabled or deleted
// user is refused within TTL on every process (and at once on the process
// that changed it, through Forget).
type UserCache struct {
	Users Users
	TTL   time.Duration
	Now   func() time.Time

	mu sync.Mutex
	m  map[string]userEntry
}

type userEntry struct {
	p       yard.Principal
	ok      bool
	fetched time.Time
}

// Principal returns the principal of an enabled user, or EUNAUTHORIZED.
func (c *UserCache) Principal(ctx context.Context, userID string) (*yard.Principal, error) {
	now := c.Now()
	c.mu.Lock()
	e, hit := c.m[userID]
	c.mu.Unlock()
	if !hit || now.Sub(e.fetched) >= c.TTL {
		u, err := c.Users.FindUserByID(ctx, userID)
		switch {
		case yard.ErrorCode(err) == yard.ENOTFOUND:
			e = userEntry{fetched: now}
		case err != nil:
			return nil, err
		default:
			e = userEntry{p: yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}, ok: !u.Disabled, fetched: now}
		}
		c.mu.Lock()
		if c.m == nil || len(c.m) > 100000 {
			c.m = map[string]userEntry{}
		}
		c.m[userID] = e
		c.mu.Unlock()
	}
	if !e.ok {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The account does not exist or is disabled.")
	}
	p := e.p
	return &p, nil
}

// Forget drops a user from the cache (after a change of the user).
func (c *UserCache) Forget(userID string) {
	c.mu.Lock()
	delete(c.m, userID)
	c.mu.Unlock()
}
