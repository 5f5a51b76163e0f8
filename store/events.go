package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// The event log (docs/events.md; migration 00100). Every write that a client
// can see appends its events in its own transaction, so an event exists if
// and only if its change committed. An event's id is (tx, seq):
//
//   - PostgreSQL: tx is the writing transaction's id. A reader sees only
//     events of transactions older than the oldest one still running
//     (pg_snapshot_xmin of the current snapshot): those have all ended, so
//     no event can later appear before one already read. Writers take no
//     common lock for it.
//   - SQLite: tx comes from event_clock, bumped by the first event of each
//     transaction; the one writer orders every transaction, so tx order is
//     commit order.
//
// A dog changes in many ways within one transaction (a bark's count, a
// schedule, a field): markDog collects them and the transaction appends one
// dog.updated, with the dog as it is at commit, just before committing.

// appendEvent appends an event to tx. data is marshalled as it is. An
// event without an owner ("": cars, garages) is for administrators only.
func appendEvent(ctx context.Context, tx *Tx, typ, subject, owner string, data any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("event data: %w", err)
	}
	return appendEventOwnedBy(ctx, tx, typ, subject, owner, "", body)
}

const (
	insertEventPG = `INSERT INTO events (tx, seq, type, subject, owner_id, at, data)
		VALUES (pg_current_xact_id()::text::bigint, $1, $2, $3, $4, $5, $6)`
	insertEventSQLite = `INSERT INTO events (tx, seq, type, subject, owner_id, at, data)
		VALUES ($7, $1, $2, $3, $4, $5, $6)`
	insertEventOfDogSQLite = `INSERT INTO events (tx, seq, type, subject, owner_id, at, data)
		SELECT $7, $1, $2, $3, owner_id, $5, $6 FROM dogs WHERE id = $4`
	bumpEventClockSQLite = `UPDATE event_clock SET tx = tx + 1 WHERE id = 1 RETURNING tx`
	currentTxPG          = `SELECT pg_current_xact_id()::text::bigint`
	// horizonPG is where a PostgreSQL reader stops: every transaction
	// older has ended, so nothing can commit behind what it read.
	horizonPG = `pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
)

// insertEventOfDogPG appends an event owned by the owner of dog $4.
var insertEventOfDogPG = eventOfDogPG("$1", "$2", "$3", "$4", "$5", "$6")

// eventOfDogPG is the SQL that appends an event owned by a dog's owner on
// PostgreSQL, stamped with the writing transaction's id, from the SQL
// expressions (placeholders) of its fields.
func eventOfDogPG(seq, typ, subject, dog, at, data string) string {
	return `INSERT INTO events (tx, seq, type, subject, owner_id, at, data)
		SELECT pg_current_xact_id()::text::bigint, ` + seq + `, ` + typ + `, ` + subject + `, owner_id, ` + at + `, ` + data +
		` FROM dogs WHERE id = ` + dog
}

// eventWrites are the statements every write transaction may run on
// SQLite; WithTx prepares them (once) before it begins.
var eventWrites = []string{insertEventSQLite, insertEventOfDogSQLite, bumpEventClockSQLite, dogWithScheduleSQL, previousBarksSQL}

// appendEventOwnedBy appends an event whose owner is owner, or, when
// ofDog is set, the owner of that dog (read in the same statement).
func appendEventOwnedBy(ctx context.Context, tx *Tx, typ, subject, owner, ofDog string, data []byte) error {
	tx.evSeq++
	args := []any{tx.evSeq, typ, subject, owner, Millis(tx.Now()), string(data)}
	q, ofDogQ := insertEventPG, insertEventOfDogPG
	if tx.db.engine == SQLite {
		if _, err := changeStamp(ctx, tx); err != nil {
			return fmt.Errorf("event clock: %w", err)
		}
		q, ofDogQ, args = insertEventSQLite, insertEventOfDogSQLite, append(args, tx.evTx)
	}
	if ofDog != "" {
		q, args[3] = ofDogQ, ofDog
	}
	_, err := tx.exec(ctx, q, args...)
	return err
}

// markDog notes that the dog changed in tx: one dog.updated is appended at
// commit (flushDogs), unless the dog was created or deleted in tx.
func (tx *Tx) markDog(id string) {
	if !slices.Contains(tx.dirtyDogs, id) {
		tx.dirtyDogs = append(tx.dirtyDogs, id)
	}
}

// flushDogs appends dog.updated for each dog marked in tx, with the dog as
// it is now.
func (tx *Tx) flushDogs(ctx context.Context) error {
	for _, id := range tx.dirtyDogs {
		d, err := dogWithSchedule(ctx, tx, id)
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			continue // deleted in tx
		} else if err != nil {
			return err
		}
		if err := appendEvent(ctx, tx, yard.EventDogUpdated, yard.DogPath(d.ID), d.Owner, d); err != nil {
			return err
		}
	}
	tx.dirtyDogs = tx.dirtyDogs[:0]
	return nil
}

// How ReadEvents filters by owner: not at all, one person ($4), or a list
// ($4: an array on PostgreSQL, a JSON array on SQLite).
const (
	ownersAll = iota
	ownersOne
	ownersMany
	ownersManyScan   // SQLite: ownersMany through the log's order
	ownersManyHashed // PostgreSQL: ownersMany for a long list, hashed
)

// hashedOwners is the length of a list of people from which a read of
// their events on PostgreSQL finds each event's owner in a hash of the
// list (ownersManyHashed) rather than comparing it with each of the list
// in turn (= ANY), which cost 3.7 µs an event at 100 people against
// 0.6 µs at one, and grows with the list (docs/events.md, "Across
// processes").
const hashedOwners = 16

// ownersScanWindow is how many transactions behind the newest a read of
// several people's events may start on SQLite and still go through the
// log in order (ownersManyScan), checking each event's owner, rather than
// probe the owner index once per person and sort: a hub reads every few
// milliseconds, a few dozen events behind, for up to thousands of
// people. SQLite has no statistics to choose between the two plans (no
// ANALYZE), and chooses the index.
const ownersScanWindow = 256

// defaultEventWindowPG is the span of transaction ids one statement of a
// read of several people's events covers on PostgreSQL, unless a test's
// tuning says otherwise. Those reads (a hub's, a hundred a second) run on
// connections that keep one generic plan (Open), which goes
// through the log in order; the window bounds what one statement walks
// when the reader is far behind.
const defaultEventWindowPG = 4096

// eventsRead is the SQL of ReadEvents: visible events after ($1, $2), in
// order, at most $3, filtered by owner; then one more row, whose seq is 0:
// the horizon, the tx before which every event is visible, read in the
// same statement (so the same snapshot). A read that returns fewer than $3
// events has seen every event before the horizon, those of other owners
// included, and the next one can start there. A windowed read
// (ownersManyScan, and ownersMany on PostgreSQL) stops at tx $5 too: its
// horizon row holds the nearer of the two, and in at the visible horizon,
// so that the reader knows whether to go on.
func (db *DB) eventsRead(owners int, windowed bool) string {
	horizon, least := `(SELECT tx + 1 FROM event_clock WHERE id = 1)`, `min`
	if db.engine == Postgres {
		horizon, least = horizonPG, `LEAST`
	}
	visible := horizon
	if windowed {
		horizon = least + `(` + horizon + `, $5)`
	}
	q := `SELECT tx, seq, type, subject, owner_id, at, data FROM events WHERE (tx, seq) > ($1, $2) AND tx < ` + horizon
	switch {
	case owners == ownersOne:
		q += ` AND owner_id = $4`
	case owners == ownersMany && db.engine == Postgres:
		q += ` AND owner_id = ANY($4)`
	case owners == ownersManyHashed:
		// A hash semi-join: the reader's connections plan no nested
		// loop (Open), which would compare each event with
		// the whole list again.
		q += ` AND owner_id IN (SELECT unnest($4::text[]))`
	case owners == ownersMany:
		q += ` AND owner_id IN (SELECT value FROM json_each($4))`
	case owners == ownersManyScan:
		// The unary + keeps SQLite off the owner index.
		q += ` AND +owner_id IN (SELECT value FROM json_each($4))`
	}
	// The horizon row also carries the newest event the retention removed
	// (pruned_tx, pruned_seq), read in the same snapshot: a read from
	// before it has missed events (gone).
	return `SELECT e.*, 0, 0 FROM (` + q + ` ORDER BY tx, seq LIMIT CAST($3 AS BIGINT)) e` +
		` UNION ALL SELECT ` + horizon + `, 0, '', '', '', ` + visible + `, '', pruned_tx, pruned_seq FROM event_clock WHERE id = 1`
}

// maxEventScan bounds the rows one ReadEvents reads when f.Scan is 0.
const maxEventScan = 10000

// ReadEvents implements yard.EventReader. It reads in chunks until it has
// f.Limit events that f.Match keeps or has read f.Scan rows; Next is the last
// row read, so a caller that continues from it skips nothing.
func (db *DB) ReadEvents(ctx context.Context, f yard.EventFilter) (*yard.EventPage, error) {
	defer db.trace(&ctx, "store.ReadEvents").End()
	limit, scan := defaults.Positive(f.Limit, 100), defaults.Positive(f.Scan, maxEventScan)
	page := &yard.EventPage{Next: f.After, Events: []*yard.Event{}}
	chunk := max(limit, 100)
	if f.Match == nil {
		chunk = limit
	}
	chunk = min(chunk, scan)
	// How the read filters by owner, and, for a windowed read (eventsRead),
	// its window in transactions and where it runs.
	owners, window, query := ownersAll, int64(0), db.Query
	var ownerArg any
	switch {
	case f.Owner != nil:
		owners, ownerArg = ownersOne, *f.Owner
	case f.Owners != nil && db.engine == Postgres:
		owners, ownerArg = ownersMany, f.Owners
		if len(f.Owners) >= hashedOwners {
			owners = ownersManyHashed
		}
		window, query = db.tuning.eventWindow, db.eventRead.QueryContext
	case f.Owners != nil:
		list, err := json.Marshal(f.Owners)
		if err != nil {
			return nil, err
		}
		owners, ownerArg = ownersMany, string(list)
		if len(f.Owners) > 1 {
			var clock int64
			if err := db.QueryRow(ctx, `SELECT tx FROM event_clock WHERE id = 1`).Scan(&clock); err != nil {
				return nil, err
			}
			if clock-f.After.Tx < ownersScanWindow {
				owners, window = ownersManyScan, ownersScanWindow
			}
		}
	}
	q := db.eventsRead(owners, window > 0)
	read, windows := 0, 0
	for read < scan && len(page.Events) < limit {
		args := []any{page.Next.Tx, page.Next.Seq, min(chunk, scan-read)}
		if owners != ownersAll {
			args = append(args, ownerArg)
		}
		if window > 0 {
			args = append(args, page.Next.Tx+window)
		}
		rows, err := query(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		n, all := 0, true // all: every row was taken before the limit
		var horizon, visible int64
		var pruned yard.EventID
		for rows.Next() {
			var e yard.Event
			var at int64
			var data string
			var p yard.EventID
			if err := rows.Scan(&e.ID.Tx, &e.ID.Seq, &e.Type, &e.Subject, &e.Owner, &at, &data, &p.Tx, &p.Seq); err != nil {
				rows.Close()
				return nil, err
			}
			if e.ID.Seq == 0 {
				horizon, visible, pruned = e.ID.Tx, at, p
				continue
			}
			n++
			e.Time, e.Data = FromMillis(at), json.RawMessage(data)
			if len(page.Events) < limit {
				page.Next = e.ID
				if f.Match == nil || f.Match(&e) {
					page.Events = append(page.Events, &e)
				}
			} else {
				all = false
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if read == 0 && (!f.After.IsZero() || f.Resume) && f.After.Less(pruned) {
			return nil, db.gone(ctx, f.After)
		}
		read += n
		if n < args[2].(int) {
			// Caught up: every event before the horizon was read. The
			// next read starts there, past events the reader does not
			// see (another person's, a hub's people it did not ask for)
			// or that were pruned: a page's next is a place to resume
			// from while it is kept, not the id of an event the reader
			// saw, which may be gone by then.
			end := yard.EventID{Tx: horizon}
			if all && page.Next.Less(end) {
				page.Next = end
			}
			// A window that ended before the visible horizon: the next
			// one, up to maxEventWindows a call (the caller reads again).
			if windows++; window > 0 && all && page.Next == end && horizon < visible && windows < maxEventWindows {
				if n == 0 {
					// An empty window far behind (a reader that
					// started at the zero id on a database whose
					// transaction ids are in the millions): the next
					// one starts at the next event, not a window on.
					// Every event before visible is visible, so none
					// can appear in the gap later; without one in
					// [horizon, visible), the next window starts at
					// visible.
					next, err := scanValue[sql.NullInt64](db.QueryRow(ctx, `SELECT MIN(tx) FROM events WHERE tx >= $1 AND tx < $2`, horizon, visible))
					if err != nil {
						return nil, err
					}
					page.Next = yard.EventID{Tx: visible}
					if next.Valid {
						page.Next.Tx = next.Int64
					}
				}
				continue
			}
			break
		}
	}
	return page, nil
}

// maxEventWindows bounds the statements of one windowed read that finds
// nothing (eventsRead): a reader far behind catches up over several calls.
const maxEventWindows = 64

// gone is the answer to a read after id when the retention has removed
// events after it: EGONE, naming the oldest event kept.
func (db *DB) gone(ctx context.Context, id yard.EventID) error {
	e := yard.Errorf(yard.EGONE, "Events after %s are no longer kept (retention); the oldest one kept is in oldest.", id)
	oldest, err := scanEventID(db.QueryRow(ctx, `SELECT tx, seq FROM events ORDER BY tx, seq LIMIT 1`))
	switch {
	case err == nil:
		e.Oldest = oldest.String()
	case errors.Is(err, sql.ErrNoRows):
		e.Message = fmt.Sprintf("Events after %s are no longer kept (retention), and no event is kept now (oldest is null): start again from now, without after or Last-Event-ID.", id)
	default:
		return err
	}
	return e
}

// LastEventID returns the id of the newest event a reader can see now (the
// zero id when there is none): a stream that starts "from now" starts
// after it.
func (db *DB) LastEventID(ctx context.Context) (yard.EventID, error) {
	return lastEventID(ctx, db.engine, db)
}

// lastEventID is LastEventID read through q; inside a transaction, on
// PostgreSQL, every event after it becomes visible later, none before it.
func lastEventID(ctx context.Context, engine string, q reader) (yard.EventID, error) {
	query := `SELECT tx, seq FROM events ORDER BY tx DESC, seq DESC LIMIT 1`
	if engine == Postgres {
		query = `SELECT tx, seq FROM events WHERE tx < ` + horizonPG + ` ORDER BY tx DESC, seq DESC LIMIT 1`
	}
	id, err := scanEventID(q.QueryRow(ctx, query))
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return id, err
}

// PruneEvents removes events older than before, at most limit of them, and
// returns how many it removed. Readers resuming before the newest one
// removed get EGONE.
func (db *DB) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	err := db.WithTx(ctx, func(tx *Tx) error {
		// The oldest events first (their times grow with their ids, give
		// or take a transaction's length): stop at the first one kept.
		rows, err := tx.QueryContext(ctx, `DELETE FROM events WHERE (tx, seq) IN
			(SELECT tx, seq FROM events ORDER BY tx, seq LIMIT CAST($2 AS BIGINT)) AND at < $1 RETURNING tx, seq`, Millis(before), limit)
		ids, err := appendRows(nil, rows, err, scanEventID)
		n = len(ids)
		if err != nil || n == 0 {
			return err
		}
		var newest yard.EventID
		for _, id := range ids {
			if newest.Less(id) {
				newest = id
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE event_clock SET pruned_tx = $1, pruned_seq = $2
			WHERE id = 1 AND (pruned_tx < $1 OR (pruned_tx = $1 AND pruned_seq < $2))`, newest.Tx, newest.Seq)
		return err
	})
	return n, err
}

