package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

const barkColumns = `id, dog_id, effect, status, async, source, slot_at, created_at, started_at, finished_at, barked_at, error, output, dog_changed, attempts`

// scanBark reads barkColumns, then the extra columns into extra.
func scanBark(row interface{ Scan(...any) error }, extra ...any) (*yard.Bark, error) {
	var b yard.Bark
	var slot, created, started, finished, barked int64
	if err := row.Scan(append([]any{&b.ID, &b.DogID, &b.Effect, &b.Status, &b.Async, &b.Source, &slot, &created, &started, &finished,
		&barked, &b.Error, &b.Output, &b.DogChanged, &b.Attempts}, extra...)...); err != nil {
		return nil, err
	}
	b.Slot, b.CreatedAt, b.StartedAt, b.FinishedAt, b.Timestamp = FromMillis(slot), FromMillis(created), FromMillis(started), FromMillis(finished), FromMillis(barked)
	return &b, nil
}

// forUpdate returns the row-locking suffix of a SELECT: PostgreSQL locks
// rows (skipping those other transactions hold when skip is set); SQLite
// needs nothing, because its one writer connection serialises writes.
func (db *DB) forUpdate(skip bool) string {
	if db.engine != Postgres {
		return ""
	}
	if skip {
		return ` FOR UPDATE SKIP LOCKED`
	}
	return ` FOR UPDATE`
}

// FindDogCore returns the dog without its schedule (for barking, where
// the schedule is not needed), or ENOTFOUND.
func (db *DB) FindDogCore(ctx context.Context, id string) (*yard.Dog, error) {
	ctx, span := db.span(ctx, "store.FindDogCore")
	defer span.End()
	d, err := scanDog(db.QueryRow(ctx, `SELECT `+dogColumns+` FROM dogs WHERE id = $1`, id))
	if err != nil {
		return nil, notFound(err, "Dog")
	}
	return d, nil
}

// FindBark returns a bark of a dog, or ENOTFOUND.
func (db *DB) FindBark(ctx context.Context, dogID, id string) (*yard.Bark, error) {
	ctx, span := db.span(ctx, "store.FindBark")
	defer span.End()
	b, err := scanBark(db.QueryRow(ctx, `SELECT `+barkColumns+` FROM tasks WHERE id = $1 AND dog_id = $2`, id, dogID))
	return b, notFound(err, "Bark")
}

// FindBarks returns a page of a dog's barks, newest first, and their count.
func (db *DB) FindBarks(ctx context.Context, f yard.BarkFilter) ([]*yard.Bark, int, error) {
	ctx, span := db.span(ctx, "store.FindBarks")
	defer span.End()
	return findPage(ctx, db, barkColumns, `tasks WHERE dog_id = $1`, `created_at DESC, id DESC`, []any{f.DogID},
		pageMax(f.Limit), f.Offset, func(row rowScanner) (*yard.Bark, error) { return scanBark(row) })
}

// LastBark returns when the dog last barked (any effect, any source), or
// ENOTFOUND when it never did.
func (db *DB) LastBark(ctx context.Context, dogID string) (time.Time, error) {
	ctx, span := db.span(ctx, "store.LastBark")
	defer span.End()
	var ms sql.NullInt64
	err := db.QueryRow(ctx, `SELECT MAX(barked_at) FROM tasks WHERE dog_id = $1 AND status = 'succeeded'`, dogID).Scan(&ms)
	if err != nil {
		return time.Time{}, err
	}
	if !ms.Valid || ms.Int64 == 0 {
		return time.Time{}, yard.Errorf(yard.ENOTFOUND, "The dog never barked.")
	}
	return FromMillis(ms.Int64), nil
}

// countsBark reports whether an effect adds 1 to barkCount (spec (b), (c)).
func countsBark(effect string) bool {
	return effect == yard.EffectEmailCount || effect == yard.EffectRecord
}

