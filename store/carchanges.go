package store

import (
	"context"
	"database/sql"
	"sync"

	"github.com/yard-api/yard"
)

// The change feed of cars and garages (docs/cars.md, "The search index").
// Every write transaction on them stamps the rows it writes
// (changed_version) and the ids it deletes (car_tombstones) with its place
// in the commit order, the number its events carry (changeStamp). A reader
// holds a yard.CarPosition and reads what changed after it through a
// yard.CarChangeHandler, the way the event log is read: on PostgreSQL up
// to the oldest transaction still running, so nothing can commit behind
// the position, with no row that writers queue on.

// changedAfter returns the condition, on a stamp column, of a change a
// reader at since has not read, and its arguments ($1, $2).
func (db *DB) changedAfter(col string, since yard.CarPosition) (string, []any) {
	if db.engine == Postgres {
		return col + ` >= $1 AND NOT pg_visible_in_snapshot(` + col + `::text::xid8, $2::pg_snapshot)`,
			[]any{since.Horizon, since.Snapshot}
	}
	return col + ` >= $1`, []any{since.Horizon}
}

// CarsChangedSince reports whether a car or garage was written or deleted
// after since: three index probes in one statement (on SQLite, one read of
// the event clock when it has not moved). On SQLite, when no connection has
// committed anything since a probe that found nothing after a position at
// or before since, it answers from the WAL index's header alone
// (quietProbe).
func (db *DB) CarsChangedSince(ctx context.Context, since yard.CarPosition) (bool, error) {
	if since.IsZero() {
		return true, nil
	}
	if db.engine == SQLite {
		return db.quiet.changedSince(ctx, db, since)
	}
	gen := db.leases.probeBegins()
	changed, snap, err := db.carsChangedSince(ctx, since)
	if err == nil {
		db.leases.probed(gen, since, changed, snap)
	}
	return changed, err
}

// carsChangedSince is CarsChangedSince's statement; on PostgreSQL it also
// returns the statement's snapshot (as text), for the read lease (probed).
func (db *DB) carsChangedSince(ctx context.Context, since yard.CarPosition) (bool, string, error) {
	cars, args := db.changedAfter("changed_version", since)
	garages, _ := db.changedAfter("changed_version", since)
	tombs, _ := db.changedAfter("version", since)
	// Each probe walks its stamp index from since on, as a scalar
	// subquery with ORDER BY and LIMIT: PostgreSQL's generic plan (of a
	// prepared statement) of an EXISTS expects a third of the table to
	// match and scans the table for a first row that is not there.
	// On SQLite a clock that has not moved says it first: one read.
	clock, snapshot := ``, `''`
	if db.engine == SQLite {
		clock = `WHEN (SELECT tx FROM event_clock WHERE id = 1) < $1 THEN 0 `
	} else {
		snapshot = `pg_current_snapshot()::text`
	}
	var n int
	var snap string
	err := db.QueryRow(ctx, `SELECT CASE `+clock+`WHEN (SELECT changed_version FROM cars WHERE `+cars+` ORDER BY changed_version LIMIT 1) IS NOT NULL
		OR (SELECT changed_version FROM garages WHERE `+garages+` ORDER BY changed_version LIMIT 1) IS NOT NULL
		OR (SELECT version FROM car_tombstones WHERE `+tombs+` ORDER BY version LIMIT 1) IS NOT NULL THEN 1 ELSE 0 END, `+snapshot,
		args...).Scan(&n, &snap)
	return n == 1, snap, err
}

