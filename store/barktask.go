package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// Bark tasks as the workers run them (jobs): a claim with a lease, then
// the lease renewed, and the task completed, retried, failed or released,
// each guarded by the lease's token. Barks are stored in bark.go.

// ClaimTaskOf takes the next due task of those f selects for a worker: a
// pending task whose time has come, or a running one whose lease expired
// (its worker died). On PostgreSQL the row is locked with FOR UPDATE SKIP
// LOCKED, so processes sharing the store never take the same task; on
// SQLite the single writer does the same. It returns nil when no task is
// due. token identifies this lease: every later change of the task must
// present it.
func (db *DB) ClaimTaskOf(ctx context.Context, owner string, lease time.Duration, f yard.ClaimFilter) (b *yard.Bark, token string, err error) {
	defer db.trace(&ctx, "store.ClaimTaskOf").End()
	// The conditions are fixed SQL text; the bound is a parameter.
	cond := ""
	switch f.Kind {
	case yard.ClaimFetch:
		cond = ` AND t.effect = 'fetch-code'`
	case yard.ClaimStore:
		cond = ` AND t.effect <> 'fetch-code'`
	}
	limits := f.Kind != yard.ClaimStore
	if limits {
		cond += ` AND (t.effect <> 'fetch-code' OR (
			NOT EXISTS (SELECT 1 FROM tasks r WHERE r.dog_id = t.dog_id AND r.effect = 'fetch-code' AND r.status = 'running'
				AND r.lease_until >= $4 AND r.id <> t.id)
			AND (SELECT COUNT(*) FROM tasks r JOIN dogs rd ON rd.id = r.dog_id
				WHERE r.effect = 'fetch-code' AND r.status = 'running' AND r.lease_until >= $4 AND r.id <> t.id
				AND rd.owner_id = (SELECT owner_id FROM dogs WHERE id = t.dog_id)) < $5))`
	}
	perUser := bound(f.FetchPerUser)
	claim := `UPDATE tasks SET status = 'running', lease_owner = $1, lease_token = $2, lease_until = $3,
			attempts = attempts + 1, started_at = CASE WHEN started_at = 0 THEN $4 ELSE started_at END
			WHERE id = COALESCE(
				(SELECT t.id FROM tasks t WHERE t.status = 'running' AND t.lease_until < $4` + cond + ` ORDER BY t.lease_until LIMIT 1` + db.forUpdate(true) + `),
				(SELECT t.id FROM tasks t WHERE t.status = 'pending' AND t.run_at <= $4` + cond + ` ORDER BY t.run_at LIMIT 1` + db.forUpdate(true) + `))
			RETURNING ` + barkColumns + `, COALESCE(traceparent, '')`
	db.prepareWrites(ctx, claim)
	err = db.WithTx(ctx, func(tx *Tx) error {
		if limits && db.engine == Postgres {
			// The bounds read other claims; claims of fetch-code tasks
			// take turns, so two processes cannot both see room.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7214001)`); err != nil {
				return err
			}
		}
		now := Millis(tx.Now())
		token = yard.NewID()
		args := []any{owner, token, now + lease.Milliseconds(), now}
		if limits {
			args = append(args, perUser)
		}
		row := tx.QueryRow(ctx, claim, args...)
		var traceParent string
		b, err = scanBark(withExtra{row, []any{&traceParent}})
		if errors.Is(err, sql.ErrNoRows) {
			return nil // no task is due; b is nil
		} else if err != nil {
			return err
		}
		b.TraceParent = traceParent
		return barkEvents(ctx, tx, b, yard.EventBarkRunning)
	})
	if b == nil {
		token = ""
	}
	return b, token, err
}

// bound is the bound n, or none (1 << 40) when n is 0 or less.
func bound(n int) int64 {
	return defaults.Positive(int64(n), 1<<40)
}

// ExtendLease renews a running task's lease. It returns ErrLeaseLost when
// the task is no longer this worker's (canceled, or taken by another).
func (db *DB) ExtendLease(ctx context.Context, id, token string, lease time.Duration) error {
	defer db.trace(&ctx, "store.ExtendLease").End()
	return db.updateLeased(ctx, id, token, `lease_until = $1`, lease)
}

