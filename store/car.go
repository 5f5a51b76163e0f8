package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/yard-api/yard"
)

// Cars: their columns, a car by id, and the writes, each stamped with its
// transaction's place in the commit order (carchanges.go) and, on
// PostgreSQL, announced to the read leases (carannounce.go). The lists are
// carlist.go, the garages garage.go.

const carColumns = `id, color, type, doors, make, model, year, garage_id, created_at, updated_at`

// The columns every INSERT of a car row sets (CreateCar, ReplaceCar, the
// import), in the order of carFieldArgs and then garage_state_key,
// created_at, updated_at, changed_version; and what an INSERT that meets
// an existing row overwrites (all but id and created_at). A new car field
// goes into these, scanCar and writeCar's UPDATE (docs/architecture.md).
const (
	carWriteColumns = `id, color, color_key, type, type_key, doors, make, make_key, model, model_key, year,
		garage_id, garage_state_key, created_at, updated_at, changed_version`
	carUpsertSet = `color = excluded.color, color_key = excluded.color_key, type = excluded.type,
		type_key = excluded.type_key, doors = excluded.doors, make = excluded.make, make_key = excluded.make_key,
		model = excluded.model, model_key = excluded.model_key, year = excluded.year, garage_id = excluded.garage_id,
		garage_state_key = excluded.garage_state_key, updated_at = excluded.updated_at,
		changed_version = excluded.changed_version`
)

// carFieldArgs appends the values of c's own columns, id to garage_id, in
// the order of carWriteColumns.
func carFieldArgs(args []any, c *yard.Car) []any {
	return append(args, c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type), c.Doors, c.Make,
		strings.ToLower(c.Make), c.Model, strings.ToLower(c.Model), c.Year, nullString(c.Garage))
}

func scanCar(row interface{ Scan(...any) error }) (*yard.Car, error) {
	var c yard.Car
	var garage sql.NullString
	var created, updated int64
	if err := row.Scan(&c.ID, &c.Color, &c.Type, &c.Doors, &c.Make, &c.Model, &c.Year, &garage, &created, &updated); err != nil {
		return nil, err
	}
	c.Garage = garage.String
	c.CreatedAt, c.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &c, nil
}

// FindCarByID returns the car with that id, or ENOTFOUND.
func (db *DB) FindCarByID(ctx context.Context, id string) (*yard.Car, error) {
	ctx, span := db.span(ctx, "store.FindCarByID")
	defer span.End()
	if db.engine == Postgres && !db.tuning.noCarBatch {
		return db.carLoaderOf().Do(ctx, id)
	}
	c, err := scanCar(db.QueryRow(ctx, `SELECT `+carColumns+` FROM cars WHERE id = $1`, id))
	return c, notFound(err, "Car")
}

// changeStamp returns the transaction's place in the commit order: the
// number its events carry (store/events.go). Every write transaction on
// cars or garages stamps the rows it writes (changed_version) and the ids
// it deletes (car_tombstones) with it, and ReadCarChanges reads them the
// way events are read: on PostgreSQL the transaction id, read up to the
// oldest transaction still running; on SQLite the event clock. Writers
// share no row for it (docs/cars.md, "The search index").
func changeStamp(ctx context.Context, tx *Tx) (int64, error) {
	if tx.evTx != 0 {
		return tx.evTx, nil
	}
	q := bumpEventClockSQLite
	if tx.db.engine == Postgres {
		q = currentTxPG
	}
	err := tx.QueryRow(ctx, q).Scan(&tx.evTx)
	return tx.evTx, err
}

// withCarTx is WithTx for a write of cars or garages: fn also gets the
// transaction's stamp (carStamp).
func (db *DB) withCarTx(ctx context.Context, fn func(tx *Tx, v int64) error) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		v, err := carStamp(ctx, tx)
		if err != nil {
			return err
		}
		return fn(tx, v)
	})
}

// carStamp is changeStamp for a transaction that writes cars or garages:
// on PostgreSQL it is announced to the read leases before its commit
// (carannounce.go).
func carStamp(ctx context.Context, tx *Tx) (int64, error) {
	tx.carsWritten = true
	return changeStamp(ctx, tx)
}

