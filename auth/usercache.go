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
	e, err := c.cache.getOrLoad(userID, c.Now(), c.TTL, 100000, func() (userEntry, error) {
		u, err := c.Users.FindUserByID(ctx, userID)
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			return userEntry{}, nil // remembered: refused until TTL
		} else if err != nil {
			return userEntry{}, err
		}
		return userEntry{p: yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles}, ok: !u.Disabled}, nil
	})
	if err != nil {
		return nil, err
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
