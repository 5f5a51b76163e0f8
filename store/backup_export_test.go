package store

import (
	"context"
	"fmt"
)

// MigrateTo migrates an SQLite store up to version only: a store as an
// older binary left it.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	p, err := newMigrations(SQLite, db.write)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// SQLitePragma reads an integer pragma on the writer connection, or on a
// reader one.
func (db *DB) SQLitePragma(ctx context.Context, reader bool, name string) (int64, error) {
	conn := db.write
	if reader {
		conn = db.read
	}
	var v int64
	err := conn.QueryRowContext(ctx, fmt.Sprintf("PRAGMA %s", name)).Scan(&v)
	return v, err
}
