package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/yard-api/yard"
)

// Garages: their rows, their car counts, and their writes, which stamp
// the garage and carry a state change to the copy on its cars (car.go,
// carchanges.go).

const garageColumns = `g.id, g.name, g.state, g.created_at, g.updated_at, (SELECT COUNT(*) FROM cars c WHERE c.garage_id = g.id)`

func scanGarage(row rowScanner) (*yard.Garage, error) {
	var g yard.Garage
	return scanned(&g, row.Scan(&g.ID, &g.Name, &g.State, ms(&g.CreatedAt), ms(&g.UpdatedAt), &g.CarCount))
}

// FindGarageByID returns the garage with its car count, or ENOTFOUND.
func (db *DB) FindGarageByID(ctx context.Context, id string) (*yard.Garage, error) {
	defer db.trace(&ctx, "store.FindGarageByID").End()
	g, err := scanGarage(db.QueryRow(ctx, `SELECT `+garageColumns+` FROM garages g WHERE g.id = $1`, id))
	return g, notFound(err, "Garage")
}

// FindGarages returns a page of garages in id order and their number.
func (db *DB) FindGarages(ctx context.Context, page yard.Page) ([]*yard.Garage, int, error) {
	defer db.trace(&ctx, "store.FindGarages").End()
	return findPage(ctx, db, garageColumns, `garages g`, `g.id`, nil, page.Max, page.Offset, scanGarage)
}

// CreateGarage stores a new garage; one without id gets one.
func (db *DB) CreateGarage(ctx context.Context, g *yard.Garage) error {
	defer db.trace(&ctx, "store.CreateGarage").End()
	if err := g.Validate(); err != nil {
		return err
	}
	ensureID(&g.ID)
	return db.withCarTx(ctx, func(tx *Tx, v int64) error {
		return insertGarage(ctx, tx, g, v)
	})
}

// insertGarage writes a new garage row stamped v, with its
// garage.created event.
func insertGarage(ctx context.Context, tx *Tx, g *yard.Garage, v int64) error {
	now := Millis(tx.Now())
	_, err := tx.ExecContext(ctx, `INSERT INTO garages (id, name, name_key, state, state_key, created_at, updated_at, changed_version)
		VALUES ($1, $2, $3, $4, $5, $6, $6, $7)`, g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State), now, v)
	if err := conflictIf(err, "A garage with id %q exists.", g.ID); err != nil {
		return err
	}
	g.CreatedAt, g.UpdatedAt, g.CarCount = FromMillis(now), FromMillis(now), 0
	return appendEvent(ctx, tx, yard.EventGarageCreated, yard.GaragePath(g.ID), "", g)
}

// updateGarageRow writes g's fields and carries a state change to the
// copy on its cars, with the garage.updated event. The garage row is
// stamped v; its cars are not: an index keeps a garage's state once, on
// the garage.
func updateGarageRow(ctx context.Context, tx *Tx, g *yard.Garage, v int64) error {
	now := Millis(tx.Now())
	if _, err := tx.ExecContext(ctx, `UPDATE garages SET name = $2, name_key = $3, state = $4, state_key = $5, updated_at = $6,
		changed_version = $7 WHERE id = $1`,
		g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State), now, v); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cars SET garage_state_key = $2 WHERE garage_id = $1 AND garage_state_key <> $2`,
		g.ID, strings.ToLower(g.State)); err != nil {
		return err
	}
	g.UpdatedAt = FromMillis(now)
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM cars WHERE garage_id = $1`, g.ID).Scan(&g.CarCount); err != nil {
		return err
	}
	return appendEvent(ctx, tx, yard.EventGarageUpdated, yard.GaragePath(g.ID), "", g)
}

// ReplaceGarage stores g under g.ID, creating the garage when there is none.
func (db *DB) ReplaceGarage(ctx context.Context, g *yard.Garage) (bool, error) {
	defer db.trace(&ctx, "store.ReplaceGarage").End()
	if err := g.Validate(); err != nil {
		return false, err
	}
	if g.ID == "" {
		return false, yard.Invalid("The garage needs an id.", yard.FieldError{Field: "id", Message: "is required"})
	}
	created := false
	err := db.withCarTx(ctx, func(tx *Tx, v int64) error {
		old, err := scanGarage(tx.QueryRowContext(ctx, `SELECT `+garageColumns+` FROM garages g WHERE g.id = $1`, g.ID))
		if errors.Is(err, sql.ErrNoRows) {
			created = true
			return insertGarage(ctx, tx, g, v)
		} else if err != nil {
			return err
		}
		g.CreatedAt, g.CarCount = old.CreatedAt, old.CarCount
		return updateGarageRow(ctx, tx, g, v)
	})
	return created, err
}

// UpdateGarage changes the given fields of a garage and returns it.
func (db *DB) UpdateGarage(ctx context.Context, id string, upd yard.GarageUpdate) (*yard.Garage, error) {
	defer db.trace(&ctx, "store.UpdateGarage").End()
	var g *yard.Garage
	err := db.withCarTx(ctx, func(tx *Tx, v int64) error {
		var err error
		g, err = scanGarage(tx.QueryRowContext(ctx, `SELECT `+garageColumns+` FROM garages g WHERE g.id = $1`, id))
		if err != nil {
			return notFound(err, "Garage")
		}
		setIf(&g.Name, upd.Name)
		setIf(&g.State, upd.State)
		if err := g.Validate(); err != nil {
			return err
		}
		return updateGarageRow(ctx, tx, g, v)
	})
	return g, err
}

// DeleteGarage removes an empty garage; one holding cars is ECONFLICT.
func (db *DB) DeleteGarage(ctx context.Context, id string) error {
	defer db.trace(&ctx, "store.DeleteGarage").End()
	return db.withCarTx(ctx, func(tx *Tx, v int64) error {
		held, err := scanValue[int](tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM cars WHERE garage_id = $1`, id))
		if err != nil {
			return err
		}
		if held > 0 {
			return yard.Errorf(yard.ECONFLICT, "The garage holds %d %s; move or delete them first.", held, map[bool]string{true: "car", false: "cars"}[held == 1])
		}
		// A garage that is not there holds no car (the foreign key).
		if _, err := scanValue[string](tx.QueryRowContext(ctx, `DELETE FROM garages WHERE id = $1 RETURNING id`, id)); err != nil {
			return notFound(err, "Garage")
		}
		return tombstone(ctx, tx, "garage", id, v, yard.EventGarageDeleted, yard.GaragePath(id))
	})
}
