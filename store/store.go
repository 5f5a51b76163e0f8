// Package store is yard's one SQL store with two engines: SQLite (embedded,
// the default) and PostgreSQL (for several server processes). Both speak
// database/sql and run the same SQL text with $N placeholders; the few places
// where the engines differ go through the Engine seam. Schema changes are
// versioned goose migrations embedded in the binary.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/yard-api/yard"
)

// Engine names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// DB is an open store.
type DB struct {
	engine string
	dsn    string
	// write takes every write transaction. On SQLite it holds one
	// connection, so writers queue in Go instead of spinning on SQLITE_BUSY;
	// on PostgreSQL it is the same pool as read.
	write *sql.DB
	read  *sql.DB
	// quiet spares SQLite's change probe its statement while nothing is
	// committed (carchanges.go).
	quiet quietProbe
	// leases spare PostgreSQL's change probe while this process holds a
	// read lease and hears of no car write (carlease.go).
	leases carLeases

	// Now is the clock; tests replace it.
	Now func() time.Time

	// carLoad gathers concurrent reads of cars by id on PostgreSQL
	// (carload.go).
	carLoad       *carLoader
	carLoaderOnce sync.Once

	// replayWrite records signed-request signatures on PostgreSQL: a few
	// connections that commit without waiting for the WAL flush
	// (Open).
	replayWrite *sql.DB

	// eventRead reads several people's events on PostgreSQL (a hub's
	// reads), on connections that keep one generic plan (Open).
	eventRead *sql.DB

	// replay is the replay log of signed requests on SQLite
	// (replaylog.go), opened on first use.
	replay   *replayLog
	replayMu sync.Mutex

	// stmts caches prepared read statements by SQL text, so hot reads skip
	// SQLite's parser (pgx caches statements per connection on its own).
	// A statement's LIMIT is written CAST($n AS BIGINT), never a bare $n:
	// SQLite reads a bare parameter of LIMIT as the value bound when the
	// statement was compiled, so each new binding expires the statement
	// and every run compiles it again (a hub's read of events ran 3.4×
	// slower). The cast keeps the plan free of the value
	// (TestNoBoundLimit).
	stmts  sync.Map // string -> *sql.Stmt
	nstmts atomic.Int64

	// writeStmts holds the hot writes prepared on the SQLite writer
	// (wstmt.go): SQL text -> *sql.Stmt. batchers holds the group-commit
	// queues (batch.go): key -> *writeQueue, each gone once idle.
	writeStmts sync.Map
	batchers   sync.Map

	// eventWake is signalled after a commit that appended events
	// (EventsWritten).
	eventWake chan struct{}

	// tuning is how the bigger statements are cut (tuning.go).
	tuning tuning

	// held is the shared lock on an SQLite store's lock file (backup.go,
	// holdStore), kept while the store is open so that yard restore
	// never replaces a store in use.
	held *os.File
}

// maxCachedStmts bounds the statement cache; dynamic queries beyond it run
// unprepared.
const maxCachedStmts = 512

