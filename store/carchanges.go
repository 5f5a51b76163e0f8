package store

import (
	"context"
	"database/sql"

	"github.com/yard-api/yard"
)

// CarChangeHandler receives what ReadCarChanges reads. Garage and Car may
// keep the values they are given; Car's argument is the handler's own.
type CarChangeHandler struct {
	Garage        func(g *yard.Garage)
	Car           func(c *yard.Car)
	CarDeleted    func(id string)
	GarageDeleted func(id string)
}

// ReadCarChanges reads, in one snapshot of the store, the car version and
// everything about cars and garages that changed after version since:
// the garages and cars written (their current rows) and the ids deleted.
// With since < 0 it reads every garage and every car (in id order) and no
// deletions: an index's first build. It calls h in this order: garages,
// deleted cars, cars, deleted garages, so a car's garage is known before
// the car and a garage is emptied before it goes. An id deleted and
// created again is a row, never a deletion. It returns the version the
// snapshot holds; applying the calls to a projection of version since
// gives a projection of that version.
func (db *DB) ReadCarChanges(ctx context.Context, since int64, h CarChangeHandler) (int64, error) {
	var opts *sql.TxOptions
	if db.engine == Postgres {
		// One snapshot for every statement below.
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	// On SQLite a (deferred) transaction on a reader connection reads one
	// snapshot of the WAL from its first statement on.
	tx, err := db.read.BeginTx(ctx, opts)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var version int64
	if err := tx.QueryRowContext(ctx, `SELECT version FROM car_version WHERE id = 1`).Scan(&version); err != nil {
		return 0, err
	}
	full := since < 0
	cond, args := ` WHERE changed_version > $1`, []any{since}
	if full {
		cond, args = ``, nil
	}

	garages := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT id, name, state, created_at, updated_at FROM garages`+cond, args...)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var g yard.Garage
		var created, updated int64
		if err := rows.Scan(&g.ID, &g.Name, &g.State, &created, &updated); err != nil {
			rows.Close()
			return 0, err
		}
		g.CreatedAt, g.UpdatedAt = FromMillis(created), FromMillis(updated)
		garages[g.ID] = true
		h.Garage(&g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}

	var deleted map[string][]string // kind → ids
	if !full {
		deleted = map[string][]string{}
		rows, err := tx.QueryContext(ctx, `SELECT kind, id FROM car_tombstones WHERE version > $1`, since)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var kind, id string
			if err := rows.Scan(&kind, &id); err != nil {
				rows.Close()
				return 0, err
			}
			deleted[kind] = append(deleted[kind], id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}

	// Cars written after since; a tombstone of one of them is older than
	// its re-creation.
	var written map[string]bool
	if !full && len(deleted["car"]) > 0 {
		written = map[string]bool{}
	}
	order := ``
	if full {
		order = ` ORDER BY id`
	}
	rows, err = tx.QueryContext(ctx, `SELECT `+carColumns+` FROM cars`+cond+order, args...)
	if err != nil {
		return 0, err
	}
	var cars []*yard.Car
	for rows.Next() {
		c, err := scanCar(rows)
		if err != nil {
			rows.Close()
			return 0, err
		}
		if written != nil {
			written[c.ID] = true
			cars = append(cars, c) // after the deletions
			continue
		}
		h.Car(c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, id := range deleted["car"] {
		if !written[id] {
			h.CarDeleted(id)
		}
	}
	for _, c := range cars {
		h.Car(c)
	}
	for _, id := range deleted["garage"] {
		if !garages[id] {
			h.GarageDeleted(id)
		}
	}
	return version, tx.Commit()
}