const (
	insertBarkSQL = `INSERT INTO tasks (id, dog_id, effect, status, async, source, slot_key, slot_at, created_at, run_at,
		started_at, finished_at, barked_at, error, output, dog_changed, attempts, traceparent)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)`
	touchDogSQL = `UPDATE dogs SET bark_count = bark_count + $1, updated_at = $2 WHERE id = $3`
)

func insertBark(ctx context.Context, tx *Tx, b *yard.Bark, runAt time.Time) error {
	_, err := tx.db.txExec(ctx, tx, insertBarkSQL, barkRow(b, runAt)...)
	return err
}

// barkRow is b as insertBarkSQL's arguments ($1-$18), to run at runAt.
func barkRow(b *yard.Bark, runAt time.Time) []any {
	var slotKey any // NULL but for scheduled barks
	if b.Source == yard.BarkSourceSchedule {
		slotKey = b.DogID + "@" + strconv.FormatInt(Millis(b.Slot), 10)
	}
	var traceParent any // NULL when the bark was not created by a traced request
	if b.TraceParent != "" {
		traceParent = b.TraceParent
	}
	return []any{b.ID, b.DogID, b.Effect, b.Status, b.Async, b.Source, slotKey, Millis(b.Slot), Millis(b.CreatedAt), Millis(runAt),
		Millis(b.StartedAt), Millis(b.FinishedAt), Millis(b.Timestamp), b.Error, b.Output, b.DogChanged, b.Attempts, traceParent}
}

// touchDog marks the dog's representation as changed at now, adding delta
// to its barkCount.
func touchDog(ctx context.Context, tx *Tx, dogID string, delta int, now time.Time) error {
	_, err := tx.db.txExec(ctx, tx, touchDogSQL, delta, Millis(now), dogID)
	tx.markDog(dogID)
	return err
}

// RecordSyncBark stores a bark whose effect already took place in the
// request (or, for record, takes place now): the finished task, and for
// email-count and record the barkCount + 1, in one transaction. b's id,
// times and status are set.
func (db *DB) RecordSyncBark(ctx context.Context, b *yard.Bark) error {
	ctx, span := db.span(ctx, "store.RecordSyncBark")
	defer span.End()
	db.prepareWrites(ctx, insertBarkSQL, touchDogSQL)
	key := ""
	if countsBark(b.Effect) {
		key = b.DogID // the dog's row is the hot spot
	}
	return db.WithBatchTx(ctx, key, func(tx *Tx) error {
		now := tx.Now().UTC().Truncate(time.Millisecond)
		if b.ID == "" {
			b.ID = yard.NewID()
		}
		b.Status, b.Source, b.Async, b.Attempts = yard.BarkSucceeded, yard.BarkSourceRequest, false, 1
		b.CreatedAt, b.StartedAt, b.FinishedAt = now, now, now
		if b.Timestamp.IsZero() {
			b.Timestamp = now
		}
		b.DogChanged = countsBark(b.Effect)
		if err := insertBark(ctx, tx, b, now); err != nil {
			return err
		}
		if err := barkEvents(ctx, tx, b, yard.EventBarkCreated, yard.EventBarkSucceeded); err != nil {
			return err
		}
		if b.DogChanged {
			return touchDog(ctx, tx, b.DogID, 1, now)
		}
		return nil
	})
}

// RecordFailedBark stores a synchronous bark whose effect failed.
func (db *DB) RecordFailedBark(ctx context.Context, b *yard.Bark, msg string) error {
	ctx, span := db.span(ctx, "store.RecordFailedBark")
	defer span.End()
	return db.WithTx(ctx, func(tx *Tx) error {
		now := tx.Now().UTC().Truncate(time.Millisecond)
		if b.ID == "" {
			b.ID = yard.NewID()
		}
		b.Status, b.Source, b.Async, b.Attempts, b.Error = yard.BarkFailed, yard.BarkSourceRequest, false, 1, msg
		b.CreatedAt, b.StartedAt, b.FinishedAt = now, now, now
		if err := insertBark(ctx, tx, b, now); err != nil {
			return err
		}
		return barkEvents(ctx, tx, b, yard.EventBarkCreated, yard.EventBarkFailed)
	})
}