// Open opens the store named by dsn: "" or "sqlite" for SQLite in
// dataDir/yard.db, "sqlite:PATH" or "file:PATH" for a given SQLite file,
// "postgres://..." or "postgresql://..." for PostgreSQL. It does not migrate.
func Open(ctx context.Context, dsn, dataDir string, opts ...Option) (*DB, error) {
	o := options{busyTimeout: DefaultSQLiteBusyTimeout, sync: DefaultSQLiteSync}
	for _, opt := range opts {
		opt(&o)
	}
	db := &DB{Now: time.Now, eventWake: make(chan struct{}, 1)}
	db.tuning = o.tuning.withDefaults()
	path, isSQLite := sqliteFile(dsn)
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db.engine, db.dsn = Postgres, dsn
		dsn = withConnectTimeout(dsn)
		pool, err := openSessionPool(dsn, 32)
		if err != nil {
			return nil, err
		}
		db.write, db.read = pool, pool
		// The replay writer records signed-request signatures, with
		// synchronous_commit off: a commit returns once it is in the
		// server's memory, and is visible to every other session at once
		// (so a replay is refused across processes exactly as before), but
		// reaches the disk up to three wal_writer_delay later (0.6 s by
		// default). A crash of the PostgreSQL server may therefore forget
		// the signatures of its last 0.6 s; a crash of yard loses nothing.
		// Waiting for the WAL flush of every batch made a signed request
		// cost more than twice an unauthenticated one. Two connections: one
		// for each batcher that writes signatures (signed requests and
		// OAuth 1.0a), each keeping one write in flight.
		//
		// The event reader reads several people's events (a hub's, every
		// few milliseconds; ReadEvents) with plan_cache_mode
		// force_generic_plan. PostgreSQL otherwise plans each run of the
		// prepared statement anew: the generic plan's estimate of the rows
		// after the reader's position (which the plan cannot know) is too
		// high for it to be chosen, though it is the same plan, the log's
		// primary key in order. Planning took 0.15-0.23 ms, the run
		// 0.04 ms (docs/benchmark-journal.md, "Events"). It also plans no
		// nested loops (enable_nestloop off): a read for a long list of
		// people joins the log with the list, and a generic plan, which
		// cannot know the list's length, would otherwise compare each event
		// with each person (ownersManyHashed). Two connections: a process
		// has one hub, which reads one statement at a time.
		if db.replayWrite, err = openSessionPool(dsn, 2, "synchronous_commit", "off"); err == nil {
			db.eventRead, err = openSessionPool(dsn, 2, "plan_cache_mode", "force_generic_plan", "enable_nestloop", "off")
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	case isSQLite:
		if path == "" {
			if err := DataDir(dataDir); err != nil {
				return nil, err
			}
			path = filepath.Join(dataDir, "yard.db")
		}
		db.engine, db.dsn = SQLite, path
		sync, err := sqliteSyncPragma(o.sync)
		if err != nil {
			return nil, err
		}
		if db.held, err = holdStore(path); err != nil {
			return nil, err
		}
		// The file (files.go): created 0600, or a refusal naming it.
		if err := openStoreFile(path); err != nil {
			db.held.Close()
			return nil, storeOpenError(path, err)
		}
		if db.write, err = openSQLite(path, true, o.busyTimeout, sync); err == nil {
			db.read, err = openSQLite(path, false, o.busyTimeout, sync)
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown database %q: use sqlite, sqlite:PATH or postgres://", redactDSN(dsn))
	}
	if err := db.read.PingContext(ctx); err != nil {
		db.Close()
		if db.engine == SQLite {
			if cause := sqliteOpenCause(db.dsn); cause != nil {
				err = fmt.Errorf("%w: %w", err, cause)
			}
			return nil, storeOpenError(db.dsn, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", db.engine, err)
	}
	return db, nil
}

// storeOpenError says that the SQLite store at path did not open, and why:
// "open store data/yard.db: permission denied".
func storeOpenError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// openSessionPool opens a pool of conns PostgreSQL connections whose
// sessions set each setting (name, value, name, value, …).
func openSessionPool(dsn string, conns int, settings ...string) (*sql.DB, error) {
	u, err := url.Parse(dsn)
	if err != nil { // the error would quote the URL, password and all
		return nil, errors.New("open postgres: the connection URL does not parse")
	}
	q := u.Query()
	for i := 0; i+1 < len(settings); i += 2 {
		q.Set(settings[i], settings[i+1]) // pgx sends unknown parameters as run-time settings
	}
	u.RawQuery = q.Encode()
	pool, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	pool.SetMaxOpenConns(conns)
	pool.SetMaxIdleConns(conns)
	pool.SetConnMaxIdleTime(5 * time.Minute)
	return pool, nil
}

// DefaultSQLiteBusyTimeout is how long an SQLite statement waits for a lock
// held by another connection (or process) before the store answers
// unavailable (Unavailable), unless WithSQLiteBusyTimeout says otherwise.
const DefaultSQLiteBusyTimeout = 10 * time.Second

// Option adjusts Open.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	sync        string // SyncFull or SyncNormal (durability.go)
	tuning      tuning // tuning.go
}

// WithSQLiteBusyTimeout replaces DefaultSQLiteBusyTimeout.
func WithSQLiteBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// openSQLite opens a pool of connections to the SQLite file path; sync is
// the pragma synchronous (FULL or NORMAL, see sqliteSyncPragma).
// sqliteMmap is how much of the database file SQLite reads through a
// memory map (PRAGMA mmap_size) instead of a read system call per page:
// every connection shares the one mapping (the operating system's page
// cache), so a page read by one is in memory for all.
const sqliteMmap = 1 << 30

func openSQLite(path string, writer bool, busyTimeout time.Duration, sync string) (*sql.DB, error) {
	q := url.Values{"_pragma": {"journal_mode(WAL)", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()), "foreign_keys(1)",
		"synchronous(" + sync + ")", "mmap_size(" + strconv.FormatInt(sqliteMmap, 10) + ")"}}
	if writer {
		q.Set("_txlock", "immediate")
	}
	d, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	if writer {
		d.SetMaxOpenConns(1)
	} else {
		d.SetMaxOpenConns(8)
		d.SetMaxIdleConns(8)
	}
	d.SetConnMaxIdleTime(0)
	return d, nil
}

// withConnectTimeout adds connect_timeout=5 (seconds) to a PostgreSQL URL
// that sets none, so that a server that does not answer (rather than
// refusing) makes a request answer 503 (Unavailable) in seconds, not after
// the operating system's TCP time-out.
func withConnectTimeout(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	q := u.Query()
	if q.Has("connect_timeout") {
		return dsn
	}
	q.Set("connect_timeout", "5")
	u.RawQuery = q.Encode()
	return u.String()
}

// redactDSN hides a password in a connection string so it can be logged.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		dsn = u.Redacted()
	}
	// A password may also be a parameter of the URL (?password=) or of a
	// key=value connection string.
	return dsnPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// dsnPassword is a password parameter of a connection string, its value
