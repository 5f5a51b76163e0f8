package auth

import (
	"errors"
	"strconv"
	"testing"
)

// TestVerifiedTokens: a token's signature is checked once, a failed check
// is not remembered, a forgotten token is checked again, and the map never
// holds more than maxVerified tokens.
func TestVerifiedTokens(t *testing.T) {
	var v verifiedTokens
	checks := 0
	ok := func() (*Claims, error) { checks++; return &Claims{Subject: "u"}, nil }
	bad := func() (*Claims, error) { checks++; return nil, errors.New("bad signature") }
	for range 3 {
		if c, err := v.verify("t1", ok); err != nil || c.Subject != "u" {
			t.Fatalf("verify: %v, %v", c, err)
		}
	}
	if checks != 1 {
		t.Fatalf("%d checks of one token, want 1", checks)
	}
	for range 2 {
		if _, err := v.verify("t2", bad); err == nil {
			t.Fatal("a failed check was accepted")
		}
	}
	if checks != 3 {
		t.Fatalf("%d checks, want 3 (a failure is not remembered)", checks)
	}
	v.forget("t1")
	if _, _ = v.verify("t1", ok); checks != 4 {
		t.Fatalf("%d checks, want 4 (a forgotten token is checked again)", checks)
	}
	for i := range maxVerified + 10 {
		_, _ = v.verify(strconv.Itoa(i), ok)
		if len(v.m) > maxVerified {
			t.Fatalf("%d tokens held, more than %d", len(v.m), maxVerified)
		}
	}
}
