package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/yard-api/yard"
)

// Bark schedules (docs/barks.md): a dog's schedule in bark_schedules, read
// with the dog, changed by PATCH, POST or DELETE, and fired by the workers'
// tick (FireDueSchedules) into pending bark tasks.

// schedule is a stored bark_schedules row, the zero one when the dog has
// none; it runs while its frequency is above 0.
type schedule struct {
	next, last   int64
	frequency    int
	changeDate   int64
	changeHash   string
	changeStatus int
}

func loadSchedule(ctx context.Context, q reader, dogID string) (schedule, error) {
	var s schedule
	err := q.QueryRow(ctx, `SELECT next_at, last_at, frequency, change_date, change_hash, change_status FROM bark_schedules WHERE dog_id = $1`, dogID).
		Scan(&s.next, &s.last, &s.frequency, &s.changeDate, &s.changeHash, &s.changeStatus)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return s, err
}

// reader is what reads a dog with its schedule: the DB outside a
// transaction (through its cache of prepared statements), the Tx inside
// one (through the statements prepared on the SQLite writer).
type reader interface {
	QueryRow(ctx context.Context, q string, args ...any) *sql.Row
	Query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
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
	rows, err := q.Query(ctx, previousBarksSQL, dogID, yard.MaxPreviousBarks)
	return appendRows([]time.Time{}, rows, err, func(row rowScanner) (time.Time, error) {
		slot, err := scanValue[int64](row)
		return FromMillis(slot), err
	})
}

// FindSchedule returns the dog's running bark schedule, or nil when none is
// set.
func (db *DB) FindSchedule(ctx context.Context, dogID string) (*yard.BarkSchedule, error) {
	defer db.trace(&ctx, "store.FindSchedule").End()
	s, err := loadSchedule(ctx, db, dogID)
	if err != nil || s.frequency <= 0 {
		return nil, err
	}
	prev, err := previousBarks(ctx, db, dogID)
	if err != nil {
		return nil, err
	}
	return &yard.BarkSchedule{Next: FromMillis(s.next), Frequency: s.frequency, Last: FromMillis(s.last), Previous: prev}, nil
}

// dogColumnsD are the dog columns qualified by the alias d.
var dogColumnsD = prefixed("d.", dogColumns)

// withExtra scans a row's first columns with scan and the rest into extra.
type withExtra struct {
	row   rowScanner
	extra []any
}

func (w withExtra) Scan(dest ...any) error { return w.row.Scan(append(dest, w.extra...)...) }

// dogWithSchedule reads a dog with its schedule through q, in one query (a
// read of a dog is the hottest request); the previous barks need a second
// one only when a schedule runs.
func dogWithSchedule(ctx context.Context, q reader, id string) (*yard.Dog, error) {
	var next, last, freq sql.NullInt64
	d, err := scanDog(withExtra{q.QueryRow(ctx, dogWithScheduleSQL, id), []any{&next, &freq, &last}})
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
	defer db.trace(&ctx, "store.ApplySchedulePatch").End()
	err = db.WithTx(ctx, func(tx *Tx) error {
		d, err := db.lockDog(ctx, tx, dogID)
		if err != nil {
			return err
		}
		s, err := loadSchedule(ctx, tx, dogID)
		if err != nil {
			return err
		}
		if s.changeStatus != 0 && s.changeDate == p.Date.Unix() && s.changeHash == p.Hash {
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
	defer db.trace(&ctx, "store.SetScheduleByToken").End()
	err = db.WithTx(ctx, func(tx *Tx) error {
		if _, err := db.lockDog(ctx, tx, dogID); err != nil {
			return err
		}
		now := tx.Now()
		n, err := affected(tx.ExecContext(ctx, `INSERT INTO bark_schedule_tokens (dog_id, token, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (dog_id, token) DO NOTHING`, dogID, token, Millis(now)))
		if err != nil || n == 0 {
			return err
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
	defer db.trace(&ctx, "store.StopSchedule").End()
	return db.WithTx(ctx, func(tx *Tx) error {
		if _, err := db.lockDog(ctx, tx, dogID); err != nil {
			return err
		}
		s, err := loadSchedule(ctx, tx, dogID)
		if err != nil {
			return err
		}
		if s.frequency <= 0 {
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
// another transaction holds is skipped until the next tick. A dogID other
// than "" fires that dog's schedule only.
func (db *DB) FireDueSchedules(ctx context.Context, dogID string, limit int) ([]*yard.Bark, error) {
	var fired []*yard.Bark
	err := db.WithTx(ctx, func(tx *Tx) error {
		now := tx.Now().UTC().Truncate(time.Millisecond)
		rows, err := tx.QueryContext(ctx, `SELECT dog_id FROM bark_schedules WHERE frequency > 0 AND next_at <= $1
			AND ($3 = '' OR dog_id = $3) ORDER BY next_at LIMIT CAST($2 AS BIGINT)`, Millis(now), limit, dogID)
		due, err := appendRows(nil, rows, err, scanValue[string])
		if err != nil {
			return err
		}
		for _, dogID := range due {
			effect, err := scanValue[string](tx.QueryRowContext(ctx, `SELECT bark_effect FROM dogs WHERE id = $1`+db.forUpdate(true), dogID))
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
			n, err := affected(tx.ExecContext(ctx, `UPDATE bark_schedules SET next_at = $1, last_at = $2 WHERE dog_id = $3 AND next_at = $4`,
				slot+period, slot, dogID, next))
			if err != nil {
				return err
			} else if n == 0 {
				continue
			}
			b := &yard.Bark{ID: yard.NewID(), DogID: dogID, Effect: effect, Status: yard.BarkPending, Async: true,
				Source: yard.BarkSourceSchedule, Slot: FromMillis(slot), CreatedAt: now}
			// A schedule set again to a slot that already fired does not
			// fire it twice.
			n, err = affected(tx.ExecContext(ctx, insertBarkSQL+` ON CONFLICT (slot_key) DO NOTHING`, barkRow(b, now)...))
			if err != nil {
				return err
			}
			if err := touchDog(ctx, tx, dogID, 0, now); err != nil {
				return err
			}
			if n == 1 {
				fired = append(fired, b)
				if err := barkEvents(ctx, tx, b, yard.EventBarkCreated); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return fired, err
}
