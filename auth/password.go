package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/authparam"
)

// Realm is the protection space of Basic and Digest (RFC 7617, RFC 7616).
const Realm = "yard"

// Argon2id parameters (OWASP's minimum recommendation: 19 MiB, 2 passes).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// HashPassword returns an argon2id PHC string for password, at once (no
// gate): for command-line tools and tests.
func HashPassword(password string) (string, error) {
	var g *HashGate
	return g.Hash(context.Background(), password)
}

// Hash returns an argon2id PHC string for password, when the gate has room
// (EUNAVAILABLE when the server is busy), waiting no longer than ctx.
func (g *HashGate) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	var key []byte
	if err := g.Do(ctx, func() {
		key = argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	}); err != nil {
		return "", err
	}
	return phcString(salt, key), nil
}

// phcString is the PHC string of an argon2id key made with this
// package's parameters.
func phcString(salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// unknownUserHash is what a password given with a user name no user has
// is checked against: a PHC string of HashPassword's parameters, so the
// check costs what a real one does and timing does not tell which names
// exist. Its key is no password's hash that anyone knows (all zeros), and
// it is made when needed, not kept.
func unknownUserHash() string {
	return phcString(make([]byte, 16), make([]byte, argonKeyLen))
}

// Check reports whether password matches the argon2id PHC string,
// comparing in constant time. The hash runs when the gate has room: when
// the server is busy it returns EUNAVAILABLE (503 with Retry-After), and
// it stops waiting when ctx ends.
func (g *HashGate) Check(ctx context.Context, phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, nil
	}
	var version int
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, nil
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 || m > 1<<21 || t > 16 {
		return false, nil
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, nil
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 128 {
		return false, nil
	}
	var got []byte
	if err := g.Do(ctx, func() { got = argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want))) }); err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// NewCredentials derives every stored form of a password, at once (no
// gate): for command-line tools and tests. See HashGate.Credentials.
func NewCredentials(username, password string) (*yard.Credentials, error) {
	var g *HashGate
	return g.Credentials(context.Background(), username, password)
}

// Credentials derives every stored form of a password: the argon2id hash
// for Basic and the login endpoints (through the gate), and the RFC 7616
// §3.4.2 HA1 values, H(username ":" realm ":" password), for Digest with
// MD5 and SHA-256.
func (g *HashGate) Credentials(ctx context.Context, username, password string) (*yard.Credentials, error) {
	h, err := g.Hash(ctx, password)
	if err != nil {
		return nil, err
	}
	return CredentialsWithHash(username, password, h), nil
}

// CredentialsWithHash is the stored forms of a password whose argon2id
// hash (HashPassword) is already made: the hash, and the HA1 values of
// username (Credentials).
func CredentialsWithHash(username, password, hash string) *yard.Credentials {
	return &yard.Credentials{
		PasswordHash: hash,
		HA1MD5:       HA1("MD5", username, Realm, password),
		HA1SHA256:    HA1("SHA-256", username, Realm, password),
	}
}

// HA1 computes H(username:realm:password) with the Digest algorithm named.
func HA1(algorithm, username, realm, password string) string {
	return authparam.DigestHash(strings.TrimSuffix(algorithm, "-sess"), username+":"+realm+":"+password)
}

// ValidatePassword enforces the minimum password policy.
func ValidatePassword(p string) error {
	if len(p) < 8 || len(p) > 1024 {
		return yard.Invalid("The password is not acceptable.", yard.FieldError{Field: "password", Message: "must be 8-1024 characters"})
	}
	return nil
}

// GeneratePassword returns a random password of 24 URL-safe characters.
func GeneratePassword() string {
	return randomString("", 18)
}
