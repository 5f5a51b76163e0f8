package store

import (
	"context"
	"database/sql"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/yard-api/yard"
)

// A car write's part in the read leases on PostgreSQL (docs/cars.md, "Read
// leases"; the holders' part is carlease.go). Before its commit the write
// is announced to every other process that holds a lease, by a
// notification that has committed before the write does; after its commit
// it waits for their acknowledgements. A write that cannot be announced is
// rolled back; one whose acknowledgements cannot be had is answered
// EUNAVAILABLE, outcome unknown, never as done.

// carAckWaitMax bounds a writer's wait for the acknowledgements of one
// commit, for a holder that renews its lease but never answers.
const carAckWaitMax = 10 * time.Second

// carAckWait is a writer waiting for the acknowledgements of its commit.
type carAckWait struct {
	acked map[string]bool
	woken chan struct{}
}

// carCommit is a car write between its announcement and its answer.
type carCommit struct {
	db     *DB
	xid    int64
	leases []readLease // the other processes' leases it was announced to
	wait   *carAckWait
	stops  uint64 // the listener's stops when it was announced
}

// readLease is another process's live lease: its name, the time left by the
// store's clock, and the snapshot it began at (which tells a lease begun
// again from the one a write was announced to).
type readLease struct {
	id      string
	left    time.Duration
	started string
}

// announceCars announces tx, which wrote cars or garages and has not
// committed, to the other processes' leases. On an error the caller rolls
// tx back: the write is not applied.
func (db *DB) announceCars(ctx context.Context, tx *Tx) (*carCommit, error) {
	db.leases.init(db)
	// Read in tx: after it took its id (carStamp), so that a lease whose
	// row is not seen here takes tx as pending when it begins (renew).
	leases, err := db.leases.readLeases(ctx, tx)
	if err != nil {
		return nil, err
	}
	return db.announceLeases(ctx, tx.evTx, leases)
}

