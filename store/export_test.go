package store

import "context"

// ReplayWriterSetting reads a setting on the connections that record
// signatures on PostgreSQL.
func (db *DB) ReplayWriterSetting(ctx context.Context, name string) (string, error) {
	var v string
	err := db.replayWrite.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// CreateCarInTx writes a new car in tx as CreateCar does in its own.
var CreateCarInTx = createCar
