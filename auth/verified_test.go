package auth

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/yard-api/yard"
)

// TestVerifiedTokens: a token's signature is checked once, a failed check
// is not remembered, a token seen expired is forgotten (checked again),
// and the cache never holds more than maxVerified tokens.
func TestVerifiedTokens(t *testing.T) {
	var v verifiedTokens
	now := time.Unix(1000, 0)
	checks := 0
	ok := func() (*Claims, error) { checks++; return &Claims{Subject: "u", Expires: 2000}, nil }
	bad := func() (*Claims, error) { checks++; return nil, errors.New("bad signature") }
	live := func(token string, check func() (*Claims, error)) (*Claims, error) {
		return v.live(token, func() time.Time { return now }, check, "expired", "expired")
	}
	for range 3 {
		if c, err := live("t1", ok); err != nil || c.Subject != "u" {
			t.Fatalf("live: %v, %v", c, err)
		}
	}
	if checks != 1 {
		t.Fatalf("%d checks of one token, want 1", checks)
	}
	for range 2 {
		if _, err := live("t2", bad); err == nil {
			t.Fatal("a failed check was accepted")
		}
	}
	if checks != 3 {
		t.Fatalf("%d checks, want 3 (a failure is not remembered)", checks)
	}
	now = time.Unix(2000, 0)
	if _, err := live("t1", ok); yard.ErrorCode(err) != yard.ETOKENEXPIRED || checks != 3 {
		t.Fatalf("an expired token: %v after %d checks, want ETOKENEXPIRED after 3", err, checks)
	}
	if _, _ = live("t1", ok); checks != 4 {
		t.Fatalf("%d checks, want 4 (a token seen expired is checked again)", checks)
	}
	now = time.Unix(1000, 0)
	for i := range maxVerified + 10 {
		_, _ = live(strconv.Itoa(i), ok)
		if len(v.cache.m) > maxVerified {
			t.Fatalf("%d tokens held, more than %d", len(v.cache.m), maxVerified)
		}
	}
}