// EnqueueBark stores a pending asynchronous bark for the workers, with its
// bark.created event.
func (db *DB) EnqueueBark(ctx context.Context, b *yard.Bark) error {
	ctx, span := db.span(ctx, "store.EnqueueBark")
	defer span.End()
	if db.engine == Postgres {
		return db.enqueueBarkPG(ctx, b)
	}
	db.prepareWrites(ctx, insertBarkSQL)
	return db.WithBatchTx(ctx, "", func(tx *Tx) error {
		newPendingBark(b, tx.Now())
		if err := insertBark(ctx, tx, b, b.CreatedAt); err != nil {
			return err
		}
		return barkEvent(ctx, tx, yard.EventBarkCreated, b)
	})
}

// newPendingBark sets what a new pending asynchronous bark has: an id
// when it has none, its status and its creation time (now, to the
// millisecond, as stored).
func newPendingBark(b *yard.Bark, now time.Time) {
	if b.ID == "" {
		b.ID = yard.NewID()
	}
	b.Status, b.Async, b.CreatedAt = yard.BarkPending, true, now.UTC().Truncate(time.Millisecond)
	if b.Source == "" {
		b.Source = yard.BarkSourceRequest
	}
}

// enqueueBarkPG is EnqueueBark on PostgreSQL in one statement, which is
// its own transaction: the task and its bark.created event (stamped, as
// every event, with the transaction's id) commit together or not at all,
// in one round trip instead of four (BEGIN, two INSERTs, COMMIT). A dog
// deleted meanwhile fails the task's foreign key, and nothing is written.
func (db *DB) enqueueBarkPG(ctx context.Context, b *yard.Bark) error {
	newPendingBark(b, db.Now())
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	args := append(barkRow(b, b.CreatedAt), yard.EventBarkCreated, yard.BarkPath(b.DogID, b.ID), string(body))
	if _, err := db.write.ExecContext(ctx, enqueueBarkPG, args...); err != nil {
		return err
	}
	db.eventsCommitted()
	return nil
}

// enqueueBarkPG inserts a task ($1-$18, as insertBarkSQL) and its event
// ($19 type, $20 subject, $21 data; the owner is the dog's, the time the
// task's creation): see DB.enqueueBarkPG.
var enqueueBarkPG = `WITH task AS (` + insertBarkSQL + `) ` + eventOfDogPG("1", "$19", "$20", "$2", "$9", "$21")

// CancelBark answers a DELETE of a bark (docs/barks.md): a pending or running
// bark is canceled; a finished record is deleted (barkCount unchanged);
// anything else is ECONFLICT. It returns the bark as it was before.
func (db *DB) CancelBark(ctx context.Context, dogID, id string) (*yard.Bark, error) {
	ctx, span := db.span(ctx, "store.CancelBark")
	defer span.End()
	var before *yard.Bark
	err := db.WithTx(ctx, func(tx *Tx) error {
		b, err := scanBark(tx.QueryRowContext(ctx, `SELECT `+barkColumns+` FROM tasks WHERE id = $1 AND dog_id = $2`+db.forUpdate(false), id, dogID))
		if err != nil {
			return notFound(err, "Bark")
		}
		before = b
		switch {
		case b.Status == yard.BarkPending || b.Status == yard.BarkRunning:
			canceled, err := scanBark(tx.QueryRowContext(ctx, `UPDATE tasks SET status = 'canceled', finished_at = $1, lease_token = '', lease_until = 0
				WHERE id = $2 RETURNING `+barkColumns, Millis(tx.Now()), id))
			if err != nil {
				return err
			}
			return barkEvent(ctx, tx, yard.EventBarkCanceled, canceled)
		case b.Status == yard.BarkSucceeded && b.Effect == yard.EffectRecord:
			if _, err = tx.ExecContext(ctx, `DELETE FROM tasks WHERE id = $1`, id); err != nil {
				return err
			}
			body, _ := json.Marshal(yard.EventDeleted{ID: id})
			return appendEventOwnedBy(ctx, tx, yard.EventBarkDeleted, yard.BarkPath(dogID, id), "", dogID, body)
		case b.Status == yard.BarkSucceeded:
			return yard.Errorf(yard.ECONFLICT, "The %s bark has already taken place and cannot be canceled.", b.Effect)
		default:
			return yard.Errorf(yard.ECONFLICT, "The bark is already %s.", b.Status)
		}
	})
	return before, err
}