// quoted or not.
var dsnPassword = regexp.MustCompile(`(?i)(password=)('(?:[^'\\]|\\.)*'|[^&\s]*)`)

// Engine returns SQLite or Postgres.
func (db *DB) Engine() string { return db.engine }

// String describes the store without secrets.
func (db *DB) String() string { return db.engine + " " + redactDSN(db.dsn) }

// Read returns the pool for reads outside a transaction.
func (db *DB) Read() *sql.DB { return db.read }

// QueryRow runs a read query outside a transaction through a cached
// prepared statement.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := db.prepared(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.read.QueryRowContext(ctx, query, args...)
}

// Query runs a read query outside a transaction through a cached prepared
// statement.
func (db *DB) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := db.prepared(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.read.QueryContext(ctx, query, args...)
}

func (db *DB) prepared(ctx context.Context, query string) *sql.Stmt {
	if db.engine != SQLite {
		return nil
	}
	if st, ok := db.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if db.nstmts.Load() >= maxCachedStmts {
		return nil
	}
	st, added := prepareInto(ctx, db.read, &db.stmts, query)
	if added {
		db.nstmts.Add(1)
	}
	return st
}

// Close closes the store.
func (db *DB) Close() error {
	db.leases.close()
	err := db.closeReplayLog()
	db.quiet.mu.Lock()
	db.quiet.close()
	db.quiet.mu.Unlock()
	for _, m := range []*sync.Map{&db.stmts, &db.writeStmts} {
		m.Range(func(_, v any) bool {
			v.(*sql.Stmt).Close()
			return true
		})
	}
	pools := []*sql.DB{db.write, db.eventRead, db.replayWrite}
	if db.read != db.write { // one pool on PostgreSQL
		pools = append(pools, db.read)
	}
	for _, pool := range pools {
		if pool != nil {
			err = errors.Join(err, pool.Close())
		}
	}
	if db.held != nil { // after the connections: the lock outlives them
		err = errors.Join(err, db.held.Close())
	}
	return err
}

// Clock returns the store's time (Now).
func (db *DB) Clock() time.Time { return db.Now() }

// Tx is a write transaction.
type Tx struct {
	*sql.Tx
	db  *DB
	now time.Time

	// The events appended so far (events.go): SQLite's transaction
	// number (0 until the first event), the last ordinal, and the dogs
	// whose dog.updated is appended at commit.
	evTx      int64
	evSeq     int64
	dirtyDogs []string
	// carsWritten: the transaction wrote cars or garages (carStamp).
	carsWritten bool

	conn *sql.Conn // the transaction's connection, when begun on one (withTxOn)
}