// scanEventID reads a row of an event's id (tx, seq).
func scanEventID(row rowScanner) (yard.EventID, error) {
	var id yard.EventID
	err := row.Scan(&id.Tx, &id.Seq)
	return id, err
}

// EventsWritten is signalled (without blocking, so signals coalesce) after
// each commit of this process that appended events.
func (db *DB) EventsWritten() <-chan struct{} { return db.eventWake }

// eventsChannel is the PostgreSQL notification channel that wakes every
// process's event readers (docs/events.md, "Across processes").
const eventsChannel = "yard_events"

// NotifyEvents tells every process sharing a PostgreSQL store that events
// were written (a no-op on SQLite, which has one process). A lost
// notification only delays readers until their next poll.
func (db *DB) NotifyEvents(ctx context.Context) error {
	if db.engine != Postgres {
		return nil
	}
	_, err := db.write.ExecContext(ctx, `SELECT pg_notify('`+eventsChannel+`', '')`)
	return err
}

// ListenEvents calls wake for each notification of NotifyEvents (on any
// process) until ctx ends or the connection fails; it returns at once on
// SQLite. It holds one connection of the store while it runs.
func (db *DB) ListenEvents(ctx context.Context, wake func()) error {
	if db.engine != Postgres {
		return nil
	}
	conn, err := db.read.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		if _, err := pc.Exec(ctx, `LISTEN `+eventsChannel); err != nil {
			return err
		}
		defer func() {
			// Leave the connection clean for the pool (or let it break).
			c, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _ = pc.Exec(c, `UNLISTEN `+eventsChannel)
		}()
		wake() // anything written while not listening
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				return err
			}
			wake()
		}
	})
}

// barkEvents appends one bark event per type, each with b as its data;
// the owner is the dog's.
func barkEvents(ctx context.Context, tx *Tx, b *yard.Bark, types ...string) error {
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	for _, typ := range types {
		if err := appendEventOwnedBy(ctx, tx, typ, yard.BarkPath(b.DogID, b.ID), "", b.DogID, body); err != nil {
			return err
		}
	}
	return nil
}

// importEvent appends the car.imported event of one import batch: its
// counts and the range of its car ids (administrators only).
func importEvent(ctx context.Context, tx *Tx, b *importBatch) error {
	d := yard.EventImport{Count: len(b.cars), Garages: len(b.garages)}
	for _, c := range b.cars {
		if d.First == "" || c.ID < d.First {
			d.First = c.ID
		}
		d.Last = max(d.Last, c.ID)
	}
	return appendEvent(ctx, tx, yard.EventCarImported, "/cars", "", d)
}