// ClaimTask takes the next due task for a worker: a pending task whose time
// has come, or a running one whose lease expired (its worker died). On
// PostgreSQL the row is locked with FOR UPDATE SKIP LOCKED, so processes
// sharing the store never take the same task; on SQLite the single writer
// does the same. It returns nil when no task is due. token identifies this
// lease: every later change of the task must present it.
func (db *DB) ClaimTask(ctx context.Context, owner string, lease time.Duration) (b *yard.Bark, token string, err error) {
	return db.ClaimTaskOf(ctx, owner, lease, yard.ClaimFilter{})
}

// ClaimTaskOf is ClaimTask for the tasks f selects.
func (db *DB) ClaimTaskOf(ctx context.Context, owner string, lease time.Duration, f yard.ClaimFilter) (b *yard.Bark, token string, err error) {
	ctx, span := db.span(ctx, "store.ClaimTaskOf")
	defer span.End()
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
	perUser := int64(f.FetchPerUser)
	if perUser <= 0 {
		perUser = 1 << 40
	}
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
		row := db.txQueryRow(ctx, tx, claim, args...)
		var traceParent string
		b, err = scanBark(row, &traceParent)
		if b != nil {
			b.TraceParent = traceParent
		}
		if errors.Is(err, sql.ErrNoRows) {
			b, err = nil, nil
		}
		if b != nil && err == nil {
			err = barkEvent(ctx, tx, yard.EventBarkRunning, b)
		}
		return err
	})
	if b == nil {
		token = ""
	}
	return b, token, err
}

// ExtendLease renews a running task's lease. It returns ErrLeaseLost when
// the task is no longer this worker's (canceled, or taken by another).
func (db *DB) ExtendLease(ctx context.Context, id, token string, lease time.Duration) error {
	ctx, span := db.span(ctx, "store.ExtendLease")
	defer span.End()
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET lease_until = $1 WHERE id = $2 AND lease_token = $3 AND status = 'running'`,
			Millis(tx.Now())+lease.Milliseconds(), id, token)
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
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return yard.ErrLeaseLost
	}
	return nil
}

// CompleteTask marks a running task succeeded and applies its store
// effects in the same transaction: barkCount + 1 for email-count and
// record, the new codeRevision for fetch-code. A worker that lost the
// lease gets ErrLeaseLost and nothing is applied, so store effects happen
// exactly once.
func (db *DB) CompleteTask(ctx context.Context, b *yard.Bark, token string, r yard.TaskResult) error {
	ctx, span := db.span(ctx, "store.CompleteTask")
	defer span.End()
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
		done, err := scanBark(db.txQueryRow(ctx, tx, completeTaskSQL, Millis(now), r.Output, changed, b.ID, token))
		if err := leaseRow(err); err != nil {
			return err
		}
		if err := barkEvent(ctx, tx, yard.EventBarkSucceeded, done); err != nil {
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
var completeTaskSQL = `UPDATE tasks SET status = 'succeeded', finished_at = $1, barked_at = $1, output = $2, error = '',
	dog_changed = $3, lease_token = '', lease_until = 0 WHERE id = $4 AND lease_token = $5 AND status = 'running'
	RETURNING ` + barkColumns

// RetryTask puts a running task back to pending, to run again after wait
// (by the store's clock).
func (db *DB) RetryTask(ctx context.Context, id, token string, wait time.Duration, msg, output string) error {
	ctx, span := db.span(ctx, "store.RetryTask")
	defer span.End()
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'pending', run_at = $1, error = $2, output = $3, lease_token = '', lease_until = 0
			WHERE id = $4 AND lease_token = $5 AND status = 'running'`, Millis(tx.Now().Add(wait)), msg, output, id, token)
		return leaseResult(res, err)
	})
}