// Now returns the time the transaction began, by the store's clock.
func (tx *Tx) Now() time.Time { return tx.now }

// WithTx runs fn in a write transaction, committing when fn returns nil.
func (db *DB) WithTx(ctx context.Context, fn func(tx *Tx) error) error {
	return db.withTxOn(ctx, nil, fn)
}

// withTxOn is WithTx on conn, a connection of the write pool, when not
// nil: fn may then reach the driver's connection (Tx.conn). The caller
// then prepares the event writes before it takes conn (prepareWrites):
// on SQLite conn is the pool's only connection, which a statement
// prepared on the pool would wait for.
func (db *DB) withTxOn(ctx context.Context, conn *sql.Conn, fn func(tx *Tx) error) error {
	begin := db.write.BeginTx
	if conn != nil {
		begin = conn.BeginTx
	} else {
		db.prepareWrites(ctx, eventWrites...)
	}
	sqlTx, err := begin(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &Tx{Tx: sqlTx, db: db, now: db.Now(), conn: conn}
	err = fn(tx)
	if err == nil {
		err = tx.flushDogs(ctx)
	}
	var cars *carCommit
	if err == nil && tx.carsWritten && db.engine == Postgres {
		// Read leases (carannounce.go): the write is announced to the
		// other processes before its commit, and confirmed after it.
		cars, err = db.announceCars(ctx, tx)
	}
	if err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
			// rolled back as the store wait ended: a 503, not a 500
			err = ctx.Err()
		}
		err = fmt.Errorf("commit: %w", err)
		if cars != nil {
			err = cars.failed(err)
		}
		return err
	}
	if tx.evSeq > 0 {
		db.eventsCommitted()
	}
	if cars != nil {
		return cars.confirm(ctx)
	}
	return nil
}

// execEach runs each statement in tx with args.
func (tx *Tx) execEach(ctx context.Context, args []any, queries ...string) error {
	for _, q := range queries {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// eventsCommitted signals EventsWritten.
func (db *DB) eventsCommitted() {
	select {
	case db.eventWake <- struct{}{}:
	default:
	}
}

// ensureID gives *id a new id (yard.NewID) when it is empty.
func ensureID(id *string) {
	if *id == "" {
		*id = yard.NewID()
	}
}

// Millis converts a time to the stored form: Unix milliseconds.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMillis converts stored Unix milliseconds back to a UTC time; 0 is
// the zero time.
func FromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// affected is how many rows a statement changed, from what it returned
// (res, err := ExecContext(…)).
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// millis is a time.Time read from a column of Unix milliseconds, as
// FromMillis converts it.
type millis time.Time

// ms is t as a destination of Scan for a column of Unix milliseconds.
func ms(t *time.Time) *millis { return (*millis)(t) }

// Scan implements sql.Scanner.
func (m *millis) Scan(src any) error {
	if n, ok := src.(int64); ok { // what both drivers give for BIGINT
		*m = millis(FromMillis(n))
		return nil
	}
	var n sql.NullInt64 // any other value converted as a scan into an int64 does
	err := n.Scan(src)
	*m = millis(FromMillis(n.Int64))
	return err
}

// isUniqueViolation reports whether err is a unique-constraint failure on
// either engine.
func isUniqueViolation(err error) bool { return violates(err, "UNIQUE", "23505") }

// isForeignKeyViolation reports whether err is a foreign-key failure on
// either engine.
func isForeignKeyViolation(err error) bool { return violates(err, "FOREIGN KEY", "23503") }

// violates reports whether err is the failure of a constraint: SQLite's
// "<kind> constraint failed", or PostgreSQL's SQLSTATE code.
func violates(err error, kind, code string) bool {
	return err != nil && (strings.Contains(err.Error(), kind+" constraint failed") || strings.Contains(err.Error(), "SQLSTATE "+code))
}

// conflictIf is err, or ECONFLICT with the message when err is a
// unique-constraint failure (an id or a name taken).
func conflictIf(err error, format string, args ...any) error {
	if isUniqueViolation(err) {
		return yard.Errorf(yard.ECONFLICT, format, args...)
	}
	return err
}

// notFound maps sql.ErrNoRows to a yard ENOTFOUND error.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return yard.Errorf(yard.ENOTFOUND, "%s not found.", what)
	}
	return err
}
