package store

import (
	"context"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

var _ yard.OpenIDService = (*DB)(nil)

// CreateOpenIDAssociation stores a new association.
func (db *DB) CreateOpenIDAssociation(ctx context.Context, a *yard.OpenIDAssociation) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO openid_associations (handle, assoc_type, sealed_key, private, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, a.Handle, a.Type, a.SealedKey, a.Private, Millis(a.CreatedAt), Millis(a.ExpiresAt))
	return err
}

// FindOpenIDAssociation returns the association with that handle, or
// ENOTFOUND. Expired ones are returned too: the caller decides.
func (db *DB) FindOpenIDAssociation(ctx context.Context, handle string) (*yard.OpenIDAssociation, error) {
	var a yard.OpenIDAssociation
	found, err := scanned(&a, db.read.QueryRowContext(ctx, `SELECT handle, assoc_type, sealed_key, private, created_at, expires_at
		FROM openid_associations WHERE handle = $1`, handle).Scan(&a.Handle, &a.Type, &a.SealedKey, &a.Private, ms(&a.CreatedAt), ms(&a.ExpiresAt)))
	return found, notFound(err, "OpenID association")
}

// DeleteOpenIDAssociation deletes an association; deleting a missing one
// is harmless.
func (db *DB) DeleteOpenIDAssociation(ctx context.Context, handle string) error {
	_, err := db.write.ExecContext(ctx, `DELETE FROM openid_associations WHERE handle = $1`, handle)
	return err
}

// UseOpenIDNonce records a response nonce and reports whether it was new.
// One INSERT ... ON CONFLICT DO NOTHING: of two processes racing with the
// same nonce, exactly one sees a row written.
func (db *DB) UseOpenIDNonce(ctx context.Context, nonce string, expires time.Time) (bool, error) {
	n, err := affected(db.write.ExecContext(ctx, `INSERT INTO openid_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING`,
		nonce, Millis(expires)))
	return n == 1, err
}

// FindOpenIDApproval returns the user's approval of a realm, or ENOTFOUND.
func (db *DB) FindOpenIDApproval(ctx context.Context, userID, realm string) (*yard.OpenIDApproval, error) {
	var a yard.OpenIDApproval
	var sreg string
	err := db.read.QueryRowContext(ctx, `SELECT user_id, realm, sreg, created_at FROM openid_approvals WHERE user_id = $1 AND realm = $2`,
		userID, realm).Scan(&a.UserID, &a.Realm, &sreg, ms(&a.CreatedAt))
	if err != nil {
		return nil, notFound(err, "OpenID approval")
	}
	if sreg != "" {
		a.SReg = strings.Split(sreg, ",")
	}
	return &a, nil
}

// SaveOpenIDApproval creates or replaces the approval of (user, realm).
func (db *DB) SaveOpenIDApproval(ctx context.Context, a *yard.OpenIDApproval) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO openid_approvals (user_id, realm, sreg, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id, realm) DO UPDATE SET sreg = excluded.sreg, created_at = excluded.created_at`,
		a.UserID, a.Realm, strings.Join(a.SReg, ","), Millis(a.CreatedAt))
	return err
}

// PurgeOpenID deletes expired associations and nonces.
func (db *DB) PurgeOpenID(ctx context.Context, now time.Time) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		return tx.execEach(ctx, []any{Millis(now)}, `DELETE FROM openid_associations WHERE expires_at < $1`,
			`DELETE FROM openid_nonces WHERE expires_at < $1`)
	})
}
