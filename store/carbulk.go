package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// What a bulk import leaves out while it loads (docs/cars.md, "How an
// import is made fast"):
//
//   - cars_garage_idx, when the import starts on an empty cars table. Its
//     keys (the cars' garages) come in random order, so keeping it row by
//     row cost more than half of a load; built once at the end it costs 1-2
//     s per million cars. Until then a garage's cars are found by a
//     scan (a garage's car count, a garage's deletion). The import builds it
//     at its end, also after an error or an interrupt, and before a batch
//     that changes garages once it has written cars; Migrate builds it when
//     a store opens without it (an import killed half-way).
//   - the foreign-key check of each car row. On SQLite the batch's
//     connection turns foreign keys off for the batch; on PostgreSQL the
//     batch skips the constraint's trigger when the store's role may set
//     session_replication_role (a superuser, or a role granted SET ON
//     PARAMETER session_replication_role). The batch then checks its cars'
//     garages in one statement (checkGarages), on PostgreSQL taking the same
//     lock the trigger takes, so that a garage deleted beside the import is
//     refused as before. The constraint itself stays: every other write is
//     checked as always.

// carIndexLock is the PostgreSQL advisory lock that dropping and building
// cars_garage_idx take turns on (two imports, or an import and a server
// opening the store).
const carIndexLock = 7214003

// createCarsGarageIndex is cars_garage_idx as the migrations define it
// (00140).
const createCarsGarageIndex = `CREATE INDEX IF NOT EXISTS cars_garage_idx ON cars (garage_id)`

// deferCarIndexes drops cars_garage_idx when cars is empty, for a bulk
// import to build it after the load, and reports whether it did.
func (db *DB) deferCarIndexes(ctx context.Context) (bool, error) {
	var dropped bool
	err := db.WithTx(ctx, func(tx *Tx) error {
		if err := db.carIndexLock(ctx, tx); err != nil {
			return err
		}
		some, err := scanValue[bool](tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM cars)`))
		if err != nil || some {
			return err
		}
		_, err = tx.ExecContext(ctx, `DROP INDEX IF EXISTS cars_garage_idx`)
		dropped = err == nil
		return err
	})
	return dropped, err
}

// ensureCarIndexes builds cars_garage_idx when it is missing.
func (db *DB) ensureCarIndexes(ctx context.Context) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		if err := db.carIndexLock(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, createCarsGarageIndex)
		return err
	})
}

func (db *DB) carIndexLock(ctx context.Context, tx *Tx) error {
	if db.engine != Postgres {
		return nil // one writer at a time already
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+fmt.Sprint(carIndexLock)+`)`)
	return err
}

// maySkipTriggers reports whether the store's role may set
// session_replication_role on PostgreSQL.
func (db *DB) maySkipTriggers(ctx context.Context) bool {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return false
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `SET LOCAL session_replication_role = replica`)
	return err == nil
}

// checkGarages does, for a batch written without foreign-key checks, what
// the checks do row by row: it finds the cars' garages, and fails the batch
// when one is not stored. On PostgreSQL it also takes the lock the
// trigger takes, FOR KEY SHARE until the transaction ends: a garage
// deleted beside the import then waits for it, and is refused by the
// constraint once the cars are committed. On SQLite the batch holds the
// only write lock.
func checkGarages(ctx context.Context, tx *Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	q, list := `SELECT id FROM garages WHERE id = ANY($1::text[]) ORDER BY id FOR KEY SHARE`, any(ids)
	if tx.db.engine == SQLite {
		js, _ := json.Marshal(ids)
		q, list = `SELECT id FROM garages WHERE id IN (SELECT value FROM json_each($1)) ORDER BY id`, string(js)
	}
	rows, err := tx.QueryContext(ctx, q, list)
	found, err := appendRows(nil, rows, err, scanValue[string])
	if err != nil {
		return err
	}
	// Both sorted, found a subset of ids: the first difference is the
	// first garage missing.
	for i, id := range ids {
		if i == len(found) || found[i] != id {
			return fmt.Errorf("garage %q is not stored (deleted while the import ran?)", id)
		}
	}
	return nil
}

// carGarages returns the garages of the batch's cars, each once, in
// order (checkGarages). The reading goroutine finds them.
func (b *importBatch) carGarages() []string {
	seen := make(map[string]bool, 1024)
	for _, c := range b.cars {
		if c.Garage != "" {
			seen[c.Garage] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
