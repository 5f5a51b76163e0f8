package yard

import (
	"context"
	"time"
)

// OpenIDAssociation is a shared secret of the OpenID 2.0 provider
// (docs/auth.md, OpenID 2.0): made for a relying party by an associate
// request, or private (stateless mode), made by the provider to sign one
// assertion and usable only by check_authentication. The MAC key is
// sealed with the server's key.
type OpenIDAssociation struct {
	Handle    string
	Type      string // HMAC-SHA1 or HMAC-SHA256
	SealedKey string
	Private   bool
	CreatedAt time.Time
	ExpiresAt time.Time
}

// OpenIDApproval remembers that a user trusts a relying party's realm,
// and which Simple Registration fields they agreed to share with it.
type OpenIDApproval struct {
	UserID    string
	Realm     string
	SReg      []string
	CreatedAt time.Time
}

// OpenIDService keeps the OpenID provider's state that every server
// process shares. Find methods return ENOTFOUND.
type OpenIDService interface {
	CreateOpenIDAssociation(ctx context.Context, a *OpenIDAssociation) error
	FindOpenIDAssociation(ctx context.Context, handle string) (*OpenIDAssociation, error)
	// DeleteOpenIDAssociation deletes an association (once used, a
	// private one is of no further use).
	DeleteOpenIDAssociation(ctx context.Context, handle string) error
	// UseOpenIDNonce records a response nonce and reports whether it was
	// new: each assertion is verified at most once.
	UseOpenIDNonce(ctx context.Context, nonce string, expires time.Time) (bool, error)
	FindOpenIDApproval(ctx context.Context, userID, realm string) (*OpenIDApproval, error)
	// SaveOpenIDApproval creates or replaces the approval of (user, realm).
	SaveOpenIDApproval(ctx context.Context, a *OpenIDApproval) error
	// PurgeOpenID deletes expired associations and nonces.
	PurgeOpenID(ctx context.Context, now time.Time) error
}
