package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/batch"
)

// WithImportChunks sets the rows of one statement of an import
// (ImportCarsWith): a multi-row INSERT on SQLite (64 by default), an
// INSERT … SELECT FROM unnest(…) on PostgreSQL (10,000 by default). 0
// keeps an engine's default.
func WithImportChunks(sqlite, postgres int) Option {
	return func(o *options) { o.tuning.importChunk, o.tuning.pgImportChunk = sqlite, postgres }
}

// WithEventWindow sets the span of transaction ids one statement of a
// read of several people's events covers on PostgreSQL (ReadEvents; 4096
// by default).
func WithEventWindow(n int64) Option {
	return func(o *options) { o.tuning.eventWindow = n }
}

// HasCarGarageIndex reports whether cars_garage_idx exists.
func (db *DB) HasCarGarageIndex(ctx context.Context) (bool, error) {
	q := `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'cars_garage_idx')`
	if db.engine == Postgres {
		q = `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'cars_garage_idx')`
	}
	return scanValue[bool](db.read.QueryRowContext(ctx, q))
}

// ReplayWriterSetting reads a setting on the connections that record
// signatures on PostgreSQL.
func (db *DB) ReplayWriterSetting(ctx context.Context, name string) (string, error) {
	return sessionSetting(ctx, db.replayWrite, name)
}