// announceLeases announces transaction xid, which has not committed, to the
// leases it read after it took its id.
func (db *DB) announceLeases(ctx context.Context, xid int64, leases []readLease) (*carCommit, error) {
	l := &db.leases
	c := &carCommit{db: db, xid: xid, leases: leases}
	l.mu.Lock()
	if l.term > 0 {
		l.pendLocked(xid) // this process's own reads, should the commit's answer be lost
	}
	listening := l.listening
	l.mu.Unlock()
	if len(leases) == 0 {
		return c, nil
	}
	// Acknowledgements are heard from before the announcement.
	t := time.NewTimer(time.Second)
	select {
	case <-listening:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	c.wait = &carAckWait{acked: map[string]bool{}, woken: make(chan struct{}, 1)}
	l.mu.Lock()
	heard := isClosed(l.listening)
	c.stops = l.stops
	l.waits[xid] = c.wait
	l.mu.Unlock()
	var err error
	if !heard {
		err = &yard.Error{Code: yard.EUNAVAILABLE, RetryAfter: UnavailableRetryAfter,
			Message: "The write was not applied: the other servers cannot be told of it now; try again shortly."}
	} else {
		_, err = l.announcer.Do(ctx, xid)
	}
	if err != nil {
		c.drop()
		return nil, err
	}
	return c, nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// drop forgets the wait.
func (c *carCommit) drop() {
	if c.wait == nil {
		return
	}
	l := &c.db.leases
	l.mu.Lock()
	delete(l.waits, c.xid)
	l.mu.Unlock()
}

// failed ends a write whose commit failed with err: committed or not,
// this process's reads ask the store from now on. A commit whose answer
// was lost may have been applied.
func (c *carCommit) failed(err error) error {
	defer c.drop()
	c.db.leases.bump()
	if Unavailable(err) != nil {
		return errCarWriteUnconfirmed()
	}
	return err
}

// errCarWriteUnconfirmed answers a car write that committed, or may have,
// when it is not known that every process will see it.
func errCarWriteUnconfirmed() error {
	return &yard.Error{Code: yard.EUNAVAILABLE, RetryAfter: UnavailableRetryAfter,
		Message: "The write may have been applied, but the store could not confirm that every server sees it; read it back, or send the request again."}
}

// confirm is the rest of a write after its commit: this process's reads
// ask the store from now on, and the write waits until every lease it was
// announced to has acknowledged it, ended, or begun again. When the
// listener stops meanwhile (acknowledgements may be lost), ctx ends, the
// leases cannot be read or carAckWaitMax passes, it returns
// errCarWriteUnconfirmed.
func (c *carCommit) confirm(ctx context.Context) error {
	defer c.drop()
	l := &c.db.leases
	l.bump()
	pending := slices.Clone(c.leases)
	deadline := time.Now().Add(carAckWaitMax)
	for {
		l.mu.Lock()
		pending = slices.DeleteFunc(pending, func(r readLease) bool { return c.wait.acked[r.id] })
		stopped := l.stops != c.stops
		l.mu.Unlock()
		if len(pending) == 0 {
			return nil
		}
		if stopped {
			return errCarWriteUnconfirmed()
		}
		if time.Now().After(deadline) {
			l.log().Warn("car read lease: a reader did not acknowledge a car write", slog.Int64("xid", c.xid))
			return errCarWriteUnconfirmed()
		}
		// Read the leases again when the first pending one ends, or
		// after 50 ms (a lease begun again after a failure).
		left := 50 * time.Millisecond
		for _, r := range pending {
			left = min(left, r.left)
		}
		t := time.NewTimer(max(left, time.Millisecond))
		select {
		case <-c.wait.woken:
			t.Stop()
			continue
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errCarWriteUnconfirmed()
		}
		live, err := l.readLeases(ctx, c.db.read)
		if err != nil {
			return errCarWriteUnconfirmed()
		}
		kept := pending[:0]
		for _, r := range pending {
			if i := slices.IndexFunc(live, func(s readLease) bool { return s.id == r.id && s.started == r.started }); i >= 0 {
				kept = append(kept, live[i])
			}
		}
		pending = kept
	}
}

// leasesSQL reads the other processes' live leases ($1: this process).
const leasesSQL = `SELECT id, expires_ms - ` + nowMillisPG + `, started FROM car_readers
	WHERE id <> $1 AND expires_ms > ` + nowMillisPG

// scanLeases reads the rows of leasesSQL (of database/sql or pgx).
func scanLeases(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) ([]readLease, error) {
	var out []readLease
	for rows.Next() {
		var r readLease
		var ms int64
		if err := rows.Scan(&r.id, &ms, &r.started); err != nil {
			return nil, err
		}
		r.left = time.Duration(ms) * time.Millisecond
		out = append(out, r)
	}
	return out, rows.Err()
}

// readLeases reads the other processes' live leases through q: the read
// pool, or a transaction.
func (l *carLeases) readLeases(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) ([]readLease, error) {
	rows, err := q.QueryContext(ctx, leasesSQL, l.name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanLeases(rows)
}

// announce sends xids on yard_cars.
func (l *carLeases) announce(ctx context.Context, db *DB, xids []int64) error {
	for len(xids) > 0 {
		payload := l.name
		for len(xids) > 0 && len(payload) < notifyPayloadMax {
			payload += " " + strconv.FormatInt(xids[0], 10)
			xids = xids[1:]
		}
		if err := notifyAsync(ctx, db, carsChannel, payload); err != nil {
			return err
		}
	}
	return nil
}

// notifyAsync sends a notification from a connection that commits without
// waiting for the WAL's flush (the replay writer's, Open). A
// NOTIFY gives its transaction an id, and PostgreSQL commits notifying
// transactions one at a time, each holding a lock through its flush: a car
// write that sent its own NOTIFY would commit one at a time too (a
// twentieth of the writes at 32 writers: docs/cars.md, "Read leases"). A
// notification lost to a crash of PostgreSQL loses nothing here: every
// listener's connection ends with it, and so every lease.
func notifyAsync(ctx context.Context, db *DB, channel, payload string) error {
	_, err := db.replayWrite.ExecContext(ctx, `SELECT pg_notify('`+channel+`', $1)`, payload)
	return err
}