// tombstone records the deletion of a car or garage (kind) by the
// transaction stamped v, and appends its event typ about subject.
func tombstone(ctx context.Context, tx *Tx, kind, id string, v int64, typ, subject string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO car_tombstones (kind, id, version) VALUES ($1, $2, $3)
		ON CONFLICT (kind, id) DO UPDATE SET version = excluded.version`, kind, id, v)
	if err != nil {
		return err
	}
	return appendEvent(ctx, tx, typ, subject, "", yard.EventDeleted{ID: id})
}

// noSuchGarage answers a car written with a garage that does not exist.
func noSuchGarage() error {
	return yard.Invalid("The car's garage does not exist.", yard.FieldError{Field: "garage", Message: "no garage has this id"})
}

// garageStateKey returns the state key of a garage for a car being
// written, or EINVALID naming "garage" when there is no such garage.
func garageStateKey(ctx context.Context, tx *Tx, garage string) (any, error) {
	if garage == "" {
		return nil, nil
	}
	state, err := scanValue[string](tx.QueryRowContext(ctx, `SELECT state_key FROM garages WHERE id = $1`, garage))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, noSuchGarage()
	}
	return state, err
}

// nullString is s as a column's value: NULL when empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateCar stores a new car; a car without id gets one.
func (db *DB) CreateCar(ctx context.Context, c *yard.Car) error {
	defer db.trace(&ctx, "store.CreateCar").End()
	if err := c.Validate(); err != nil {
		return err
	}
	ensureID(&c.ID)
	return db.withCarTx(ctx, func(tx *Tx, v int64) error { return writeCar(ctx, tx, c, v, true) })
}

// writeCar writes c's row, stamped v: a new row with its car.created
// event when created is set, else over its row with its car.updated event.
func writeCar(ctx context.Context, tx *Tx, c *yard.Car, v int64, created bool) error {
	state, err := garageStateKey(ctx, tx, c.Garage)
	if err != nil {
		return err
	}
	now := Millis(tx.Now())
	args, typ := append(carFieldArgs(make([]any, 0, 16), c), state, now), yard.EventCarUpdated
	if created {
		_, err = tx.ExecContext(ctx, `INSERT INTO cars (`+carWriteColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`, append(args, now, v)...)
		err = conflictIf(err, "A car with id %q exists.", c.ID)
		typ = yard.EventCarCreated
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE cars SET color = $2, color_key = $3, type = $4, type_key = $5, doors = $6, make = $7,
			make_key = $8, model = $9, model_key = $10, year = $11, garage_id = $12, garage_state_key = $13, updated_at = $14,
			changed_version = $15 WHERE id = $1`, append(args, v)...)
	}
	if err != nil {
		return err
	}
	c.UpdatedAt = FromMillis(now)
	if created {
		c.CreatedAt = c.UpdatedAt
	}
	return appendEvent(ctx, tx, typ, yard.CarPath(c.ID), "", c)
}

// ReplaceCar stores c under c.ID, creating the car when there is none.
//
// It is the busiest write (PUT /cars/{id}), so it costs as few round trips
// as the engine allows. On PostgreSQL it is one statement: the garage's
// state looked up, the row inserted or overwritten (stamped with the
// transaction id) and its event appended, which queues on nothing but the
// car's own row; it goes with its BEGIN and the read of the leases in one
// round trip, and its COMMIT follows the announcement to the leases
// (replaceCarPostgres). On SQLite (in-process, one writer) it is the stamp
// and one UPDATE, or an INSERT when there was no row. A garage that does
// not exist fails the foreign key: EINVALID naming "garage", and nothing
// is written.
func (db *DB) ReplaceCar(ctx context.Context, c *yard.Car) (bool, error) {
	defer db.trace(&ctx, "store.ReplaceCar").End()
	if err := c.Validate(); err != nil {
		return false, err
	}
	if c.ID == "" {
		return false, yard.Invalid("The car needs an id.", yard.FieldError{Field: "id", Message: "is required"})
	}
	if db.engine == Postgres {
		return db.replaceCarPostgres(ctx, c)
	}
	var created bool
	err := db.withCarTx(ctx, func(tx *Tx, v int64) error {
		now := Millis(tx.Now())
		var createdAt int64
		err := tx.QueryRowContext(ctx, `UPDATE cars SET color = $2, color_key = $3, type = $4, type_key = $5, doors = $6, make = $7,
			make_key = $8, model = $9, model_key = $10, year = $11, garage_id = $12,
			garage_state_key = (SELECT state_key FROM garages WHERE id = $12), updated_at = $13, changed_version = $14
			WHERE id = $1 RETURNING created_at`, append(carFieldArgs(make([]any, 0, 14), c), now, v)...).Scan(&createdAt)
		if errors.Is(err, sql.ErrNoRows) {
			created = true
			return writeCar(ctx, tx, c, v, true)
		} else if err != nil {
			return carWriteError(err)
		}
		c.CreatedAt, c.UpdatedAt = FromMillis(createdAt), FromMillis(now)
		return appendEvent(ctx, tx, yard.EventCarUpdated, yard.CarPath(c.ID), "", c)
	})
	return created, err
}

// replaceCarSQL is ReplaceCar's statement on PostgreSQL; xmax is 0 on a
// row it inserted. The car's event is written by the same statement
// (store/events.go).
const replaceCarSQL = `WITH w AS (INSERT INTO cars (` + carWriteColumns + `)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text,
			(SELECT state_key FROM garages WHERE id = $12::text), $13, $13, pg_current_xact_id()::text::bigint
		ON CONFLICT (id) DO UPDATE SET ` + carUpsertSet + `
		RETURNING created_at, xmax = 0 AS created),
		e AS (INSERT INTO events (tx, seq, type, subject, owner_id, at, data)
			SELECT pg_current_xact_id()::text::bigint, 1, CASE WHEN w.created THEN 'car.created' ELSE 'car.updated' END,
				$14, '', $13, $15 FROM w)
		SELECT created_at, created, pg_current_xact_id()::text::bigint FROM w`

// replaceCarPostgres is ReplaceCar on PostgreSQL: BEGIN, the statement and
// the read of the leases in one round trip (a pipeline: the read takes its
// snapshot after the statement took the transaction's id, as withTxOn's
// does), then the announcement when another process holds a lease, COMMIT,
// and the acknowledgements (carannounce.go).
func (db *DB) replaceCarPostgres(ctx context.Context, c *yard.Car) (bool, error) {
	now := Millis(db.Now())
	c.UpdatedAt = FromMillis(now)
	data, err := json.Marshal(c) // the event's data (its createdAt is not part of a car's representation)
	if err != nil {
		return false, err
	}
	args := append(carFieldArgs(make([]any, 0, 15), c), now, yard.CarPath(c.ID), string(data))
	var createdAt int64
	var created bool
	cars, err := db.commitCarStatement(ctx, replaceCarSQL, args, &createdAt, &created)
	if err != nil {
		return false, err
	}
	c.CreatedAt = FromMillis(createdAt)
	db.eventsCommitted()
	return created, cars.confirm(ctx) // the connection is back in the pool
}

// commitCarStatement runs statement q in a transaction of its own on a
// connection of the write pool, with BEGIN and the read of the leases in
// one round trip; its one row, scanned into dest, ends with the
// transaction's id. It announces the transaction and commits it.
func (db *DB) commitCarStatement(ctx context.Context, q string, args []any, dest ...any) (*carCommit, error) {
	db.leases.init(db)
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close() // a connection left in a transaction is not pooled again
	var xid int64
	var leases []readLease
	var cars *carCommit
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		b.Queue(q, args...).QueryRow(func(row pgx.Row) error { return row.Scan(append(dest, &xid)...) })
		b.Queue(leasesSQL, db.leases.name).Query(func(rows pgx.Rows) (err error) {
			leases, err = scanLeases(rows)
			return err
		})
		err := pc.SendBatch(ctx, b).Close()
		if err == nil {
			cars, err = db.announceLeases(ctx, xid, leases)
		}
		if err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_, _ = pc.Exec(rctx, `ROLLBACK`)
			return carWriteError(err)
		}
		if _, err := pc.Exec(ctx, `COMMIT`); err != nil {
			return cars.failed(fmt.Errorf("commit: %w", err))
		}
		return nil
	})
	return cars, err
}

// carWriteError maps a failed write of a car row: a garage that does not
// exist (the foreign key) is the client's error.
func carWriteError(err error) error {
	if isForeignKeyViolation(err) {
		return noSuchGarage()
	}
	return err
}

// UpdateCar changes the given fields of a car and returns it.
func (db *DB) UpdateCar(ctx context.Context, id string, upd yard.CarUpdate) (*yard.Car, error) {
	defer db.trace(&ctx, "store.UpdateCar").End()
	var c *yard.Car
	err := db.withCarTx(ctx, func(tx *Tx, v int64) error {
		var err error
		c, err = scanCar(tx.QueryRowContext(ctx, `SELECT `+carColumns+` FROM cars WHERE id = $1`, id))
		if err != nil {
			return notFound(err, "Car")
		}
		upd.Apply(c)
		if err := c.Validate(); err != nil {
			return err
		}
		return writeCar(ctx, tx, c, v, false)
	})
	return c, err
}

// DeleteCar removes a car.
func (db *DB) DeleteCar(ctx context.Context, id string) error {
	defer db.trace(&ctx, "store.DeleteCar").End()
	return db.withCarTx(ctx, func(tx *Tx, v int64) error {
		if _, err := scanValue[string](tx.QueryRowContext(ctx, `DELETE FROM cars WHERE id = $1 RETURNING id`, id)); err != nil {
			return notFound(err, "Car")
		}
		return tombstone(ctx, tx, "car", id, v, yard.EventCarDeleted, yard.CarPath(id))
	})
}
