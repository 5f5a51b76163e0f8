package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/batch"
)

// Read leases of the car search index on PostgreSQL (docs/cars.md, "Read
// leases"). Without one, every car read asks the store whether cars
// changed since the index's position (CarsChangedSince): a round trip per
// few requests. A process that holds a lease answers without asking while
// no car write was heard of since its last probe that found nothing:
//
//   - A process holding a lease has a row in car_readers (its name, when the
//     lease ends by the store's clock, and the snapshot it began at), LISTENs
//     on yard_cars and renews the row every third of the term from the
//     same connection, so a process that cannot hear notifications stops
//     renewing.
//   - After a transaction that wrote cars or garages commits, before the
//     write is answered, the writer reads the live leases; when another
//     process's lease began before the commit, the commit's id is sent on
//     yard_cars and the writer waits until every such process has
//     acknowledged it (on yard_car_acks) or its lease has ended.
//   - A holder counts what it hears (gen) before it acknowledges, and answers
//     a read without asking only when gen has not moved since a probe that
//     found nothing: so a read that starts after a write was answered
//     either asks the store or follows a probe that saw the write.
//   - A holder stops answering without asking, at once, when its listening
//     connection fails, and by its own clock before the store's lease ends.
//
// On SQLite there is one process, and the WAL index's header does the same
// without a lease (quietProbe).

const (
	carsChannel    = "yard_cars"
	carAcksChannel = "yard_car_acks"
	// DefaultCarLease is serve's --car-read-lease, MaxCarLease its
	// largest value: a writer that cannot read the leases waits that long.
	DefaultCarLease = 3 * time.Second
	MaxCarLease     = 10 * time.Second
	// carAckWaitMax bounds a writer's wait for the acknowledgements of one
	// commit, for a holder that renews its lease but never answers.
	carAckWaitMax = 10 * time.Second
	// carAckGather is how long the listener waits for more notifications
	// before it acknowledges those it has (one NOTIFY for all of them).
	carAckGather = 20 * time.Microsecond
	// notifyPayloadMax keeps a NOTIFY payload under PostgreSQL's 8,000
	// bytes.
	notifyPayloadMax = 7000
)

// nowMillisPG is the store's clock in Unix milliseconds.
const nowMillisPG = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

type carLeases struct {
	name   string // this process in car_readers and in notifications
	once   sync.Once
	ctx    context.Context // the listener's life: the store's
	cancel context.CancelFunc
	done   chan struct{} // closed when the listener has stopped
	logger *slog.Logger

	mu        sync.Mutex
	listening chan struct{}    // closed while the listener listens; replaced when it stops
	term      time.Duration    // > 0: this process holds a lease of this length
	gen       uint64           // car writes heard of, own commits and lease starts
	until     time.Time        // the lease ends, by this process's clock; zero: no lease
	quietGen  uint64           // gen when the last probe that found nothing began
	quietAt   yard.CarPosition // that probe's position; zero: none
	waits     map[int64]*carAckWait
	// announcer shares the statements after car commits among
	// concurrent writers (internal/batch): one read of the live leases,
	// started after each of those commits, and one NOTIFY of the commits
	// when a lease needs to hear of them. An item is a commit's
	// transaction id, or 0 for a read of the leases alone.
	announcer batch.Queue[int64, []readLease]
	quietHits atomic.Int64 // reads answered without asking (CarReadsWithoutProbe)
	pid       uint32       // the listening connection's backend, for the tests
}

// carAckWait is a writer waiting for the acknowledgements of its commit.
type carAckWait struct {
	acked map[string]bool
	woken chan struct{}
}

func (l *carLeases) init(db *DB) {
	l.once.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:])
		l.name = hex.EncodeToString(b[:])
		l.mu.Lock()
		l.ctx, l.cancel = context.WithCancel(context.Background())
		l.done = make(chan struct{})
		l.listening = make(chan struct{})
		l.waits = map[int64]*carAckWait{}
		l.announcer.Run = func(xids []int64, res []batch.Result[[]readLease]) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			leases, err := l.announce(ctx, db, slices.DeleteFunc(slices.Clone(xids), func(x int64) bool { return x == 0 }))
			for i := range res {
				res[i] = batch.Result[[]readLease]{Val: leases, Err: err}
			}
		}
		l.mu.Unlock()
		go l.run(db)
	})
}

