package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/batch"
	"github.com/yard-api/yard/internal/outage"
)

// Read leases of the car search index on PostgreSQL (docs/cars.md, "Read
// leases"). Without one, every car read asks the store whether cars
// changed since the index's position (CarsChangedSince): a round trip per
// few requests. A process that holds a lease answers without asking while
// it knows of no car write it has not seen:
//
//   - A process holding a lease has a row in car_readers (its name, when the
//     lease ends by the store's clock, and the snapshot it began at), LISTENs
//     on yard_cars and renews the row every third of the term from the
//     same connection, so a process that cannot hear notifications stops
//     renewing.
//   - A transaction that wrote cars or garages, before its commit, reads the
//     live leases; when another process holds one, the transaction's id is
//     sent on yard_cars, from another connection, and that notification has
//     committed before the write commits (carannounce.go). A write whose
//     announcement fails is rolled back.
//   - A holder counts what it hears (gen) and keeps the transaction ids it
//     heard of as pending until a probe's snapshot shows them finished;
//     it answers a read without asking only when gen has not moved since a
//     probe that found nothing and nothing is pending. So a committed
//     write is never missed by a holder whose listening connection lives,
//     whatever becomes of the writer after its commit.
//   - After the commit, the writer waits until every holder it announced
//     the write to has acknowledged it (on yard_car_acks: the holder counted
//     it first), or its lease has ended or begun again; so a read that
//     starts after the write was answered asks the store. When that cannot
//     be known, the write is answered EUNAVAILABLE: it may have been applied.
//   - A lease that begins takes as pending every transaction running just
//     after its row committed: those may have read the leases before the row
//     was there.
//   - A holder stops answering without asking, at once, when its listening
//     connection fails, and by its own clock before the store's lease ends.
//
// On SQLite there is one process, and the WAL index's header does the same
// without a lease (quietProbe).

const (
	carsChannel    = "yard_cars"
	carAcksChannel = "yard_car_acks"
	// DefaultCarLease is serve's --car-read-lease, MaxCarLease its
	// largest value.
	DefaultCarLease = 3 * time.Second
	MaxCarLease     = 10 * time.Second
	// carAckGather is how long the listener waits for more notifications
	// before it acknowledges those it has (one NOTIFY for all of them).
	carAckGather = 20 * time.Microsecond
	// notifyPayloadMax keeps a NOTIFY payload under PostgreSQL's 8,000
	// bytes.
	notifyPayloadMax = 7000
	// pendingMax bounds the transactions a holder keeps as pending while
	// no read probes: past it the lease begins again (renew), which
	// takes as pending only what still runs.
	pendingMax = 4096
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
	down   outage.Tracker // the listener's failures, logged once per outage

	mu        sync.Mutex
	listening chan struct{} // closed while the listener listens; replaced when it stops
	stops     uint64        // times the listener stopped: acknowledgements since lost
	term      time.Duration // > 0: this process holds a lease of this length
	fresh     bool          // the next renewal begins the lease again
	view      leaseView
	waits     map[int64]*carAckWait
	// announcer shares the NOTIFY of car transactions among concurrent
	// writers (internal/batch): one for all that queued meanwhile.
	announcer batch.Queue[int64, struct{}]
	quietHits atomic.Int64 // reads answered without asking (CarReadsWithoutProbe)
	pid       uint32       // the listening connection's backend, for the tests
}

