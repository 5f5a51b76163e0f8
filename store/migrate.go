package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The schema: versioned goose migrations embedded in the binary.
//
//go:embed migrations/*.sql
var migrations embed.FS

// newMigrations returns the migrations of the engine over conn (also a
// restore's check of a backup's schema, restore.go).
func newMigrations(engine string, conn *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	if engine == Postgres {
		dialect = goose.DialectPostgres
	}
	p, err := goose.NewProvider(dialect, conn, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration, and builds cars_garage_idx if
// an import left it out and did not finish (carbulk.go). On PostgreSQL a
// session lock keeps several processes from migrating at once.
func (db *DB) Migrate(ctx context.Context) error {
	var opts []goose.ProviderOption
	if db.engine == Postgres {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := newMigrations(db.engine, db.write, opts...)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// An import killed half-way may have left cars_garage_idx out
	// (carbulk.go).
	if err := db.ensureCarIndexes(ctx); err != nil {
		return fmt.Errorf("migrate: cars_garage_idx: %w", err)
	}
	return db.checkStampClock(ctx)
}

// Pending reports whether migrations are still to be applied.
func (db *DB) Pending(ctx context.Context) (bool, error) {
	p, err := newMigrations(db.engine, db.read)
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}