// FailTask marks a running task failed; nothing of its effect is stored.
func (db *DB) FailTask(ctx context.Context, id, token, msg, output string) error {
	ctx, span := db.span(ctx, "store.FailTask")
	defer span.End()
	return db.WithTx(ctx, func(tx *Tx) error {
		failed, err := scanBark(tx.QueryRowContext(ctx, `UPDATE tasks SET status = 'failed', finished_at = $1, error = $2, output = $3, lease_token = '', lease_until = 0
			WHERE id = $4 AND lease_token = $5 AND status = 'running' RETURNING `+barkColumns, Millis(tx.Now()), msg, output, id, token))
		if err := leaseRow(err); err != nil {
			return err
		}
		return barkEvent(ctx, tx, yard.EventBarkFailed, failed)
	})
}

// ReleaseTask hands a running task back (graceful shutdown): it is pending
// again at once and the attempt does not count.
func (db *DB) ReleaseTask(ctx context.Context, id, token string) error {
	ctx, span := db.span(ctx, "store.ReleaseTask")
	defer span.End()
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'pending', run_at = $1, attempts = attempts - 1, lease_token = '', lease_until = 0
			WHERE id = $2 AND lease_token = $3 AND status = 'running'`, Millis(tx.Now()), id, token)
		return leaseResult(res, err)
	})
}

// PendingTasks counts the tasks waiting to run.
func (db *DB) PendingTasks(ctx context.Context) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT COUNT(*) FROM tasks WHERE status = 'pending'`).Scan(&n)
	return n, err
}

// TaskStatus returns the status of a task (the workers poll it to notice
// a cancel made by another process).
func (db *DB) TaskStatus(ctx context.Context, id string) (string, error) {
	var s string
	err := db.QueryRow(ctx, `SELECT status FROM tasks WHERE id = $1`, id).Scan(&s)
	return s, notFound(err, "Bark")
}

// ---- schedules ----

// schedule is a stored bark_schedules row.
type schedule struct {
	next, last        int64
	frequency         int
	changeDate        int64
	changeHash        string
	changeStatus      int
	exists, isRunning bool
}

func loadSchedule(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, dogID string) (schedule, error) {
	var s schedule
	err := q.QueryRowContext(ctx, `SELECT next_at, last_at, frequency, change_date, change_hash, change_status FROM bark_schedules WHERE dog_id = $1`, dogID).
		Scan(&s.next, &s.last, &s.frequency, &s.changeDate, &s.changeHash, &s.changeStatus)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	s.exists, s.isRunning = err == nil, err == nil && s.frequency > 0
	return s, err
}

// preparedReader reads outside a transaction through the store's cache of
// prepared statements.
type preparedReader struct{ db *DB }

func (p preparedReader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return p.db.QueryRow(ctx, q, args...)
}

func (p preparedReader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return p.db.Query(ctx, q, args...)
}

// txReader reads inside tx, through the statements prepared on the SQLite
// writer (prepareWrites) where there are.
type txReader struct{ tx *Tx }

func (r txReader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return r.tx.db.txQueryRow(ctx, r.tx, q, args...)
}

func (r txReader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.tx.db.txQuery(ctx, r.tx, q, args...)
}