// leaseView is what a holder knows of the car writes (carLeases.mu).
type leaseView struct {
	gen      uint64             // car writes heard of or found, own commits and lease starts
	until    time.Time          // the lease ends, by this process's clock; zero: no lease
	quietGen uint64             // gen when the last probe that found nothing began
	quietAt  yard.CarPosition   // that probe's position; zero: none
	pending  map[int64]struct{} // transactions not yet seen finished by a probe
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
		l.view.pending = map[int64]struct{}{}
		l.announcer.Run = func(xids []int64, res []batch.Result[struct{}]) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := l.announce(ctx, db, xids)
			for i := range res {
				res[i].Err = err
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
	l.term, l.view.until = 0, time.Time{}
	clear(l.view.pending)
	l.mu.Unlock()
	// Writers stop waiting for this process.
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = db.write.ExecContext(c, `DELETE FROM car_readers WHERE id = $1`, l.name)
}

// close stops the listener (Close).
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
		l.view.until = time.Time{}
		l.listening = make(chan struct{})
		l.stops++
		for _, w := range l.waits {
			wake(w.woken) // their acknowledgements may be lost
		}
		l.mu.Unlock()
		if l.ctx.Err() != nil {
			return
		}
		// Until it listens again, car reads ask the store.
		l.down.LoopError(l.log(), "car read lease", err, Unavailable(err) != nil)
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

// listen holds one connection of its own, outside the store's pools (which
// writers waiting to announce may have taken whole): LISTEN on both
// channels, the lease's renewals, the acknowledgements.
func (l *carLeases) listen(db *DB) error {
	pc, err := pgx.Connect(l.ctx, withConnectTimeout(db.dsn))
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = pc.Close(c)
	}()
	if _, err := pc.Exec(l.ctx, `LISTEN `+carsChannel+`; LISTEN `+carAcksChannel); err != nil {
		return err
	}
	l.down.LoopError(l.log(), "car read lease", nil, true)
	var renewAt time.Time
	l.mu.Lock()
	l.pid = pc.PgConn().PID()
	l.fresh = true // a lease taken on this connection begins anew
	close(l.listening)
	l.mu.Unlock()
	for {
		l.mu.Lock()
		term, fresh := l.term, l.fresh
		l.mu.Unlock()
		if term > 0 && (fresh || !time.Now().Before(renewAt)) {
			if err := l.renew(pc, term, fresh); err != nil {
				return err
			}
			renewAt = time.Now().Add(term / 3)
		} else if term == 0 {
			l.mu.Lock()
			l.fresh = true
			l.mu.Unlock()
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

// renew takes (fresh) or extends the lease. Its end by this process's
// clock is counted from before the statement, and a sixth of the term
// earlier than the store's, so it never outlives the row writers read. A
// lease whose row has ended by the store's clock begins again: writers
// that read the leases meanwhile did not announce their writes to it.
func (l *carLeases) renew(pc *pgx.Conn, term time.Duration, fresh bool) error {
	start := time.Now()
	ms := term.Milliseconds()
	if !fresh {
		tag, err := pc.Exec(l.ctx, `UPDATE car_readers SET expires_ms = `+nowMillisPG+` + $2
			WHERE id = $1 AND expires_ms > `+nowMillisPG, l.name, ms)
		if err != nil {
			return err
		}
		fresh = tag.RowsAffected() == 0
	}
	var running []int64
	if fresh {
		if _, err := pc.Exec(l.ctx, `INSERT INTO car_readers (id, expires_ms, started)
			VALUES ($1, `+nowMillisPG+` + $2, pg_current_snapshot()::text)
			ON CONFLICT (id) DO UPDATE SET expires_ms = excluded.expires_ms, started = excluded.started`, l.name, ms); err != nil {
			return err
		}
		// The transactions running now, after the row committed: a car
		// write among them may have read the leases before the row was
		// there, so it was not announced here. Each is pending until a
		// probe sees it finished.
		var snap string
		if err := pc.QueryRow(l.ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
			return err
		}
		s, ok := parseSnapshot(snap)
		if !ok {
			return errBadSnapshot(snap)
		}
		running = s.xip
		// Rows of processes gone for a minute.
		_, _ = pc.Exec(l.ctx, `DELETE FROM car_readers WHERE expires_ms < `+nowMillisPG+` - 60000`)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == 0 {
		// HoldCarLease ended during the statement, and its DELETE may
		// have come first: the row goes again.
		l.view.until = time.Time{}
		_, err := pc.Exec(l.ctx, `DELETE FROM car_readers WHERE id = $1`, l.name)
		return err
	}
	if fresh {
		l.fresh = false
		l.view.gen++
		clear(l.view.pending) // what was pending and still runs is in running
		for _, x := range running {
			l.view.pending[x] = struct{}{}
		}
	}
	l.view.until = start.Add(term - term/6)
	return nil
}

// heard takes a batch of notifications: writes (count them and keep them
// pending, then acknowledge them, in that order) and acknowledgements
// (wake their writers).
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
			l.view.gen++
			if holder {
				for _, s := range f[1:] {
					if xid, err := strconv.ParseInt(s, 10, 64); err == nil {
						l.pendLocked(xid)
					}
				}
				if f[0] != l.name {
					ack = append(ack, f[1:]...)
				}
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

// pendLocked keeps transaction xid pending (l.mu held). Past pendingMax
// the lease ends here and begins again at the next renewal.
func (l *carLeases) pendLocked(xid int64) {
	if l.fresh {
		return // the lease begins again: what runs then is pending
	}
	if len(l.view.pending) >= pendingMax {
		l.fresh, l.view.until = true, time.Time{}
		clear(l.view.pending)
		return
	}
	l.view.pending[xid] = struct{}{}
}

// bump makes this process's next read ask the store.
func (l *carLeases) bump() {
	l.mu.Lock()
	l.view.gen++
	l.mu.Unlock()
}

// probeBegins returns what a probe of CarsChangedSince notes before its
// statement; probed takes what the statement found.
func (l *carLeases) probeBegins() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.view.gen
}

// probed records a probe at since, begun at gen, whose snapshot (as text)
// was snap: the pending transactions finished in it are no longer pending
// (the probe saw what they wrote), and when it found nothing changed a read
// at since may go without asking until gen moves. A probe that found a
// change moves gen itself: an earlier probe at the same position that
// found nothing (its snapshot older) must not let reads there go without
// asking once the change is no longer pending, however the two finish.
func (l *carLeases) probed(gen uint64, since yard.CarPosition, changed bool, snap string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.view.pending) > 0 {
		if s, ok := parseSnapshot(snap); ok {
			for x := range l.view.pending {
				if s.finished(x) {
					delete(l.view.pending, x)
				}
			}
		}
	}
	if changed {
		l.view.gen++
	} else {
		l.view.quietGen, l.view.quietAt = gen, since
	}
}

// quiet reports whether a read at since may go without asking the store:
// the lease is live, nothing is pending, and no car write was heard of
// since a probe that found nothing after since. (The position must be the
// probe's own: on PostgreSQL two positions with the same horizon can be
// different snapshots. An index holds the position it probed at until a
// probe finds a change, so nothing is lost by asking for the same one.)
func (l *carLeases) quiet(since yard.CarPosition) bool {
	l.mu.Lock()
	v := &l.view
	ok := !v.until.IsZero() && time.Now().Before(v.until) && !v.quietAt.IsZero() &&
		since == v.quietAt && v.gen == v.quietGen && len(v.pending) == 0
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

// pgSnapshot is a pg_snapshot: every transaction below xmin had finished
// when it was taken, every one from xmax on had not, and between them
// those in xip had not.
type pgSnapshot struct {
	xmin, xmax int64
	xip        []int64
}

// parseSnapshot reads a pg_snapshot's text, xmin:xmax:xip,...
func parseSnapshot(s string) (pgSnapshot, bool) {
	xmin, rest, ok1 := strings.Cut(s, ":")
	xmax, xip, ok2 := strings.Cut(rest, ":")
	var snap pgSnapshot
	var err1, err2 error
	snap.xmin, err1 = strconv.ParseInt(xmin, 10, 64)
	snap.xmax, err2 = strconv.ParseInt(xmax, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return pgSnapshot{}, false
	}
	for f := range strings.SplitSeq(xip, ",") {
		if f == "" {
			continue
		}
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return pgSnapshot{}, false
		}
		snap.xip = append(snap.xip, x)
	}
	return snap, true
}

// finished reports whether transaction xid had finished (committed or
// rolled back) when the snapshot was taken.
func (s pgSnapshot) finished(xid int64) bool {
	if xid < s.xmin {
		return true
	}
	if xid >= s.xmax {
		return false
	}
	for _, x := range s.xip {
		if x == xid {
			return false
		}
	}
	return true
}

// errBadSnapshot is a pg_snapshot whose text this code cannot read.
func errBadSnapshot(s string) error {
	return yard.Errorf(yard.EINTERNAL, "car read lease: unreadable snapshot %q", s)
}
