package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// Claims are the JWT claims yard writes (RFC 7519 §4.1 plus its own).
type Claims struct {
	Issuer   string   `json:"iss,omitempty"`
	Subject  string   `json:"sub"`
	IssuedAt int64    `json:"iat,omitempty"`
	Expires  int64    `json:"exp"`
	ID       string   `json:"jti,omitempty"`
	Name     string   `json:"name,omitempty"`
	Roles    []string `json:"roles,omitempty"`
	// Use tells an access token from a refresh token ("access", "refresh").
	Use string `json:"token_use,omitempty"`
	// Family is the refresh-token family a refresh token belongs to.
	Family string `json:"fam,omitempty"`
	// IP binds a public-key token to the caller's address.
	IP string `json:"ip,omitempty"`
	// PasswordHash is a fresh argon2id hash of the password (public-key token).
	PasswordHash string `json:"pwh,omitempty"`
}

// jwtHeader is the part of a JOSE header yard looks at before verifying.
type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

var errMalformedJWT = errors.New("malformed JWT")

// peekHeader decodes the protected header of a compact JWS without
// verifying it, so the caller can pick the one key and algorithm it accepts.
// Only the compact form with three base64url parts is accepted.
func peekHeader(token string) (jwtHeader, error) {
	var h jwtHeader
	if len(token) > 8192 || strings.Count(token, ".") != 2 || strings.ContainsFunc(token, func(c rune) bool {
		return !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.')
	}) {
		return h, errMalformedJWT
	}
	head, _, _ := strings.Cut(token, ".")
	if decodeSegment(head, &h) != nil {
		return h, errMalformedJWT
	}
	return h, nil
}

// decodeSegment decodes a base64url JSON part of a compact JWS into v.
func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// signJWT signs claims as a compact JWS with the algorithm given (pinned by
// the caller, never taken from input).
func signJWT(c *Claims, alg jwa.SignatureAlgorithm, key any, kid string) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.TypeKey, "JWT")
	if kid != "" {
		_ = hdr.Set(jws.KeyIDKey, kid)
	}
	b, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// verifyJWT checks a compact JWS with exactly one algorithm and key, then
// decodes its claims. Expiry is the caller's business.
func verifyJWT(token string, alg jwa.SignatureAlgorithm, key any) (*Claims, error) {
	payload, err := jws.Verify([]byte(token), jws.WithKey(alg, key))
	if err != nil {
		return nil, err
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil || c.Subject == "" || c.Expires == 0 {
		return nil, errMalformedJWT
	}
	return &c, nil
}

// peekUse returns the token_use claim of a compact JWS without verifying
// it: only to choose a verifier, which then checks everything.
func peekUse(token string) string {
	var c struct {
		Use string `json:"token_use"`
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || decodeSegment(parts[1], &c) != nil {
		return ""
	}
	return c.Use
}
