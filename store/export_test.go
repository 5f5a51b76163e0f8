package store

import (
	"context"

	"github.com/yard-api/yard"
)

// ReplayWriterSetting reads a setting on the connections that record
// signatures on PostgreSQL.
func (db *DB) ReplayWriterSetting(ctx context.Context, name string) (string, error) {
	var v string
	err := db.replayWrite.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// CreateCarInTx writes a new car in tx as CreateCar does in its own.
func CreateCarInTx(ctx context.Context, tx *Tx, c *yard.Car) error {
	v, err := changeStamp(ctx, tx)
	if err != nil {
		return err
	}
	if err := insertCar(ctx, tx, c, v); err != nil {
		return err
	}
	return carEvent(ctx, tx, yard.EventCarCreated, c)
}
