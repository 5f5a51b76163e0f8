package yard

import (
	"context"
	"slices"
)

// Roles a user can hold.
const (
	RoleAdmin = "admin"
	RoleUser  = "user"
)

// Principal is the authenticated caller of a request, whichever scheme
// proved who it is.
type Principal struct {
	UserID string
	Name   string
	Roles  []string
	// Scheme names the authentication scheme that produced the principal
	// ("basic", "digest", "session", "bearer", "pk-token", "signed", "oauth").
	Scheme string
}

// IsAdmin reports whether the principal holds the admin role.
func (p *Principal) IsAdmin() bool { return p != nil && slices.Contains(p.Roles, RoleAdmin) }

type principalKey struct{}

// NewContextWithPrincipal returns a context carrying p.
func NewContextWithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the principal in ctx, or nil.
func PrincipalFromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
