package yard

import (
	"context"
	"time"
)

// Session is a cookie session (spec: Session): a key mapped to a user,
// with the last-action timestamp used for the idle time-out. Only a hash of
// the key is stored.
type Session struct {
	KeyHash   string
	UserID    string
	CreatedAt time.Time
	LastSeen  time.Time
}

// RefreshFamily is the chain of refresh tokens issued from one login. Only
// the newest token (Current, a jti) may be used; presenting an older one is
// reuse and revokes the family (RFC 9700 §4.14.2).
type RefreshFamily struct {
	ID        string
	UserID    string
	Current   string
	ExpiresAt time.Time
}

// APIKey is a signed-request key: a public id (the apiKey query variable)
// and the secret, sealed with the server's key because verifying an HMAC
// needs the secret itself.
type APIKey struct {
	ID           string
	UserID       string
	SealedSecret string
	CreatedAt    time.Time
}

// Outcomes of AuthStateService.RotateRefresh.
const (
	RotateOK      = iota // the token was current; the family now holds the new one
	RotateReused         // the token was an older one: the family is now revoked
	RotateRevoked        // the family was already revoked, or does not exist
)

// AuthStateService keeps the state of the authentication schemes that must
// be shared by every server process: sessions, refresh-token families,
// Digest nonce counts, API keys and the signatures already used.
//
// Find methods return ENOTFOUND.
type AuthStateService interface {
	CreateSession(ctx context.Context, s *Session) error
	FindSession(ctx context.Context, keyHash string) (*Session, error)
	TouchSession(ctx context.Context, keyHash string, at time.Time) error
	// DeleteSession reports whether the session existed.
	DeleteSession(ctx context.Context, keyHash string) (bool, error)

	CreateRefreshFamily(ctx context.Context, f *RefreshFamily) error
	// RotateRefresh replaces the current jti old by new atomically; when
	// old is not current it revokes the family and answers RotateReused.
	RotateRefresh(ctx context.Context, familyID, oldJTI, newJTI string, expires time.Time) (int, error)
	RevokeRefreshFamily(ctx context.Context, familyID string) error

	// UseNonceCount records nc for a Digest nonce and reports whether it
	// is higher than every count seen for that nonce.
	UseNonceCount(ctx context.Context, nonce string, nc uint64, expires time.Time) (bool, error)

	CreateAPIKey(ctx context.Context, k *APIKey) error
	FindAPIKey(ctx context.Context, id string) (*APIKey, error)
	// DeleteAPIKey reports whether the key existed.
	DeleteAPIKey(ctx context.Context, id string) (bool, error)
	// UseSignatures records distinct signatures of signed requests (and
	// OAuth 1.0a nonces) in one statement and returns the ones that were
	// new. Each expires must follow from its signed timestamp (it is the
	// end of the signature's window), so that one signature always comes
	// with one expires.
	UseSignatures(ctx context.Context, signatures []string, expires []time.Time) (map[string]bool, error)

	// PurgeAuthState deletes expired nonces, signatures, sessions and
	// refresh families.
	PurgeAuthState(ctx context.Context, now time.Time, sessionMax time.Duration) error
}

// LoginAttemptService counts sign-in attempts for the login limiter in the
// store, so that every process sharing it enforces one limit.
type LoginAttemptService interface {
	// ReserveLoginAttempt records the attempt id under every key made at
	// at, if each key has fewer than limit attempts after since;
	// otherwise it records nothing, reports false and returns when the
	// fullest key's oldest counted attempt was made (it allows again once
	// that attempt has left the window).
	ReserveLoginAttempt(ctx context.Context, id string, keys []string, at, since time.Time, limit int) (ok bool, oldest time.Time, err error)
	// ReleaseLoginAttempt deletes the attempt id (a sign-in that succeeded).
	ReleaseLoginAttempt(ctx context.Context, id string, keys []string) error
	// PurgeLoginAttempts deletes attempts made at or before before.
	PurgeLoginAttempts(ctx context.Context, before time.Time) error
}
