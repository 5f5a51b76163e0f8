package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

var _ yard.AuthStateService = (*DB)(nil)

// CreateSession stores a new session.
func (db *DB) CreateSession(ctx context.Context, s *yard.Session) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO sessions (key_hash, user_id, created_at, last_seen_at) VALUES ($1, $2, $3, $4)`,
		s.KeyHash, s.UserID, Millis(s.CreatedAt), Millis(s.LastSeen))
	return err
}

// FindSession returns the session with that key hash, or ENOTFOUND.
func (db *DB) FindSession(ctx context.Context, keyHash string) (*yard.Session, error) {
	var s yard.Session
	found, err := scanned(&s, db.read.QueryRowContext(ctx, `SELECT key_hash, user_id, created_at, last_seen_at FROM sessions
		WHERE key_hash = $1`, keyHash).Scan(&s.KeyHash, &s.UserID, ms(&s.CreatedAt), ms(&s.LastSeen)))
	return found, notFound(err, "Session")
}

// TouchSession moves the last-action timestamp forward (never back).
func (db *DB) TouchSession(ctx context.Context, keyHash string, at time.Time) error {
	_, err := db.write.ExecContext(ctx, `UPDATE sessions SET last_seen_at = $2 WHERE key_hash = $1 AND last_seen_at < $2`, keyHash, Millis(at))
	return err
}

// DeleteSession deletes a session and reports whether it existed.
func (db *DB) DeleteSession(ctx context.Context, keyHash string) (bool, error) {
	n, err := affected(db.write.ExecContext(ctx, `DELETE FROM sessions WHERE key_hash = $1`, keyHash))
	return n > 0, err
}

// CreateRefreshFamily stores a new refresh-token family.
func (db *DB) CreateRefreshFamily(ctx context.Context, f *yard.RefreshFamily) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO refresh_families (id, user_id, current_jti, expires_at, revoked_at, created_at) VALUES ($1, $2, $3, $4, 0, $5)`,
		f.ID, f.UserID, f.Current, Millis(f.ExpiresAt), Millis(db.Now()))
	return err
}

// RotateRefresh makes newJTI the family's usable token if oldJTI is the
// current one. The compare-and-set is one UPDATE, so two processes racing
// with the same token cannot both win: the loser sees reuse and revokes.
func (db *DB) RotateRefresh(ctx context.Context, familyID, oldJTI, newJTI string, expires time.Time) (int, error) {
	out := yard.RotateRevoked
	err := db.WithTx(ctx, func(tx *Tx) error {
		n, err := affected(tx.ExecContext(ctx, `UPDATE refresh_families SET current_jti = $3, expires_at = $4
			WHERE id = $1 AND current_jti = $2 AND revoked_at = 0`, familyID, oldJTI, newJTI, Millis(expires)))
		if err != nil {
			return err
		}
		if n == 1 {
			out = yard.RotateOK
			return nil
		}
		n, err = affected(tx.ExecContext(ctx, `UPDATE refresh_families SET revoked_at = $2 WHERE id = $1 AND revoked_at = 0`, familyID, Millis(tx.Now())))
		if n == 1 {
			out = yard.RotateReused
		}
		return err
	})
	return out, err
}

// RevokeRefreshFamily revokes a family; revoking twice is harmless.
func (db *DB) RevokeRefreshFamily(ctx context.Context, familyID string) error {
	_, err := db.write.ExecContext(ctx, `UPDATE refresh_families SET revoked_at = $2 WHERE id = $1 AND revoked_at = 0`, familyID, Millis(db.Now()))
	return err
}

// UseNonceCount records nc for a Digest nonce if it is higher than the
// highest count seen; one upsert, atomic on both engines.
func (db *DB) UseNonceCount(ctx context.Context, nonce string, nc uint64, expires time.Time) (bool, error) {
	n, err := affected(db.write.ExecContext(ctx, `INSERT INTO digest_nonces (nonce, nc, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (nonce) DO UPDATE SET nc = excluded.nc WHERE digest_nonces.nc < excluded.nc`, nonce, int64(nc), Millis(expires)))
	return n == 1, err
}