func sessionSetting(ctx context.Context, pool *sql.DB, name string) (string, error) {
	var v string
	err := pool.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// CreateCarInTx writes a new car in tx as CreateCar does in its own.
func CreateCarInTx(ctx context.Context, tx *Tx, c *yard.Car) error {
	v, err := carStamp(ctx, tx)
	if err != nil {
		return err
	}
	return writeCar(ctx, tx, c, v, true)
}

// RunBatch runs fns as one group-commit batch (runBatch), each in its own
// savepoint, and returns their errors.
func (db *DB) RunBatch(fns ...func(tx *Tx) error) []error {
	writes := make([]batchWrite, len(fns))
	for i, fn := range fns {
		writes[i] = batchWrite{ctx: context.Background(), fn: fn}
	}
	res := make([]batch.Result[struct{}], len(fns))
	db.runBatch(writes, res)
	errs := make([]error, len(res))
	for i, r := range res {
		errs[i] = r.Err
	}
	return errs
}

// QuietProbe reports whether SQLite's change probe reads the WAL index's
// header, and how many times it has run its statement.
func (db *DB) QuietProbe() (mapped bool, statements int) {
	db.quiet.mu.Lock()
	defer db.quiet.mu.Unlock()
	return db.quiet.shm != nil, db.quiet.ran
}

// EventReaderSetting reads a setting on the connections of the reads of
// several people's events on PostgreSQL.
func (db *DB) EventReaderSetting(ctx context.Context, name string) (string, error) {
	return sessionSetting(ctx, db.eventRead, name)
}

// DSN returns what Open took to open db, for another handle on its
// database.
func (db *DB) DSN() string {
	if db.engine == SQLite {
		return "sqlite:" + db.dsn
	}
	return db.dsn
}

// CarRowsForTest returns every garage and car row as text, times left out,
// in id order: what an import wrote.
func (db *DB) CarRowsForTest(ctx context.Context) ([]string, error) {
	var out []string
	for _, q := range []string{
		`SELECT 'garage', id, name, name_key, state, state_key, '', '', '', '', '', '', '' FROM garages ORDER BY id`,
		`SELECT 'car', id, color, color_key, type, type_key, CAST(doors AS TEXT), make, make_key, model, model_key,
		  CAST(year AS TEXT), COALESCE(garage_id, '-') || '/' || COALESCE(garage_state_key, '-') FROM cars ORDER BY id`,
	} {
		rows, err := db.read.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var f [13]string
			ptrs := make([]any, len(f))
			for i := range f {
				ptrs[i] = &f[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, fmt.Sprint(f))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeferCarIndexes is what an import into an empty cars table does first
// (carbulk.go): cars_garage_idx dropped.
func (db *DB) DeferCarIndexes(ctx context.Context) (bool, error) { return db.deferCarIndexes(ctx) }

// MaySkipTriggers reports whether the store's role may skip the foreign
// key's trigger during an import (PostgreSQL).
func (db *DB) MaySkipTriggers(ctx context.Context) bool { return db.maySkipTriggers(ctx) }

// ImportKnowingGarage imports in, its importer believing that garage id is
// stored with state: a garage deleted after the import read it.
func (db *DB) ImportKnowingGarage(ctx context.Context, id, state, in string) error {
	im := db.newImporter(ctx)
	im.states[id] = state
	b := newImportBatch()
	if err := im.parse(ctx, []byte(in), b); err != nil {
		return err
	}
	im.complete(b)
	return im.writeBatch(ctx, b)
}

// ForgetWriteStatements drops the prepared write statements, as a store
// that has written nothing yet is (prepareWrites).
func (db *DB) ForgetWriteStatements() {
	db.writeStmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		db.writeStmts.Delete(k)
		return true
	})
}

// BurnTransactionIDs commits n empty transactions that each take a
// transaction id (PostgreSQL), leaving a gap in the ids events get.
func (db *DB) BurnTransactionIDs(ctx context.Context, n int) error {
	for range n {
		if _, err := db.write.ExecContext(ctx, `SELECT pg_current_xact_id()`); err != nil {
			return err
		}
	}
	return nil
}

// ExplainPreviousBarks returns the engine's plan of the read of a dog's
// last scheduled barks, after giving the dog n barks of requests and
// refreshing the planner's statistics.
func (db *DB) ExplainPreviousBarks(ctx context.Context, dogID string, n int) (string, error) {
	if _, err := db.write.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2)
		INSERT INTO tasks (id, dog_id, effect, status, async, source, slot_at, created_at, run_at)
		SELECT 'request-' || i, $1, 'record', 'succeeded', FALSE, 'request', 0, i, i FROM n`, dogID, n); err != nil {
		return "", err
	}
	if _, err := db.write.ExecContext(ctx, `ANALYZE`); err != nil {
		return "", err
	}
	lines, err := db.explain(ctx, previousBarksSQL, dogID, 10)
	return strings.Join(lines, "\n"), err
}

// CarLease reports the read lease's state: whether it is live, reads
// answered without asking the store, and the backend of its listening
// connection.
func (db *DB) CarLease() (live bool, quietHits int, pid uint32) {
	l := &db.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.view.until.IsZero() && time.Now().Before(l.view.until), int(l.quietHits.Load()), l.pid
}

// Exec runs a statement on the store's write pool.
func (db *DB) Exec(ctx context.Context, q string, args ...any) error {
	_, err := db.write.ExecContext(ctx, q, args...)
	return err
}

// SnapshotFinished reports whether transaction xid had finished in the
// snapshot snap (as text); false for a snapshot it cannot read.
func SnapshotFinished(snap string, xid int64) bool {
	s, ok := parseSnapshot(snap)
	return ok && s.finished(xid)
}

// FinishWebhookDelivery records how a claimed attempt ended: it is
// FinishWebhookDeliveries of one, and a claim no longer held is
// yard.ErrLeaseLost.
func (db *DB) FinishWebhookDelivery(ctx context.Context, c *yard.WebhookClaim, out yard.DeliveryOutcome) (disabled bool, err error) {
	dis, lost, err := db.FinishWebhookDeliveries(ctx, []*yard.WebhookClaim{c}, []yard.DeliveryOutcome{out})
	switch {
	case err != nil:
		return false, err
	case lost[0]:
		return false, yard.ErrLeaseLost
	}
	return dis[0], nil
}

// purge forgets the signatures whose minute has passed.
func (l *replayLog) purge(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.purgeLocked(now)
}

// UseSignature records a signature and reports whether it was new.
func (db *DB) UseSignature(ctx context.Context, signature string, expires time.Time) (bool, error) {
	fresh, err := db.UseSignatures(ctx, []string{signature}, []time.Time{expires})
	return fresh[signature], err
}