// ReadCarChanges reads, in one snapshot of the store, everything about
// cars and garages that changed after since: the garages and cars written
// (their current rows) and the ids deleted. From the zero position it reads
// every garage and every car (in id order) and no deletions: an index's
// first build. It calls h in this order: garages, deleted cars, cars,
// deleted garages, so a car's garage is known before the car and a garage
// is emptied before it goes. A deleted id whose row exists in the snapshot
// (created again) is a row, never a deletion. It returns the position of
// the snapshot; applying the calls to a projection at since gives a
// projection at that position. It costs a fixed number of statements,
// however many ids were deleted.
func (db *DB) ReadCarChanges(ctx context.Context, since yard.CarPosition, h yard.CarChangeHandler) (yard.CarPosition, error) {
	var opts *sql.TxOptions
	if db.engine == Postgres {
		// One snapshot for every statement below.
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	// On SQLite a (deferred) transaction on a reader connection reads one
	// snapshot of the WAL from its first statement on.
	tx, err := db.read.BeginTx(ctx, opts)
	if err != nil {
		return yard.CarPosition{}, err
	}
	defer tx.Rollback()
	var at yard.CarPosition
	if db.engine == Postgres {
		// The first statement: it takes the snapshot the others read.
		err = tx.QueryRowContext(ctx, `SELECT pg_snapshot_xmin(s)::text::bigint, s::text FROM pg_current_snapshot() s`).
			Scan(&at.Horizon, &at.Snapshot)
	} else {
		err = tx.QueryRowContext(ctx, `SELECT tx + 1 FROM event_clock WHERE id = 1`).Scan(&at.Horizon)
	}
	if err != nil {
		return yard.CarPosition{}, err
	}
	full := since.IsZero()
	var cond, tcond string
	var args []any
	// rowsOf reads the rows of table (kind in car_tombstones) changed
	// after since, and those whose id was deleted after since and exists
	// again (created anew by a transaction that began before the
	// deletion's): those are rows, not deletions. Each half of the UNION
	// walks its own index.
	rowsOf := func(cols, table, kind string) string {
		return `SELECT ` + cols + ` FROM ` + table + cond + ` UNION SELECT ` + cols + ` FROM ` + table +
			` WHERE id IN (SELECT id FROM car_tombstones WHERE kind = '` + kind + `' AND ` + tcond + `)`
	}
	if !full {
		cond, args = db.changedAfter("changed_version", since)
		cond = ` WHERE ` + cond
		tcond, _ = db.changedAfter("version", since)
	}

	garages := map[string]bool{}
	q := `SELECT ` + garageRowColumns + ` FROM garages`
	if !full {
		q = rowsOf(garageRowColumns, "garages", "garage")
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return yard.CarPosition{}, err
	}
	for rows.Next() {
		g, err := scanGarageRow(rows)
		if err != nil {
			rows.Close()
			return yard.CarPosition{}, err
		}
		garages[g.ID] = true
		h.Garage(g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return yard.CarPosition{}, err
	}

	var deleted map[string][]string // kind → ids
	if !full {
		deleted = map[string][]string{}
		tcond, targs := db.changedAfter("version", since)
		rows, err := tx.QueryContext(ctx, `SELECT kind, id FROM car_tombstones WHERE `+tcond, targs...)
		if err != nil {
			return yard.CarPosition{}, err
		}
		for rows.Next() {
			var kind, id string
			if err := rows.Scan(&kind, &id); err != nil {
				rows.Close()
				return yard.CarPosition{}, err
			}
			deleted[kind] = append(deleted[kind], id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return yard.CarPosition{}, err
		}
	}
	var goneGarages []string
	for _, id := range deleted["garage"] {
		if !garages[id] {
			goneGarages = append(goneGarages, id)
		}
	}

	// Cars written after since; a tombstone of one of them is older than
	// its re-creation.
	var written map[string]bool
	if !full && len(deleted["car"]) > 0 {
		written = map[string]bool{}
	}
	q = `SELECT ` + carColumns + ` FROM cars ORDER BY id`
	if !full {
		q = rowsOf(carColumns, "cars", "car")
	}
	rows, err = tx.QueryContext(ctx, q, args...)
	if err != nil {
		return yard.CarPosition{}, err
	}
	var cars []*yard.Car
	for rows.Next() {
		c, err := scanCar(rows)
		if err != nil {
			rows.Close()
			return yard.CarPosition{}, err
		}
		if written != nil {
			written[c.ID] = true
			cars = append(cars, c) // after the deletions
			continue
		}
		h.Car(c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return yard.CarPosition{}, err
	}
	for _, id := range deleted["car"] {
		if !written[id] {
			h.CarDeleted(id)
		}
	}
	for _, c := range cars {
		h.Car(c)
	}
	for _, id := range goneGarages {
		h.GarageDeleted(id)
	}
	return at, tx.Commit()
}

// garageRowColumns are the columns scanGarageRow reads: a garage without
// its car count, which an index counts itself.
const garageRowColumns = `id, name, state, created_at, updated_at`

// scanGarageRow scans garageRowColumns (without the car count).
func scanGarageRow(row interface{ Scan(...any) error }) (*yard.Garage, error) {
	var g yard.Garage
	var created, updated int64
	if err := row.Scan(&g.ID, &g.Name, &g.State, &created, &updated); err != nil {
		return nil, err
	}
	g.CreatedAt, g.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &g, nil
}

// quietProbe answers CarsChangedSince on SQLite without a query while the
// store is quiet. SQLite's WAL index (the -shm file, "WAL-Index Format" in
// SQLite's file format document) begins with a header that every commit,
// of any connection of any process, rewrites before the commit returns:
// the last frame of the WAL, its checksum and the WAL's salt; two copies,
// written one after the other. The probe keeps the header read before a
// statement that found nothing changed after a position; while both copies
// still read the same, nothing has committed since, so nothing changed
// after that position or any later one. The header is read from a
// read-only mapping of the file, 96 bytes compared: no system call, no
// lock. A connection of the probe's own stays open while the file is
// mapped, which keeps SQLite from truncating or deleting it. Where the
// file cannot be mapped, every probe runs the statement.
type quietProbe struct {
	mu     sync.Mutex
	conn   *sql.Conn
	shm    []byte
	unmap  func()
	failed bool
	header [walIndexHeader]byte
	at     int64 // the position's horizon; 0: no quiet header
	ran    int   // statements run, for the tests
}

// walIndexHeader is the size of the WAL index's two header copies.
const walIndexHeader = 96

func (q *quietProbe) changedSince(ctx context.Context, db *DB, since yard.CarPosition) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shm == nil && !q.open(ctx, db) {
		changed, _, err := db.carsChangedSince(ctx, since)
		return changed, err
	}
	now, quiet := q.quietLocked(since)
	if quiet {
		return false, nil
	}
	q.ran++
	changed, _, err := db.carsChangedSince(ctx, since)
	if err == nil && !changed {
		q.header, q.at = now, since.Horizon
	}
	return changed, err
}

// CarsQuietSince reports, without a query, that nothing changed after
// since: on SQLite, when the WAL index's header still reads as it did
// before a probe that found nothing after since or an earlier position;
// on PostgreSQL, while this process holds a read lease and knows of no car
// write since such a probe that it has not seen (carlease.go).
// False says nothing; CarsChangedSince answers then.
func (db *DB) CarsQuietSince(since yard.CarPosition) bool {
	if since.IsZero() {
		return false
	}
	if db.engine == Postgres {
		return db.leases.quiet(since)
	}
	q := &db.quiet
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shm == nil {
		return false
	}
	_, quiet := q.quietLocked(since)
	return quiet
}

// quietLocked reads the header now (the mapping is there; q.mu is held)
// and reports whether it still says nothing changed after since.
func (q *quietProbe) quietLocked(since yard.CarPosition) (now [walIndexHeader]byte, quiet bool) {
	copy(now[:], q.shm)
	return now, q.at != 0 && since.Horizon >= q.at && now == q.header
}

// open takes the probe's connection, reads through it once (which opens
// the WAL index) and maps the index; it reports whether the mapping is
// there. A failure is not tried again.
func (q *quietProbe) open(ctx context.Context, db *DB) bool {
	if q.failed {
		return false
	}
	conn, err := db.read.Conn(ctx)
	if err != nil {
		return false // the pool is closed or ctx ended: try again later
	}
	var mode string
	var n int
	err = conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
	if err == nil {
		err = conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n)
	}
	if err != nil || mode != "wal" {
		conn.Close()
		q.failed = err == nil
		return false
	}
	shm, unmap, err := mapSharedIndex(db.dsn)
	if err != nil {
		conn.Close()
		q.failed = true
		return false
	}
	q.conn, q.shm, q.unmap, q.at = conn, shm, unmap, 0
	return true
}

// close unmaps the index and returns the connection.
func (q *quietProbe) close() {
	if q.shm != nil {
		q.unmap()
		q.conn.Close()
		q.conn, q.shm, q.unmap, q.at = nil, nil, nil, 0
	}
	q.failed = true // a closed store probes no more
}
