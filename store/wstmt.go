package store

import (
	"context"
	"database/sql"
	"sync"
)

// Hot writes of bark tasks run through statements prepared once on the
// SQLite writer connection, instead of parsing their SQL in every
// transaction (the parse showed as a sixth of the CPU of a 202). pgx caches
// PostgreSQL statements by itself. They live in db.writeStmts and are
// closed with the DB.

// prepareWrites prepares the statements on the writer. It must run outside
// any transaction: the SQLite writer pool has one connection, which a
// transaction holds until it ends.
func (db *DB) prepareWrites(ctx context.Context, queries ...string) {
	if db.engine != SQLite {
		return
	}
	for _, q := range queries {
		if _, ok := db.writeStmts.Load(q); !ok {
			prepareInto(ctx, db.write, &db.writeStmts, q)
		}
	}
}

// prepareInto prepares query on pool and keeps it in stmts (query ->
// *sql.Stmt); of two preparations racing, the first one kept is returned.
func prepareInto(ctx context.Context, pool *sql.DB, stmts *sync.Map, query string) (*sql.Stmt, bool) {
	st, err := pool.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil, false
	}
	if prev, loaded := stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), false
	}
	return st, true
}

// QueryRow runs a statement answering one row inside tx, through its
// statement prepared on the SQLite writer when prepareWrites made one, else
// as plain SQL: DB.QueryRow inside a transaction.
func (tx *Tx) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := tx.db.writeStmts.Load(query); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// Query is QueryRow for a query answering rows: DB.Query inside a
// transaction.
func (tx *Tx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := tx.db.writeStmts.Load(query); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// exec is QueryRow for a write answering no rows.
func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := tx.db.writeStmts.Load(query); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}
