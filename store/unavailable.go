package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/yard-api/yard"
)

// UnavailableRetryAfter is the Retry-After, in seconds, of an answer given
// while the store cannot be reached.
const UnavailableRetryAfter = 2

// Unavailable tells a store that cannot be reached now from a bug. It
// returns an EUNAVAILABLE *yard.Error (with RetryAfter) when err says the
// database could not be reached or answered that it cannot serve now, and
// nil for any other error. It is the one place that knows the two engines'
// errors; the HTTP layer asks it about every error that would otherwise
// be internal (docs/api.md, "503 Service Unavailable").
//
// Unavailable are, on PostgreSQL: a refused, reset or closed connection,
// a connection that could not be made, the server shutting down, starting
// up or out of connection slots (SQLSTATE classes 08 and 53, 57P01-57P03);
// on SQLite: the database busy or locked past its busy time-out; on both,
// a deadline the server set for the store running out (a request's
// own context has none; the client going away is not this).
func Unavailable(err error) *yard.Error {
	if err == nil || !unavailable(err) {
		return nil
	}
	return &yard.Error{Code: yard.EUNAVAILABLE, Message: "The store cannot be reached now; try again shortly.", RetryAfter: UnavailableRetryAfter}
}

// Unavailable is the function Unavailable as a method, for the interfaces
// of the store's users (the bark runner, the webhook deliverer). With
// Reachable, the check, it is the store's one word for its liveness.
func (db *DB) Unavailable(err error) *yard.Error { return Unavailable(err) }

func unavailable(err error) bool {
	var ye *yard.Error
	if errors.As(err, &ye) {
		return ye.Code == yard.EUNAVAILABLE
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") ||
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var sqliteErr *sqlite.Error
	if errors.As(err, &sqliteErr) {
		// SQLITE_BUSY, SQLITE_LOCKED: busy past the busy time-out
		code := sqliteErr.Code() & 0xff
		return code == 5 || code == 6
	}
	var netErr net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &netErr),
		// The store did not answer (or no pooled connection came free)
		// within a deadline the server set.
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	// pgx reports a connection that died under a query in words only.
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection reset", "connection refused", "broken pipe",
		"unexpected EOF", "failed to connect", "the database system is"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Reachable checks that the store answers reads and can begin a write (on
// SQLite, that no other connection holds the write lock past the busy
// time-out); it writes nothing. The HTTP layer calls it to tell when an
// outage is over.
func (db *DB) Reachable(ctx context.Context) error {
	if err := db.read.PingContext(ctx); err != nil {
		return err
	}
	if _, err := db.Pending(ctx); err != nil {
		return err
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if db.engine == SQLite {
		// BEGIN IMMEDIATE takes the lock; a plain read settles it.
		if _, err := scanValue[int](tx.QueryRowContext(ctx, `SELECT 1`)); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Rollback()
}
