package auth

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/yard-api/yard"
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

// HashPassword returns an argon2id PHC string for password. It runs under
// the process-wide bound of Hashing (EUNAVAILABLE when the server is busy).
func HashPassword(password string) (string, error) {
	return HashPasswordContext(context.Background(), password)
}

// HashPasswordContext is HashPassword that stops waiting for a hashing slot
// when ctx ends.
func HashPasswordContext(ctx context.Context, password string) (string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	var key []byte
	if err := Hashing.Do(ctx, func() {
		key = argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	}); err != nil {
		return "", err
	}
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword reports whether password matches the argon2id PHC string,
// comparing in constant time. A hash the server is too busy to run counts
// as no match; callers that can answer 503 use CheckPassword.
func VerifyPassword(phc, password string) bool {
	ok, _ := CheckPassword(context.Background(), phc, password)
	return ok
}

// CheckPassword reports whether password matches the argon2id PHC string,
// comparing in constant time. The hash runs under the process-wide bound
// of Hashing: when the server is busy it returns EUNAVAILABLE (503 with
// Retry-After), and it stops waiting when ctx ends.
func CheckPassword(ctx context.Context, phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, nil
	}
	var version int
	var m uint32
	var t uint32
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
	if err := Hashing.Do(ctx, func() { got = argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want))) }); err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// NewCredentials derives every stored form of a password: the argon2id hash
// for Basic and the login endpoints, and the RFC 7616 §3.4.2 HA1 values,
// H(username ":" realm ":" password), for Digest with MD5 and SHA-256.
func NewCredentials(username, password string) (*yard.Credentials, error) {
	return NewCredentialsContext(context.Background(), username, password)
}

// NewCredentialsContext is NewCredentials that stops waiting for a hashing
// slot when ctx ends.
func NewCredentialsContext(ctx context.Context, username, password string) (*yard.Credentials, error) {
	h, err := HashPasswordContext(ctx, password)
	if err != nil {
		return nil, err
	}
	return &yard.Credentials{
		PasswordHash: h,
		HA1MD5:       HA1("MD5", username, Realm, password),
		HA1SHA256:    HA1("SHA-256", username, Realm, password),
	}, nil
}

// HA1 computes H(username:realm:password) with the Digest algorithm named.
func HA1(algorithm, username, realm, password string) string {
	s := username + ":" + realm + ":" + password
	if strings.EqualFold(strings.TrimSuffix(algorithm, "-sess"), "MD5") {
		sum := md5.Sum([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
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
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