// reader is what reads a dog with its schedule: preparedReader outside a
// transaction, txReader inside one.
type reader interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// The statements of dogWithSchedule: the dog with its schedule, and the
// slots of its previous scheduled barks.
var (
	dogWithScheduleSQL = `SELECT ` + dogColumnsD + `, s.next_at, s.frequency, s.last_at
		FROM dogs d LEFT JOIN bark_schedules s ON s.dog_id = d.id WHERE d.id = $1`
	previousBarksSQL = `SELECT slot_at FROM tasks WHERE dog_id = $1 AND source = 'schedule' AND status <> 'canceled'
		ORDER BY slot_at DESC LIMIT CAST($2 AS BIGINT)`
)

// previousBarks returns the times of the last scheduled barks, newest first.
func previousBarks(ctx context.Context, q reader, dogID string) ([]time.Time, error) {
	rows, err := q.QueryContext(ctx, previousBarksSQL, dogID, yard.MaxPreviousBarks)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []time.Time{}
	for rows.Next() {
		var ms int64
		if err := rows.Scan(&ms); err != nil {
			return nil, err
		}
		out = append(out, FromMillis(ms))
	}
	return out, rows.Err()
}

// FindSchedule returns the dog's running bark schedule, or nil when none is
// set.
func (db *DB) FindSchedule(ctx context.Context, dogID string) (*yard.BarkSchedule, error) {
	ctx, span := db.span(ctx, "store.FindSchedule")
	defer span.End()
	s, err := loadSchedule(ctx, preparedReader{db}, dogID)
	if err != nil || !s.isRunning {
		return nil, err
	}
	prev, err := previousBarks(ctx, preparedReader{db}, dogID)
	if err != nil {
		return nil, err
	}
	return &yard.BarkSchedule{Next: FromMillis(s.next), Frequency: s.frequency, Last: FromMillis(s.last), Previous: prev}, nil
}

// dogColumnsD are the dog columns qualified by the alias d.
var dogColumnsD = "d." + strings.ReplaceAll(dogColumns, ", ", ", d.")

// withExtra scans a row's first columns with scan and the rest into extra.
type withExtra struct {
	row   interface{ Scan(...any) error }
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra...)...) }

// findDogWithSchedule reads a dog and its schedule in one query (a read of
// a dog is the hottest request); the previous barks need a second one only
// when a schedule runs.
func (db *DB) findDogWithSchedule(ctx context.Context, id string) (*yard.Dog, error) {
	return dogWithSchedule(ctx, preparedReader{db}, id)
}

// dogWithSchedule reads a dog with its schedule through q.
func dogWithSchedule(ctx context.Context, q reader, id string) (*yard.Dog, error) {
	var next, last, freq sql.NullInt64
	d, err := scanDog(withExtra{q.QueryRowContext(ctx, dogWithScheduleSQL, id), []any{&next, &freq, &last}})
	if err != nil {
		return nil, notFound(err, "Dog")
	}
	if freq.Int64 > 0 {
		prev, err := previousBarks(ctx, q, id)
		if err != nil {
			return nil, err
		}
		d.Schedule = &yard.BarkSchedule{Next: FromMillis(next.Int64), Frequency: int(freq.Int64), Last: FromMillis(last.Int64), Previous: prev}
	}
	return d, nil
}

// attachSchedules fills in the Schedule of each dog.
func (db *DB) attachSchedules(ctx context.Context, dogs ...*yard.Dog) error {
	for _, d := range dogs {
		sc, err := db.FindSchedule(ctx, d.ID)
		if err != nil {
			return err
		}
		d.Schedule = sc
	}
	return nil
}

// lockDog reads a dog inside a write transaction, locking its row on
// PostgreSQL so that schedule changes of one dog are serialised.
func (db *DB) lockDog(ctx context.Context, tx *Tx, id string) (*yard.Dog, error) {
	d, err := scanDog(tx.QueryRowContext(ctx, `SELECT `+dogColumns+` FROM dogs WHERE id = $1`+db.forUpdate(false), id))
	return d, notFound(err, "Dog")
}

