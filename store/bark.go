package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"time"

	"github.com/yard-api/yard"
)

const barkColumns = `id, dog_id, effect, status, async, source, slot_at, created_at, started_at, finished_at, barked_at, error, output, dog_changed, attempts`

// scanBark reads barkColumns.
func scanBark(row rowScanner) (*yard.Bark, error) {
	var b yard.Bark
	return scanned(&b, row.Scan(&b.ID, &b.DogID, &b.Effect, &b.Status, &b.Async, &b.Source, ms(&b.Slot), ms(&b.CreatedAt), ms(&b.StartedAt),
		ms(&b.FinishedAt), ms(&b.Timestamp), &b.Error, &b.Output, &b.DogChanged, &b.Attempts))
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
	defer db.trace(&ctx, "store.FindDogCore").End()
	d, err := scanDog(db.QueryRow(ctx, `SELECT `+dogColumns+` FROM dogs WHERE id = $1`, id))
	return d, notFound(err, "Dog")
}

// FindBark returns a bark of a dog, or ENOTFOUND.
func (db *DB) FindBark(ctx context.Context, dogID, id string) (*yard.Bark, error) {
	defer db.trace(&ctx, "store.FindBark").End()
	b, err := scanBark(db.QueryRow(ctx, `SELECT `+barkColumns+` FROM tasks WHERE id = $1 AND dog_id = $2`, id, dogID))
	return b, notFound(err, "Bark")
}

// FindBarks returns a page of a dog's barks, newest first, and their count.
func (db *DB) FindBarks(ctx context.Context, f yard.BarkFilter) ([]*yard.Bark, int, error) {
	defer db.trace(&ctx, "store.FindBarks").End()
	return findPage(ctx, db, barkColumns, `tasks WHERE dog_id = $1`, `created_at DESC, id DESC`, []any{f.DogID},
		pageMax(f.Limit), f.Offset, scanBark)
}

// LastBark returns when the dog last barked (any effect, any source), or
// ENOTFOUND when it never did.
func (db *DB) LastBark(ctx context.Context, dogID string) (time.Time, error) {
	defer db.trace(&ctx, "store.LastBark").End()
	last, err := scanValue[sql.NullInt64](db.QueryRow(ctx, `SELECT MAX(barked_at) FROM tasks WHERE dog_id = $1 AND status = 'succeeded'`, dogID))
	if err != nil {
		return time.Time{}, err
	}
	if !last.Valid || last.Int64 == 0 {
		return time.Time{}, yard.Errorf(yard.ENOTFOUND, "The dog never barked.")
	}
	return FromMillis(last.Int64), nil
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
	_, err := tx.exec(ctx, insertBarkSQL, barkRow(b, runAt)...)
	return err
}

// barkRow is b as insertBarkSQL's arguments ($1-$18), to run at runAt.
func barkRow(b *yard.Bark, runAt time.Time) []any {
	var slotKey any // NULL but for scheduled barks
	if b.Source == yard.BarkSourceSchedule {
		slotKey = b.DogID + "@" + strconv.FormatInt(Millis(b.Slot), 10)
	}
	// The trace parent is NULL when the bark was not created by a traced
	// request.
	return []any{b.ID, b.DogID, b.Effect, b.Status, b.Async, b.Source, slotKey, Millis(b.Slot), Millis(b.CreatedAt), Millis(runAt),
		Millis(b.StartedAt), Millis(b.FinishedAt), Millis(b.Timestamp), b.Error, b.Output, b.DogChanged, b.Attempts, nullString(b.TraceParent)}
}

// touchDog marks the dog's representation as changed at now, adding delta
// to its barkCount.
func touchDog(ctx context.Context, tx *Tx, dogID string, delta int, now time.Time) error {
	_, err := tx.exec(ctx, touchDogSQL, delta, Millis(now), dogID)
	tx.markDog(dogID)
	return err
}

// RecordSyncBark stores a bark whose effect already took place in the
// request (or, for record, takes place now): the finished task, and for
// email-count and record the barkCount + 1, in one transaction. b's id,
// times and status are set.
func (db *DB) RecordSyncBark(ctx context.Context, b *yard.Bark) error {
	// span, not trace: WithBatchTx's closure keeps ctx (trace.go).
	ctx, span := db.span(ctx, "store.RecordSyncBark")
	defer span.End()
	db.prepareWrites(ctx, insertBarkSQL, touchDogSQL)
	key := ""
	if countsBark(b.Effect) {
		key = b.DogID // the dog's row is the hot spot
	}
	return db.WithBatchTx(ctx, key, func(tx *Tx) error {
		b.DogChanged = countsBark(b.Effect)
		now, err := insertRequestBark(ctx, tx, b, yard.BarkSucceeded, b.Error, yard.EventBarkSucceeded)
		if err != nil || !b.DogChanged {
			return err
		}
		return touchDog(ctx, tx, b.DogID, 1, now)
	})
}

// RecordFailedBark stores a synchronous bark whose effect failed.
func (db *DB) RecordFailedBark(ctx context.Context, b *yard.Bark, msg string) error {
	defer db.trace(&ctx, "store.RecordFailedBark").End()
	return db.WithTx(ctx, func(tx *Tx) error {
		_, err := insertRequestBark(ctx, tx, b, yard.BarkFailed, msg, yard.EventBarkFailed)
		return err
	})
}

// insertRequestBark stores b, the bark of a request, whose one attempt
// ended now (when tx began) with status and msg, with its bark.created
// event and then event. A succeeded bark without a time barked now.
func insertRequestBark(ctx context.Context, tx *Tx, b *yard.Bark, status, msg, event string) (now time.Time, err error) {
	now = tx.Now().UTC().Truncate(time.Millisecond)
	ensureID(&b.ID)
	b.Status, b.Source, b.Async, b.Attempts, b.Error = status, yard.BarkSourceRequest, false, 1, msg
	b.CreatedAt, b.StartedAt, b.FinishedAt = now, now, now
	if b.Timestamp.IsZero() && status == yard.BarkSucceeded {
		b.Timestamp = now
	}
	if err := insertBark(ctx, tx, b, now); err != nil {
		return now, err
	}
	return now, barkEvents(ctx, tx, b, yard.EventBarkCreated, event)
}

// EnqueueBark stores a pending asynchronous bark for the workers, with its
// bark.created event.
func (db *DB) EnqueueBark(ctx context.Context, b *yard.Bark) error {
	// span, not trace: WithBatchTx's closure keeps ctx (trace.go).
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
		return barkEvents(ctx, tx, b, yard.EventBarkCreated)
	})
}

// newPendingBark sets what a new pending asynchronous bark has: an id
// when it has none, its status and its creation time (now, to the
// millisecond, as stored).
func newPendingBark(b *yard.Bark, now time.Time) {
	ensureID(&b.ID)
	b.Status, b.Async, b.CreatedAt = yard.BarkPending, true, now.UTC().Truncate(time.Millisecond)
	b.Source = cmp.Or(b.Source, yard.BarkSourceRequest)
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
	defer db.trace(&ctx, "store.CancelBark").End()
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
			return barkEvents(ctx, tx, canceled, yard.EventBarkCanceled)
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
