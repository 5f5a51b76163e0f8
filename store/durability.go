package store

import (
	"context"
	"fmt"
	"strings"
)

// What an answered write survives (docs/operations.md, "Durability").
//
// SQLite runs in WAL mode. With synchronous=FULL every commit waits for
// the write-ahead log to reach the disk (fsync), so a write that yard
// answered 201/202 for survives a power failure of the machine. With
// synchronous=NORMAL the log is synced only at checkpoints: a commit
// survives a crash of the process, but the last transactions before a
// power failure may roll back (https://sqlite.org/pragma.html#pragma_synchronous).

// The values of WithSQLiteSync (and of serve's --sqlite-sync).
const (
	SyncFull   = "full"
	SyncNormal = "normal"
)

// DefaultSQLiteSync is the synchronous setting of an SQLite store unless
// WithSQLiteSync says otherwise.
const DefaultSQLiteSync = SyncFull

// WithSQLiteSync sets the pragma synchronous of every connection of an
// SQLite store: SyncFull or SyncNormal. PostgreSQL ignores it (its
// durability is the server's synchronous_commit and fsync).
func WithSQLiteSync(mode string) Option {
	return func(o *options) { o.sync = mode }
}

// sqliteSyncPragma is the pragma's value for a mode of WithSQLiteSync.
func sqliteSyncPragma(mode string) (string, error) {
	if m := strings.ToLower(mode); m == SyncFull || m == SyncNormal {
		return strings.ToUpper(m), nil
	}
	return "", fmt.Errorf("sqlite sync %q: want %s or %s", mode, SyncFull, SyncNormal)
}

// Durability is what the store's answered writes survive, as read back
// from the engine.
type Durability struct {
	// Setting names the settings read: "synchronous=FULL" on SQLite,
	// "synchronous_commit=on, fsync=on" on PostgreSQL.
	Setting string
	// PowerSafe reports whether an answered write survives a power
	// failure of the machine (not only a crash of the process).
	PowerSafe bool
}

// String is the start-up line's text.
func (d Durability) String() string {
	if d.PowerSafe {
		return d.Setting + ": an answered write survives a crash of the process and a power failure"
	}
	return d.Setting + ": an answered write survives a crash of the process; a power failure may lose the last ones"
}

// Durability reads back the settings that decide what an answered write
// survives: the writer connection's synchronous on SQLite, the server's
// synchronous_commit and fsync on PostgreSQL (the asynchronous commits of
// signed-request signatures and webhook bookkeeping are set per connection
// or transaction and not reported here).
func (db *DB) Durability(ctx context.Context) (Durability, error) {
	if db.engine == SQLite {
		var n int
		if err := db.write.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&n); err != nil {
			return Durability{}, err
		}
		names := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
		// In WAL mode FULL and EXTRA sync the log at every commit.
		return Durability{Setting: "sqlite synchronous=" + names[n], PowerSafe: n >= 2}, nil
	}
	var commit, fsync string
	if err := db.read.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit'), current_setting('fsync')`).Scan(&commit, &fsync); err != nil {
		return Durability{}, err
	}
	return Durability{Setting: "postgres synchronous_commit=" + commit + ", fsync=" + fsync,
		PowerSafe: fsync == "on" && commit != "off"}, nil
}