// CreateAPIKey stores a new API key.
func (db *DB) CreateAPIKey(ctx context.Context, k *yard.APIKey) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, sealed_secret, created_at) VALUES ($1, $2, $3, $4)`,
		k.ID, k.UserID, k.SealedSecret, Millis(k.CreatedAt))
	return err
}

// FindAPIKey returns the API key with that id, or ENOTFOUND.
func (db *DB) FindAPIKey(ctx context.Context, id string) (*yard.APIKey, error) {
	var k yard.APIKey
	found, err := scanned(&k, db.read.QueryRowContext(ctx, `SELECT id, user_id, sealed_secret, created_at FROM api_keys WHERE id = $1`, id).
		Scan(&k.ID, &k.UserID, &k.SealedSecret, ms(&k.CreatedAt)))
	return found, notFound(err, "API key")
}

// DeleteAPIKey deletes an API key and reports whether it existed.
func (db *DB) DeleteAPIKey(ctx context.Context, id string) (bool, error) {
	n, err := affected(db.write.ExecContext(ctx, `DELETE FROM api_keys WHERE id = $1`, id))
	return n > 0, err
}

// UseSignatures records distinct signatures in one INSERT and returns the
// ones that were new (group commit: one write for many requests).
//
// On SQLite the signatures go to the replay log instead (replaylog.go).
func (db *DB) UseSignatures(ctx context.Context, sigs []string, expires []time.Time) (map[string]bool, error) {
	if db.engine == SQLite {
		l, err := db.replayLog()
		if err != nil {
			return nil, err
		}
		return l.use(sigs, expires, db.Now())
	}
	// Rows go in key order (expires_at, signature): two batches that share
	// signatures then lock them in the same order and cannot deadlock.
	order := make([]int, len(sigs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(Millis(expires[a]), Millis(expires[b])), strings.Compare(sigs[a], sigs[b]))
	})
	values := make([]string, len(order))
	c := sqlArgs{args: make([]any, 0, 2*len(sigs))}
	for n, i := range order {
		values[n] = "(" + c.arg(sigs[i]) + ", " + c.arg(Millis(expires[i])) + ")"
	}
	insert := `INSERT INTO signed_requests (signature, expires_at) VALUES ` + strings.Join(values, ", ")
	// Replays are rare: a plain INSERT records the whole batch, and every
	// signature in it is new when it succeeds. It is cheaper than ON
	// CONFLICT, which probes the index for each row before inserting it.
	// A signature already recorded fails the statement and nothing of it
	// stays; the batch is then written again with ON CONFLICT, which says
	// which ones were new.
	added := sigs
	if _, err := db.replayWrite.ExecContext(ctx, insert, c.args...); isUniqueViolation(err) {
		rows, err := db.replayWrite.QueryContext(ctx, insert+` ON CONFLICT (expires_at, signature) DO NOTHING RETURNING signature`, c.args...)
		if added, err = appendRows(nil, rows, err, scanValue[string]); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	fresh := make(map[string]bool, len(added))
	for _, s := range added {
		fresh[s] = true
	}
	return fresh, nil
}

// PurgeAuthState deletes expired nonce counts and signatures, sessions past
// their absolute lifetime, and expired refresh families.
func (db *DB) PurgeAuthState(ctx context.Context, now time.Time, sessionMax time.Duration) error {
	db.replayMu.Lock()
	if l := db.replay; l != nil {
		l.mu.Lock()
		l.purgeLocked(now) // forget the signatures whose minute has passed
		l.mu.Unlock()
	}
	db.replayMu.Unlock()
	return db.WithTx(ctx, func(tx *Tx) error {
		err := tx.execEach(ctx, []any{Millis(now)}, `DELETE FROM digest_nonces WHERE expires_at < $1`,
			`DELETE FROM signed_requests WHERE expires_at < $1`, `DELETE FROM refresh_families WHERE expires_at < $1`)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM sessions WHERE created_at < $1`, Millis(now.Add(-sessionMax)))
		return err
	})
}
