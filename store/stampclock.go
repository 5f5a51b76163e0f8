package store

import (
	"context"
	"database/sql"
	"fmt"
)

// checkStampClock refuses a PostgreSQL store whose stamps are ahead of the
// database cluster's transaction counter. Events, cars and garages are
// stamped with their writing transaction's id (docs/events.md, "Order and
// commit"); a store restored into another cluster whose counter is behind
// would stamp new changes below old ones, and readers that go by the order
// would miss them. docs/operations.md ("PostgreSQL") says how to move the
// counter forward (pg_resetwal) before serving such a store.
func (db *DB) checkStampClock(ctx context.Context) error {
	if db.engine != Postgres {
		return nil // SQLite's clock is a row of the store itself
	}
	var newest, next sql.NullInt64
	err := db.read.QueryRowContext(ctx, `SELECT GREATEST(
			(SELECT MAX(tx) FROM events),
			(SELECT MAX(changed_version) FROM cars),
			(SELECT MAX(changed_version) FROM garages),
			(SELECT MAX(version) FROM car_tombstones)),
		pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&newest, &next)
	if err != nil {
		return fmt.Errorf("check the transaction counter: %w", err)
	}
	if newest.Valid && newest.Int64 >= next.Int64 {
		// The next id: epoch and 32-bit id for pg_resetwal, whose commit
		// log segment (1,048,576 ids of 2 bits each) must exist.
		want := newest.Int64 + 1
		epoch, xid := want>>32, max(want&0xffffffff, 3)
		return fmt.Errorf("this store's newest change is stamped with transaction %d, but the PostgreSQL cluster's "+
			"next transaction id is %d: the store was restored from another cluster. Stop the cluster, create "+
			"PGDATA/pg_xact/%04X (262144 zero bytes) if it is missing, run pg_resetwal -e %d -x %d -D PGDATA, "+
			"start it and yard again (docs/operations.md, Backups and restore, PostgreSQL)",
			newest.Int64, next.Int64, xid/1048576, epoch, xid)
	}
	return nil
}