// HoldCarLease holds a read lease of term for this process's car search
// index until ctx ends (PostgreSQL; a no-op on SQLite or with term 0). A
// process that holds one answers car reads without asking the store while
// no car was written, and every other process's car writes wait for its
// acknowledgement (docs/cars.md, "Read leases").
func (db *DB) HoldCarLease(ctx context.Context, term time.Duration, logger *slog.Logger) {
	if db.engine != Postgres || term <= 0 {
		return
	}
	l := &db.leases
	l.mu.Lock()
	if logger != nil {
		l.logger = logger
	}
	l.term = term
	l.mu.Unlock()
	l.init(db)
	select {
	case <-ctx.Done():
	case <-l.done:
	}
	l.mu.Lock()
	l.term, l.until = 0, time.Time{}
	l.mu.Unlock()
	// Writers stop waiting for this process.
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = db.write.ExecContext(c, `DELETE FROM car_readers WHERE id = $1`, l.name)
}

// closeLeases stops the listener (Close).
func (l *carLeases) close() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// log is where the lease's warnings go (HoldCarLease's logger).
func (l *carLeases) log() *slog.Logger {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.logger
}

// run keeps the listener up until the store closes.
func (l *carLeases) run(db *DB) {
	defer close(l.done)
	for {
		err := l.listen(db)
		l.mu.Lock()
		l.until = time.Time{}
		l.listening = make(chan struct{})
		for _, w := range l.waits {
			wake(w.woken) // to read the leases again
		}
		l.mu.Unlock()
		if l.ctx.Err() != nil {
			return
		}
		l.log().Warn("car read lease: listening failed; car reads ask the store until it is back", slog.String("error", err.Error()))
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// listen holds one connection: LISTEN on both channels, the lease's
// renewals, the acknowledgements.
func (l *carLeases) listen(db *DB) error {
	conn, err := db.read.Conn(l.ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		if _, err := pc.Exec(l.ctx, `LISTEN `+carsChannel+`; LISTEN `+carAcksChannel); err != nil {
			return err
		}
		defer func() {
			c, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _ = pc.Exec(c, `UNLISTEN *`)
		}()
		var renewAt time.Time
		l.mu.Lock()
		l.pid = pc.PgConn().PID()
		close(l.listening)
		l.mu.Unlock()
		for {
			l.mu.Lock()
			term := l.term
			l.mu.Unlock()
			if term > 0 && !time.Now().Before(renewAt) {
				if err := l.renew(pc, term, renewAt.IsZero()); err != nil {
					return err
				}
				renewAt = time.Now().Add(term / 3)
			} else if term == 0 {
				renewAt = time.Time{}
			}
			wait := 250 * time.Millisecond // a lease taken meanwhile starts soon
			if term > 0 {
				wait = time.Until(renewAt)
			}
			n, err := l.notification(pc, wait)
			if err != nil {
				return err
			} else if n == nil {
				continue
			}
			batch := []*pgconn.Notification{n}
			for len(batch) < 512 {
				n, err := l.notification(pc, carAckGather)
				if err != nil {
					return err
				} else if n == nil {
					break
				}
				batch = append(batch, n)
			}
			if err := l.heard(db, batch); err != nil {
				return err
			}
		}
	})
}

// notification waits up to d for a notification on pc: nil, nil when none
// came (the connection stays usable).
func (l *carLeases) notification(pc *pgx.Conn, d time.Duration) (*pgconn.Notification, error) {
	ctx, cancel := context.WithTimeout(l.ctx, d)
	defer cancel()
	n, err := pc.WaitForNotification(ctx)
	if err != nil && l.ctx.Err() == nil && pgconn.Timeout(err) {
		return nil, nil
	}
	return n, err
}

// renew takes (first) or extends the lease. Its end by this process's
// clock is counted from before the statement, and a sixth of the term
// earlier than the store's, so it never outlives the row writers read.
func (l *carLeases) renew(pc *pgx.Conn, term time.Duration, first bool) error {
	start := time.Now()
	ms := term.Milliseconds()
	if first {
		// The row says which commits came before the lease: a writer
		// does not wait for a lease that began after its commit, whose
		// first read asks the store (gen moves below).
		if _, err := pc.Exec(l.ctx, `INSERT INTO car_readers (id, expires_ms, started)
			VALUES ($1, `+nowMillisPG+` + $2, pg_current_snapshot()::text)
			ON CONFLICT (id) DO UPDATE SET expires_ms = excluded.expires_ms, started = excluded.started`, l.name, ms); err != nil {
			return err
		}
		// Rows of processes gone for a minute.
		_, _ = pc.Exec(l.ctx, `DELETE FROM car_readers WHERE expires_ms < `+nowMillisPG+` - 60000`)
	} else {
		tag, err := pc.Exec(l.ctx, `UPDATE car_readers SET expires_ms = `+nowMillisPG+` + $2 WHERE id = $1`, l.name, ms)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errors.New("the lease's row is gone")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == 0 {
		// HoldCarLease ended during the statement, and its DELETE may
		// have come first: the row goes again.
		l.until = time.Time{}
		_, err := pc.Exec(l.ctx, `DELETE FROM car_readers WHERE id = $1`, l.name)
		return err
	}
	if first {
		l.gen++
	}
	l.until = start.Add(term - term/6)
	return nil
}

// heard takes a batch of notifications: writes (count them, then
// acknowledge them, in that order) and acknowledgements (wake their
// writers).
func (l *carLeases) heard(db *DB, batch []*pgconn.Notification) error {
	var ack []string
	l.mu.Lock()
	holder := l.term > 0
	for _, n := range batch {
		switch n.Channel {
		case carsChannel: // "writer xid xid ..."
			f := strings.Fields(n.Payload)
			if len(f) < 2 {
				continue
			}
			l.gen++
			if holder && f[0] != l.name {
				ack = append(ack, f[1:]...)
			}
		case carAcksChannel:
			f := strings.Fields(n.Payload)
			if len(f) < 2 {
				continue
			}
			for _, s := range f[1:] {
				xid, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					continue
				}
				if w := l.waits[xid]; w != nil {
					w.acked[f[0]] = true
					wake(w.woken)
				}
			}
		}
	}
	l.mu.Unlock()
	for len(ack) > 0 {
		payload := l.name
		for len(ack) > 0 && len(payload)+1+len(ack[0]) <= notifyPayloadMax {
			payload += " " + ack[0]
			ack = ack[1:]
		}
		if err := notifyAsync(l.ctx, db, carAcksChannel, payload); err != nil {
			return err
		}
	}
	return nil
}

// carWritten is the rest of a car write on PostgreSQL after its commit
// (docs/cars.md, "Read leases"): this process's reads ask the store from
// now on; the commit is announced on yard_cars, and the write waits until
// every other holder of a live lease that began before the commit has
// acknowledged it or lost its lease.
func (l *carLeases) carWritten(ctx context.Context, db *DB, xid int64) {
	l.init(db)
	w := &carAckWait{acked: map[string]bool{}, woken: make(chan struct{}, 1)}
	l.mu.Lock()
	l.gen++
	listening := l.listening
	l.waits[xid] = w
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waits, xid)
		l.mu.Unlock()
	}()
	// Acknowledgements are heard from before the announcement.
	t := time.NewTimer(time.Second)
	select {
	case <-listening:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	start := time.Now()
	deadline := start.Add(carAckWaitMax)
	leases, err := l.announcer.Do(ctx, xid)
	for try := 1; err != nil && try < 3 && ctx.Err() == nil; try++ {
		sleepCtx(ctx, 100*time.Millisecond)
		leases, err = l.announcer.Do(ctx, xid)
	}
	for {
		if err != nil {
			// Unknown whether it was heard, or who holds a lease: wait
			// until every lease that could be live has ended.
			sleepCtx(ctx, time.Until(start.Add(MaxCarLease)))
			return
		}
		// Read the leases again when the first pending one ends, or
		// after 50 ms (a lease taken again after a failure); an
		// acknowledgement only needs the list read already.
		for {
			left, pending := 50*time.Millisecond, false
			l.mu.Lock()
			for _, r := range leases {
				if !w.acked[r.id] && !r.startedAfter(xid) {
					left, pending = min(left, r.left), true
				}
			}
			l.mu.Unlock()
			if !pending {
				return
			}
			if time.Now().After(deadline) {
				l.log().Warn("car read lease: a reader did not acknowledge a car write", slog.Int64("xid", xid))
				return
			}
			t := time.NewTimer(max(left, time.Millisecond))
			select {
			case <-w.woken:
				t.Stop()
				continue
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			break
		}
		leases, err = l.announcer.Do(ctx, 0)
	}
}

// readLease is another process's live lease: its name, the time left by the
// store's clock, and the snapshot it began at.
type readLease struct {
	id      string
	left    time.Duration
	started string
}

// startedAfter reports whether transaction xid, committed, is visible in
// the snapshot the lease began at (pg_visible_in_snapshot, from the
// snapshot's text xmin:xmax:xip,...): the lease's first read then asks the
// store, which holds the commit.
func (r readLease) startedAfter(xid int64) bool {
	xmin, rest, ok1 := strings.Cut(r.started, ":")
	xmax, xip, ok2 := strings.Cut(rest, ":")
	lo, err1 := strconv.ParseInt(xmin, 10, 64)
	hi, err2 := strconv.ParseInt(xmax, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return false
	}
	if xid < lo {
		return true
	}
	if xid >= hi {
		return false
	}
	for _, s := range strings.Split(xip, ",") {
		if s == strconv.FormatInt(xid, 10) {
			return false
		}
	}
	return true
}

// announce reads the other processes' live leases and, when one of them
// began before any of xids committed, sends those on yard_cars. With no
// such lease nobody needs to hear of the commits: a lease that began after
// this read began after them, and its first read asks the store.
func (l *carLeases) announce(ctx context.Context, db *DB, xids []int64) ([]readLease, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, expires_ms - `+nowMillisPG+`, started FROM car_readers
		WHERE id <> $1 AND expires_ms > `+nowMillisPG, l.name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
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
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var heard []int64
	for _, xid := range xids {
		for _, r := range out {
			if !r.startedAfter(xid) {
				heard = append(heard, xid)
				break
			}
		}
	}
	for len(heard) > 0 {
		payload := l.name
		for len(heard) > 0 && len(payload) < notifyPayloadMax {
			payload += " " + strconv.FormatInt(heard[0], 10)
			heard = heard[1:]
		}
		if err := notifyAsync(ctx, db, carsChannel, payload); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// notifyAsync sends a notification from a connection that commits without
// waiting for the WAL's flush (the replay writer's, openReplayWriter). A
// NOTIFY gives its transaction an id, and PostgreSQL commits notifying
// transactions one at a time: each waiting for the flush, a write and its
// acknowledgement cost about 7 ms more at 32 writers. A notification lost
// to a crash of PostgreSQL loses nothing here: every listener's connection
// ends with it, and so every lease.
func notifyAsync(ctx context.Context, db *DB, channel, payload string) error {
	_, err := db.replayWrite.ExecContext(ctx, `SELECT pg_notify('`+channel+`', $1)`, payload)
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// bump makes this process's next read ask the store.
func (l *carLeases) bump() {
	l.mu.Lock()
	l.gen++
	l.mu.Unlock()
}

// probeBegins returns what a probe of CarsChangedSince notes before its
// statement; probeFoundNothing records that it found nothing after since.
func (l *carLeases) probeBegins() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

func (l *carLeases) probeFoundNothing(gen uint64, since yard.CarPosition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.quietGen, l.quietAt = gen, since
}

// quiet reports whether a read at since may go without asking the store:
// the lease is live, and no car write was heard of since a probe that
// found nothing after since. (The position must be the probe's own: on
// PostgreSQL two positions with the same horizon can be different
// snapshots. An index holds the position it probed at until a probe finds
// a change, so nothing is lost by asking for the same one.)
func (l *carLeases) quiet(since yard.CarPosition) bool {
	l.mu.Lock()
	ok := !l.until.IsZero() && time.Now().Before(l.until) && !l.quietAt.IsZero() &&
		since == l.quietAt && l.gen == l.quietGen
	l.mu.Unlock()
	if ok {
		l.quietHits.Add(1)
	}
	return ok
}

// CarReadsWithoutProbe returns how many car reads this process answered
// without asking the store, under its read lease (PostgreSQL; docs/cars.md,
// "Read leases").
func (db *DB) CarReadsWithoutProbe() int64 { return db.leases.quietHits.Load() }
