package yard

import (
	"context"
	"time"
)

// OAuthConsumer is an application registered for OAuth 1.0a (RFC 5849:
// the client). Its secret is sealed with the server's key, because
// verifying an HMAC signature needs the secret itself.
type OAuthConsumer struct {
	Key          string
	Name         string
	CallbackURL  string // when set, the only callback the consumer may use
	SealedSecret string
	CreatedBy    string // the administrator who registered it
	CreatedAt    time.Time
}

// Kinds of OAuth 1.0a token.
const (
	OAuthRequestToken = "request" // temporary credentials (RFC 5849 §2.1)
	OAuthAccessToken  = "access"  // token credentials (RFC 5849 §2.3)
)

// States of an OAuth 1.0a token. A request token is pending until the
// resource owner decides, then authorized or denied; an authorized one
// becomes used when exchanged. An access token is active until revoked
// (deleted).
const (
	OAuthPending    = "pending"
	OAuthAuthorized = "authorized"
	OAuthDenied     = "denied"
	OAuthUsed       = "used"
	OAuthActive     = "active"
)

// OAuthToken is a request token or an access token of a consumer.
type OAuthToken struct {
	// ID names the token in the revocation endpoints; Token is the
	// oauth_token value a client sends.
	ID           string
	Token        string
	Kind         string
	State        string
	ConsumerKey  string
	SealedSecret string
	Callback     string // request tokens: the oauth_callback ("oob" or a URL)
	UserID       string // the resource owner, once known
	VerifierHash string // request tokens: SHA-256 of the oauth_verifier, once authorized
	CreatedAt    time.Time
	ExpiresAt    time.Time // zero: never (access tokens)
}

// OAuthService stores OAuth 1.0a consumers and tokens, shared by every
// server process. Find methods return ENOTFOUND.
type OAuthService interface {
	CreateOAuthConsumer(ctx context.Context, c *OAuthConsumer) error
	FindOAuthConsumer(ctx context.Context, key string) (*OAuthConsumer, error)
	// ListOAuthConsumers returns a page of consumers, oldest first, and
	// the total count.
	ListOAuthConsumers(ctx context.Context, page Page) ([]*OAuthConsumer, int, error)
	// DeleteOAuthConsumer deletes a consumer and every token it holds, and
	// reports whether it existed.
	DeleteOAuthConsumer(ctx context.Context, key string) (bool, error)

	CreateOAuthToken(ctx context.Context, t *OAuthToken) error
	// FindOAuthToken finds a token by its oauth_token value.
	FindOAuthToken(ctx context.Context, token string) (*OAuthToken, error)
	// DecideOAuthToken moves a pending, unexpired request token to state
	// (OAuthAuthorized with the user and verifier hash, or OAuthDenied),
	// and reports whether it did.
	DecideOAuthToken(ctx context.Context, token, state, userID, verifierHash string, now time.Time) (bool, error)
	// ExchangeOAuthToken marks an authorized, unexpired request token whose
	// verifier hash matches as used and stores access in the same
	// transaction; it reports whether it did (a token is exchanged once).
	ExchangeOAuthToken(ctx context.Context, requestToken, verifierHash string, now time.Time, access *OAuthToken) (bool, error)
	// ListOAuthAccess returns the access tokens of a user ("" for every
	// user), newest first.
	ListOAuthAccess(ctx context.Context, userID string) ([]*OAuthToken, error)
	// FindOAuthAccess finds an access token by its ID.
	FindOAuthAccess(ctx context.Context, id string) (*OAuthToken, error)
	// DeleteOAuthToken deletes a token by its ID and reports whether it
	// existed.
	DeleteOAuthToken(ctx context.Context, id string) (bool, error)
	// PurgeOAuth deletes request tokens that expired before now.
	PurgeOAuth(ctx context.Context, now time.Time) error
}
