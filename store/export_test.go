package store

import (
	"context"
	"database/sql"

	"github.com/yard-api/yard/internal/batch"
)

// ReplayWriterSetting reads a setting on the connections that record
// signatures on PostgreSQL.
func (db *DB) ReplayWriterSetting(ctx context.Context, name string) (string, error) {
	return sessionSetting(ctx, db.replayWrite, name)
}

func sessionSetting(ctx context.Context, pool *sql.DB, name string) (string, error) {
	var v string
	err := pool.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// CreateCarInTx writes a new car in tx as CreateCar does in its own.
var CreateCarInTx = createCar

// RunBatch runs fns as one group-commit batch (runBatch), each in its own
// savepoint, and returns their errors.
func (db *DB) RunBatch(fns ...func(tx *Tx) error) []error {
	writes := make([]batchWrite, len(fns))
	for i, fn := range fns {
		writes[i] = batchWrite{ctx: context.Background(), fn: fn}
	}
	res := make([]batch.Result[struct{}], len(fns))
	db.runBatch(writes, res)
	errs := make([]error, len(res))
	for i, r := range res {
		errs[i] = r.Err
	}
	return errs
}

// SetImportChunks sets the rows per statement of an import on each engine
// and returns a function that restores them.
func SetImportChunks(sqlite, pg int) func() {
	was := [2]int{importChunk, pgImportChunk}
	importChunk, pgImportChunk = sqlite, pg
	return func() { importChunk, pgImportChunk = was[0], was[1] }
}

// QuietProbe reports whether SQLite's change probe reads the WAL index's
// header, and how many times it has run its statement.
func (db *DB) QuietProbe() (mapped bool, statements int) {
	db.quiet.mu.Lock()
	defer db.quiet.mu.Unlock()
	return db.quiet.shm != nil, db.quiet.ran
}

// EventReaderSetting reads a setting on the connections of the reads of
// several people's events on PostgreSQL.
func (db *DB) EventReaderSetting(ctx context.Context, name string) (string, error) {
	return sessionSetting(ctx, db.eventRead, name)
}

// SetEventWindowPG sets the span of one statement of a windowed read on
// PostgreSQL and returns a function that restores it.
func SetEventWindowPG(n int64) func() {
	was := eventWindowPG
	eventWindowPG = n
	return func() { eventWindowPG = was }
}