// updateLeased applies set (a SET clause: $1 is the store's time plus
// after, $4 on are args) to the running task id if token still holds
// its lease, and ErrLeaseLost otherwise.
func (db *DB) updateLeased(ctx context.Context, id, token, set string, after time.Duration, args ...any) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET `+set+` WHERE id = $2 AND lease_token = $3 AND status = 'running'`,
			append([]any{Millis(tx.Now().Add(after)), id, token}, args...)...)
		return leaseResult(res, err)
	})
}

// leaseRow is leaseResult for an UPDATE ... RETURNING read with scanBark.
func leaseRow(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return yard.ErrLeaseLost
	}
	return err
}

func leaseResult(res sql.Result, err error) error {
	if n, err := affected(res, err); err != nil || n > 0 {
		return err
	}
	return yard.ErrLeaseLost
}

// CompleteTask marks a running task succeeded and applies its store
// effects in the same transaction: barkCount + 1 for email-count and
// record, the new codeRevision for fetch-code. A worker that lost the
// lease gets ErrLeaseLost and nothing is applied, so store effects happen
// exactly once.
func (db *DB) CompleteTask(ctx context.Context, b *yard.Bark, token string, r yard.TaskResult) error {
	defer db.trace(&ctx, "store.CompleteTask").End()
	db.prepareWrites(ctx, completeTaskSQL)
	return db.WithTx(ctx, func(tx *Tx) error {
		now := tx.Now().UTC().Truncate(time.Millisecond)
		changed := countsBark(b.Effect)
		if r.CodeRevision != nil {
			var old string
			if err := tx.QueryRowContext(ctx, `SELECT code_revision FROM dogs WHERE id = $1`, b.DogID).Scan(&old); err != nil {
				return notFound(err, "Dog")
			}
			changed = old != *r.CodeRevision
		}
		done, err := scanBark(tx.QueryRow(ctx, completeTaskSQL, Millis(now), r.Output, changed, b.ID, token))
		if err := leaseRow(err); err != nil {
			return err
		}
		if err := barkEvents(ctx, tx, done, yard.EventBarkSucceeded); err != nil {
			return err
		}
		if r.CodeRevision != nil && changed {
			if _, err := tx.ExecContext(ctx, `UPDATE dogs SET code_revision = $1, updated_at = $2 WHERE id = $3`, *r.CodeRevision, Millis(now), b.DogID); err != nil {
				return err
			}
			tx.markDog(b.DogID)
		}
		if countsBark(b.Effect) {
			return touchDog(ctx, tx, b.DogID, 1, now)
		}
		return nil
	})
}

// completeTaskSQL marks a running task succeeded (CompleteTask).
const completeTaskSQL = `UPDATE tasks SET status = 'succeeded', finished_at = $1, barked_at = $1, output = $2, error = '',
	dog_changed = $3, lease_token = '', lease_until = 0 WHERE id = $4 AND lease_token = $5 AND status = 'running'
	RETURNING ` + barkColumns

// RetryTask puts a running task back to pending, to run again after wait
// (by the store's clock).
func (db *DB) RetryTask(ctx context.Context, id, token string, wait time.Duration, msg, output string) error {
	defer db.trace(&ctx, "store.RetryTask").End()
	return db.updateLeased(ctx, id, token, `status = 'pending', run_at = $1, error = $4, output = $5, lease_token = '', lease_until = 0`,
		wait, msg, output)
}

// FailTask marks a running task failed; nothing of its effect is stored.
func (db *DB) FailTask(ctx context.Context, id, token, msg, output string) error {
	defer db.trace(&ctx, "store.FailTask").End()
	return db.WithTx(ctx, func(tx *Tx) error {
		failed, err := scanBark(tx.QueryRowContext(ctx, `UPDATE tasks SET status = 'failed', finished_at = $1, error = $2, output = $3, lease_token = '', lease_until = 0
			WHERE id = $4 AND lease_token = $5 AND status = 'running' RETURNING `+barkColumns, Millis(tx.Now()), msg, output, id, token))
		if err := leaseRow(err); err != nil {
			return err
		}
		return barkEvents(ctx, tx, failed, yard.EventBarkFailed)
	})
}

// ReleaseTask hands a running task back (graceful shutdown): it is pending
// again at once and the attempt does not count.
func (db *DB) ReleaseTask(ctx context.Context, id, token string) error {
	defer db.trace(&ctx, "store.ReleaseTask").End()
	return db.updateLeased(ctx, id, token, `status = 'pending', run_at = $1, attempts = attempts - 1, lease_token = '', lease_until = 0`, 0)
}

// PendingTasks counts the tasks waiting to run.
func (db *DB) PendingTasks(ctx context.Context) (int, error) {
	return scanValue[int](db.QueryRow(ctx, `SELECT COUNT(*) FROM tasks WHERE status = 'pending'`))
}
