package store

import (
	"context"
	"slices"
	"time"

	"github.com/yard-api/yard"
)

var _ yard.LoginAttemptService = (*DB)(nil)

// ReserveLoginAttempt implements yard.LoginAttemptService. Keys are locked
// in sorted order (a row of login_keys each), so two reservations sharing
// keys never deadlock, and the count of a key cannot change between its
// read and the insert.
func (db *DB) ReserveLoginAttempt(ctx context.Context, id string, keys []string, at, since time.Time, limit int) (bool, time.Time, error) {
	sorted := slices.Compact(slices.Sorted(slices.Values(keys)))
	ok, retryAt := true, time.Time{}
	err := db.WithTx(ctx, func(tx *Tx) error {
		for _, k := range sorted {
			if _, err := tx.ExecContext(ctx, `INSERT INTO login_keys (key, at) VALUES ($1, $2)
				ON CONFLICT (key) DO UPDATE SET at = excluded.at`, k, Millis(at)); err != nil {
				return err
			}
		}
		for _, k := range sorted {
			if _, err := tx.ExecContext(ctx, `DELETE FROM login_attempts WHERE key = $1 AND at <= $2`, k, Millis(since)); err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, `SELECT at FROM login_attempts WHERE key = $1 ORDER BY at`, k)
			ats, err := appendRows(nil, rows, err, scanValue[int64])
			if err != nil {
				return err
			}
			if len(ats) >= limit {
				// The key allows again when enough of its attempts have
				// left the window: the (n-limit+1)-th oldest one.
				ok = false
				if t := FromMillis(ats[len(ats)-limit]); t.After(retryAt) {
					retryAt = t
				}
			}
		}
		if !ok {
			return nil
		}
		for _, k := range sorted {
			if _, err := tx.ExecContext(ctx, `INSERT INTO login_attempts (key, attempt_id, at) VALUES ($1, $2, $3)`, k, id, Millis(at)); err != nil {
				return err
			}
		}
		return nil
	})
	return ok, retryAt, err
}

// ReleaseLoginAttempt implements yard.LoginAttemptService.
func (db *DB) ReleaseLoginAttempt(ctx context.Context, id string, keys []string) error {
	for _, k := range keys {
		if _, err := db.write.ExecContext(ctx, `DELETE FROM login_attempts WHERE key = $1 AND attempt_id = $2`, k, id); err != nil {
			return err
		}
	}
	return nil
}

// PurgeLoginAttempts implements yard.LoginAttemptService.
func (db *DB) PurgeLoginAttempts(ctx context.Context, before time.Time) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		return tx.execEach(ctx, []any{Millis(before)}, `DELETE FROM login_attempts WHERE at <= $1`, `DELETE FROM login_keys WHERE at <= $1`)
	})
}
