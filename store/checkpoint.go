package store

import (
	"context"
	"time"
)

// RunCheckpoints moves SQLite's write-ahead log into the database file
// from a reader connection every interval, until ctx ends. SQLite otherwise
// checkpoints inside the commit that crosses 1000 WAL pages, on the one
// writer connection, and every write queued behind it waits for the
// checkpoint's fsync: the long tail of write latency. A PASSIVE checkpoint
// never blocks writers. The automatic checkpoint stays as a backstop at a
// larger size, in case this loop falls behind. On PostgreSQL it returns at
// once.
func (db *DB) RunCheckpoints(ctx context.Context, interval time.Duration) {
	if db.engine != SQLite {
		return
	}
	_, _ = db.write.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 20000`)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_, _ = db.write.ExecContext(context.Background(), `PRAGMA wal_autocheckpoint = 1000`)
			return
		case <-t.C:
			_, _ = db.read.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}
