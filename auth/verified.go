package auth

import (
	"sync"
	"time"

	"github.com/yard-api/yard"
)

// maxVerified bounds the tokens a verifiedTokens holds; past it the map
// starts afresh (tokens are checked again, never trusted longer).
const maxVerified = 100000

// verifiedTokens remembers the claims of tokens whose signature checked
// out, so that a request pays for a signature once per token: the access
// tokens of the pair (Tokens) and public-key tokens (PKTokens). What the
// claims say (expiry, use, binding) is checked on every request by the
// caller; a token is dropped once seen expired.
type verifiedTokens struct {
	mu sync.Mutex
	m  map[string]*Claims
}

// verify returns the remembered claims of token, else those check returns
// (remembered when check succeeds).
func (v *verifiedTokens) verify(token string, check func() (*Claims, error)) (*Claims, error) {
	v.mu.Lock()
	c := v.m[token]
	v.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := check()
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if v.m == nil || len(v.m) >= maxVerified {
		v.m = map[string]*Claims{}
	}
	v.m[token] = c
	v.mu.Unlock()
	return c, nil
}

// live returns the claims of token as verify does, or, when they have
// expired by now() (read after the check), ETOKENEXPIRED with msg and an
// invalid_token challenge saying desc; an expired token is forgotten.
func (v *verifiedTokens) live(token string, now func() time.Time, check func() (*Claims, error), msg, desc string) (*Claims, error) {
	c, err := v.verify(token, check)
	if err != nil {
		return nil, err
	}
	if !now().Before(time.Unix(c.Expires, 0)) {
		v.forget(token)
		return nil, &yard.Error{Code: yard.ETOKENEXPIRED, Message: msg, Challenge: InvalidTokenChallenge(desc)}
	}
	return c, nil
}

// forget drops token (seen expired).
func (v *verifiedTokens) forget(token string) {
	v.mu.Lock()
	delete(v.m, token)
	v.mu.Unlock()
}
