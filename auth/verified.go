package auth

import (
	"math"
	"time"

	"github.com/yard-api/yard"
)

// maxVerified bounds the tokens a verifiedTokens holds; past it the cache
// starts afresh (tokens are checked again, never trusted longer).
const maxVerified = 100000

// verifiedTokens remembers the claims of tokens whose signature checked
// out, so that a request pays for a signature once per token: the access
// tokens of the pair (Tokens) and public-key tokens (PKTokens). What the
// claims say (expiry, use, binding) is checked on every request by the
// caller; a token is dropped once seen expired.
type verifiedTokens struct {
	cache ttlCache[string, *Claims]
}

// live returns the remembered claims of token, else those check returns
// (remembered when check succeeds), or, when they have expired by now()
// (read after the check), ETOKENEXPIRED with msg and an invalid_token
// challenge saying desc; an expired token is forgotten.
func (v *verifiedTokens) live(token string, now func() time.Time, check func() (*Claims, error), msg, desc string) (*Claims, error) {
	// Claims are remembered until their token expires, which is checked
	// below: the cache's own clock and age limit play no part.
	c, err := v.cache.getOrLoad(token, time.Time{}, math.MaxInt64, maxVerified-1, check)
	if err != nil {
		return nil, err
	}
	if !now().Before(time.Unix(c.Expires, 0)) {
		v.cache.drop(token)
		return nil, &yard.Error{Code: yard.ETOKENEXPIRED, Message: msg, Challenge: InvalidTokenChallenge(desc)}
	}
	return c, nil
}
