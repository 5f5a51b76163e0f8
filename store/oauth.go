package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/yard-api/yard"
)

var _ yard.OAuthService = (*DB)(nil)

// CreateOAuthConsumer stores a new consumer.
func (db *DB) CreateOAuthConsumer(ctx context.Context, c *yard.OAuthConsumer) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO oauth_consumers (consumer_key, name, callback_url, sealed_secret, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.Key, c.Name, c.CallbackURL, c.SealedSecret, c.CreatedBy, Millis(c.CreatedAt))
	return err
}

const consumerColumns = `consumer_key, name, callback_url, sealed_secret, created_by, created_at`

func scanConsumer(s rowScanner) (*yard.OAuthConsumer, error) {
	var c yard.OAuthConsumer
	return scanned(&c, s.Scan(&c.Key, &c.Name, &c.CallbackURL, &c.SealedSecret, &c.CreatedBy, ms(&c.CreatedAt)))
}

// FindOAuthConsumer returns the consumer with that key, or ENOTFOUND.
func (db *DB) FindOAuthConsumer(ctx context.Context, key string) (*yard.OAuthConsumer, error) {
	c, err := scanConsumer(db.read.QueryRowContext(ctx, `SELECT `+consumerColumns+` FROM oauth_consumers WHERE consumer_key = $1`, key))
	return c, notFound(err, "OAuth consumer")
}

// ListOAuthConsumers returns a page of consumers, oldest first.
func (db *DB) ListOAuthConsumers(ctx context.Context, page yard.Page) ([]*yard.OAuthConsumer, int, error) {
	return findPage(ctx, db, consumerColumns, `oauth_consumers`, `created_at, consumer_key`, nil, page.Max, page.Offset, scanConsumer)
}

// DeleteOAuthConsumer deletes a consumer and its tokens.
func (db *DB) DeleteOAuthConsumer(ctx context.Context, key string) (bool, error) {
	var n int64
	err := db.WithTx(ctx, func(tx *Tx) error {
		// The foreign key cascades; deleting the tokens first says so
		// without relying on it.
		_, err := tx.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE consumer_key = $1`, key)
		if err == nil {
			n, err = affected(tx.ExecContext(ctx, `DELETE FROM oauth_consumers WHERE consumer_key = $1`, key))
		}
		return err
	})
	return n > 0, err
}

const tokenColumns = `id, token, kind, state, consumer_key, sealed_secret, callback, user_id, verifier_hash, created_at, expires_at`

func scanToken(s rowScanner) (*yard.OAuthToken, error) {
	var t yard.OAuthToken
	var user sql.NullString
	if err := s.Scan(&t.ID, &t.Token, &t.Kind, &t.State, &t.ConsumerKey, &t.SealedSecret, &t.Callback, &user, &t.VerifierHash,
		ms(&t.CreatedAt), ms(&t.ExpiresAt)); err != nil {
		return nil, err
	}
	t.UserID = user.String
	return &t, nil
}

func insertToken(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, t *yard.OAuthToken) error {
	_, err := ex.ExecContext(ctx, `INSERT INTO oauth_tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		t.ID, t.Token, t.Kind, t.State, t.ConsumerKey, t.SealedSecret, t.Callback, nullString(t.UserID), t.VerifierHash,
		Millis(t.CreatedAt), Millis(t.ExpiresAt))
	return err
}

// CreateOAuthToken stores a new token.
func (db *DB) CreateOAuthToken(ctx context.Context, t *yard.OAuthToken) error {
	return insertToken(ctx, db.write, t)
}

// FindOAuthToken returns the token with that oauth_token value.
func (db *DB) FindOAuthToken(ctx context.Context, token string) (*yard.OAuthToken, error) {
	t, err := scanToken(db.read.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM oauth_tokens WHERE token = $1`, token))
	return t, notFound(err, "OAuth token")
}

// DecideOAuthToken records the resource owner's decision on a pending
// request token; one conditional UPDATE, so two decisions cannot both win.
func (db *DB) DecideOAuthToken(ctx context.Context, token, state, userID, verifierHash string, now time.Time) (bool, error) {
	n, err := affected(db.write.ExecContext(ctx, `UPDATE oauth_tokens SET state = $2, user_id = $3, verifier_hash = $4
		WHERE token = $1 AND kind = 'request' AND state = 'pending' AND expires_at > $5`,
		token, state, nullString(userID), verifierHash, Millis(now)))
	return n == 1, err
}

// ExchangeOAuthToken uses an authorized request token once and stores the
// access token in the same transaction.
func (db *DB) ExchangeOAuthToken(ctx context.Context, requestToken, verifierHash string, now time.Time, access *yard.OAuthToken) (bool, error) {
	ok := false
	err := db.WithTx(ctx, func(tx *Tx) error {
		n, err := affected(tx.ExecContext(ctx, `UPDATE oauth_tokens SET state = 'used'
			WHERE token = $1 AND kind = 'request' AND state = 'authorized' AND verifier_hash = $2 AND expires_at > $3`,
			requestToken, verifierHash, Millis(now)))
		if err != nil || n != 1 {
			return err
		}
		ok = true
		return insertToken(ctx, tx, access)
	})
	return ok, err
}

// ListOAuthAccess returns the access tokens of a user ("" for all), newest
// first.
func (db *DB) ListOAuthAccess(ctx context.Context, userID string) ([]*yard.OAuthToken, error) {
	q := `SELECT ` + tokenColumns + ` FROM oauth_tokens WHERE kind = 'access'`
	args := []any{}
	if userID != "" {
		q += ` AND user_id = $1`
		args = append(args, userID)
	}
	rows, err := db.read.QueryContext(ctx, q+` ORDER BY created_at DESC, id DESC`, args...)
	return appendRows(nil, rows, err, scanToken)
}

// FindOAuthAccess returns the access token with that id.
func (db *DB) FindOAuthAccess(ctx context.Context, id string) (*yard.OAuthToken, error) {
	t, err := scanToken(db.read.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM oauth_tokens WHERE id = $1 AND kind = 'access'`, id))
	return t, notFound(err, "OAuth authorization")
}

// DeleteOAuthToken deletes a token by id.
func (db *DB) DeleteOAuthToken(ctx context.Context, id string) (bool, error) {
	n, err := affected(db.write.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE id = $1`, id))
	return n > 0, err
}

// PurgeOAuth deletes request tokens that expired before now.
func (db *DB) PurgeOAuth(ctx context.Context, now time.Time) error {
	_, err := db.write.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE kind = 'request' AND expires_at < $1`, Millis(now))
	return err
}
