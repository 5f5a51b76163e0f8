package auth

import (
	"context"
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

	cache ttlCache[string, userEntry]
}

type userEntry struct {
	p  yard.Principal
	ok bool
}

// Principal returns the principal of an enabled user, authenticated by the
// scheme named, or EUNAUTHORIZED.
func (c *UserCache) Principal(ctx context.Context, userID, scheme string) (*yard.Principal, error) {
	now := c.Now()
	e, hit := c.cache.get(userID, now, c.TTL)
	if !hit {
		u, err := c.Users.FindUserByID(ctx, userID)
		switch {
		case yard.ErrorCode(err) == yard.ENOTFOUND:
			e = userEntry{}
		case err != nil:
			return nil, err
		default:
			e = userEntry{p: yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}, ok: !u.Disabled}
		}
		c.cache.put(userID, e, now, 100000)
	}
	if !e.ok {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The account does not exist or is disabled.")
	}
	p := e.p
	p.Scheme = scheme
	return &p, nil
}

// Forget drops a user from the cache (after a change of the user).
func (c *UserCache) Forget(userID string) {
	c.cache.drop(userID)
}