func writeSchedule(ctx context.Context, tx *Tx, dogID string, c yard.ScheduleChange, now time.Time) error {
	next := Millis(c.Next)
	if c.Frequency == 0 {
		next = 0
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO bark_schedules (dog_id, next_at, frequency, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (dog_id) DO UPDATE SET next_at = excluded.next_at, frequency = excluded.frequency, updated_at = excluded.updated_at`,
		dogID, next, c.Frequency, Millis(now))
	if err != nil {
		return err
	}
	return touchDog(ctx, tx, dogID, 0, now)
}

// The change_status column of bark_schedules keeps, for the last applied
// PATCH, whether the stored representation differed from what was sent,
// as the status first answered (204 or 205, its encoding since migration
// 00010); 0 when no PATCH was applied.
const (
	changeSame    = 204
	changeDiffers = 205
)

// ApplySchedulePatch applies a schedule PATCH once (RFC 9110 §13.1.4): a
// repeat of the last applied request applies nothing and reports what the
// first one did; a request whose date is older than the dog's last change
// is EPRECONDITION; a refused schedule is ESCHEDULEREFUSED. It reports
// whether the stored representation differs from what was sent
// (p.Differs, or that of the repeated request).
func (db *DB) ApplySchedulePatch(ctx context.Context, dogID string, p yard.SchedulePatch) (differs bool, err error) {
	ctx, span := db.span(ctx, "store.ApplySchedulePatch")
	defer span.End()
	err = db.WithTx(ctx, func(tx *Tx) error {
		d, err := db.lockDog(ctx, tx, dogID)
		if err != nil {
			return err
		}
		s, err := loadSchedule(ctx, tx, dogID)
		if err != nil {
			return err
		}
		if s.exists && s.changeDate == p.Date.Unix() && s.changeHash == p.Hash && s.changeStatus != 0 {
			differs = s.changeStatus == changeDiffers
			return nil
		}
		if d.UpdatedAt.Truncate(time.Second).After(p.Date) {
			return yard.Errorf(yard.EPRECONDITION, "The dog changed after %s; read it again before changing its schedule.", p.Date.UTC().Format(time.RFC1123))
		}
		if err := yard.ValidateSchedule(p.Change, p.Received); err != nil {
			return err
		}
		if p.Fields != (yard.DogUpdate{}) {
			if _, err := db.updateDogTx(ctx, tx, dogID, p.Fields); err != nil {
				return err
			}
		}
		now := tx.Now()
		if err := writeSchedule(ctx, tx, dogID, p.Change, now); err != nil {
			return err
		}
		change := changeSame
		if p.Differs {
			change = changeDiffers
		}
		_, err = tx.ExecContext(ctx, `UPDATE bark_schedules SET change_date = $1, change_hash = $2, change_status = $3 WHERE dog_id = $4`,
			p.Date.Unix(), p.Hash, change, dogID)
		differs = p.Differs
		return err
	})
	return differs, err
}

// SetScheduleByToken applies a POST of the bark-schedule resource. A token
// already applied to this dog changes nothing (applied is false).
func (db *DB) SetScheduleByToken(ctx context.Context, dogID, token string, c yard.ScheduleChange, received time.Time) (applied bool, err error) {
	ctx, span := db.span(ctx, "store.SetScheduleByToken")
	defer span.End()
	err = db.WithTx(ctx, func(tx *Tx) error {
		if _, err := db.lockDog(ctx, tx, dogID); err != nil {
			return err
		}
		now := tx.Now()
		res, err := tx.ExecContext(ctx, `INSERT INTO bark_schedule_tokens (dog_id, token, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (dog_id, token) DO NOTHING`, dogID, token, Millis(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if err := yard.ValidateSchedule(c, received); err != nil {
			return err
		}
		applied = true
		return writeSchedule(ctx, tx, dogID, c, now)
	})
	return applied, err
}

// StopSchedule stops the dog's schedule; ENOTFOUND when none is running.
func (db *DB) StopSchedule(ctx context.Context, dogID string) error {
	ctx, span := db.span(ctx, "store.StopSchedule")
	defer span.End()
	return db.WithTx(ctx, func(tx *Tx) error {
		if _, err := db.lockDog(ctx, tx, dogID); err != nil {
			return err
		}
		s, err := loadSchedule(ctx, tx, dogID)
		if err != nil {
			return err
		}
		if !s.isRunning {
			return yard.Errorf(yard.ENOTFOUND, "The dog has no bark schedule.")
		}
		return writeSchedule(ctx, tx, dogID, yard.ScheduleChange{}, tx.Now())
	})
}

// FireDueSchedules fires every schedule slot due at the store's clock, at
// most limit of them: for each it stores one pending bark task for the
// latest due slot (a slot missed during downtime fires once, not once per
// missed interval) and moves the schedule to the following slot, in one
// transaction. The slot key is unique and the move is guarded by the old
// slot, so each slot fires once across processes. Rows are locked in the
// order the other writers use (dog, then schedule); on PostgreSQL a dog
// another transaction holds is skipped until the next tick.
func (db *DB) FireDueSchedules(ctx context.Context, limit int) ([]*yard.Bark, error) {
	var fired []*yard.Bark
	err := db.WithTx(ctx, func(tx *Tx) error {
		fired = nil
		now := tx.Now().UTC().Truncate(time.Millisecond)
		rows, err := tx.QueryContext(ctx, `SELECT dog_id FROM bark_schedules WHERE frequency > 0 AND next_at <= $1
			ORDER BY next_at LIMIT CAST($2 AS BIGINT)`, Millis(now), limit)
		if err != nil {
			return err
		}
		var due []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			due = append(due, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, dogID := range due {
			var effect string
			err := tx.QueryRowContext(ctx, `SELECT bark_effect FROM dogs WHERE id = $1`+db.forUpdate(true), dogID).Scan(&effect)
			if errors.Is(err, sql.ErrNoRows) {
				continue // locked by another transaction, or deleted
			} else if err != nil {
				return err
			}
			var next, freq int64
			err = tx.QueryRowContext(ctx, `SELECT next_at, frequency FROM bark_schedules WHERE dog_id = $1 AND frequency > 0 AND next_at <= $2`+db.forUpdate(false),
				dogID, Millis(now)).Scan(&next, &freq)
			if errors.Is(err, sql.ErrNoRows) {
				continue // another process fired it meanwhile
			} else if err != nil {
				return err
			}
			period := freq * int64(time.Minute/time.Millisecond)
			slot := next + (Millis(now)-next)/period*period
			res, err := tx.ExecContext(ctx, `UPDATE bark_schedules SET next_at = $1, last_at = $2 WHERE dog_id = $3 AND next_at = $4`,
				slot+period, slot, dogID, next)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			b := &yard.Bark{ID: yard.NewID(), DogID: dogID, Effect: effect, Status: yard.BarkPending, Async: true,
				Source: yard.BarkSourceSchedule, Slot: FromMillis(slot), CreatedAt: now}
			// A schedule set again to a slot that already fired does not
			// fire it twice.
			res, err = tx.ExecContext(ctx, `INSERT INTO tasks (id, dog_id, effect, status, async, source, slot_key, slot_at, created_at, run_at)
				VALUES ($1, $2, $3, 'pending', TRUE, 'schedule', $4, $5, $6, $6) ON CONFLICT (slot_key) DO NOTHING`,
				b.ID, dogID, effect, dogID+"@"+strconv.FormatInt(slot, 10), slot, Millis(now))
			if err != nil {
				return err
			}
			if err := touchDog(ctx, tx, dogID, 0, now); err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				fired = append(fired, b)
				if err := barkEvent(ctx, tx, yard.EventBarkCreated, b); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return fired, err
}
