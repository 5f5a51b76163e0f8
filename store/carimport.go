package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// ImportStats counts what an import wrote: the garage and car lines
// imported and the input lines read up to the last batch written.
type ImportStats struct {
	Garages int
	Cars    int
	Lines   int
}

// DefaultImportBatch is the number of lines written per transaction.
const DefaultImportBatch = 50000

// ImportOptions tunes ImportCarsWith.
type ImportOptions struct {
	// Batch is the number of lines per transaction (DefaultImportBatch
	// when 0 or less).
	Batch int
	// Progress, when set, is called after each batch is committed with
	// the totals so far.
	Progress func(ImportStats)
	// KeepIndexes keeps every index of cars up to date during the load,
	// even when the import starts on an empty cars table (where it would
	// otherwise build cars_garage_idx once, after the load: carbulk.go).
	KeepIndexes bool
}

// ImportError is an input line that cannot be imported, or a batch of
// lines the database refused. Line is the line's number (1-based);
// LastLine, when set, is the last line of a refused batch. Msg says what
// is wrong in words.
type ImportError struct {
	Line, LastLine int
	Msg            string
	Err            error
}

// Error returns "line N: message" (or "lines N-M: message").
func (e *ImportError) Error() string {
	if e.LastLine > e.Line {
		return fmt.Sprintf("lines %d-%d: %s", e.Line, e.LastLine, e.Msg)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// Unwrap returns the underlying error, if any.
func (e *ImportError) Unwrap() error { return e.Err }

// ImportCars is ImportCarsWith with a batch size and no progress report.
func (db *DB) ImportCars(ctx context.Context, r io.Reader, batch int) (ImportStats, error) {
	return db.ImportCarsWith(ctx, r, ImportOptions{Batch: batch})
}

// ImportCarsWith bulk-loads NDJSON lines {"kind":"garage"|"car", ...fields}
// (fields as in the API) in one transaction per batch of lines.
//
// A line whose id exists replaces that garage or car, and a line whose id
// repeats an earlier line's replaces it (the last one wins), so an import
// can be run again. A line without id gets one derived from its fields and
// from how many identical id-less lines came before it in the input
// (newImportID): running the same file again replaces those garages and
// cars instead of adding copies, while two identical lines stay two cars.
//
// A car's garage must be defined on an earlier line or already stored.
// Errors are *ImportError naming the line; the batches before it stay
// written (the stats count them).
//
// An import that starts on an empty cars table builds cars_garage_idx
// after the load rather than row by row, unless opt.KeepIndexes; the cars
// skip the foreign key's check (on SQLite always, on PostgreSQL when the
// store's role may set session_replication_role) and each batch checks
// its garages in one statement instead (carbulk.go).
func (db *DB) ImportCarsWith(ctx context.Context, r io.Reader, opt ImportOptions) (st ImportStats, err error) {
	batch := defaults.Positive(opt.Batch, DefaultImportBatch)
	im := db.newImporter(ctx)
	var deferred bool // cars_garage_idx left out until the end
	if !opt.KeepIndexes {
		if deferred, err = db.deferCarIndexes(ctx); err != nil {
			return st, err
		}
		defer func() {
			if deferred {
				if ierr := db.ensureCarIndexes(context.WithoutCancel(ctx)); ierr != nil && err == nil {
					err = fmt.Errorf("building cars_garage_idx after the import: %w", ierr)
				}
			}
		}()
	}
	if db.engine == SQLite {
		// A bigger page cache for the writer while it loads: index pages
		// stay in memory instead of being read back from the file.
		// Statement journals of the multi-row INSERTs stay in memory.
		// The WAL is checkpointed when it passes about 1 GiB (and at the
		// end) rather than every 4 MiB: often enough that the file stays
		// bounded (never checkpointing made ten million cars need some
		// 50 GB of WAL), rarely enough that each page is written back
		// once for many batches.
		for _, p := range []string{`PRAGMA cache_size = -262144`, `PRAGMA temp_store = MEMORY`, `PRAGMA wal_autocheckpoint = 262144`} {
			if _, err := db.write.ExecContext(ctx, p); err != nil {
				return ImportStats{}, err
			}
		}
		defer func() {
			ctx := context.WithoutCancel(ctx)
			_, _ = db.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
			_, _ = db.write.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 1000`)
			_, _ = db.write.ExecContext(ctx, `PRAGMA cache_size = -2000`)
		}()
	}
	// One goroutine reads and checks the lines while this one writes the
	// batch before (docs/cars.md, "`yard import`"): the parse of batch n+1 runs
	// beside the transaction of batch n. Batches are written in order, so
	// an error in a line comes after every batch before it is committed.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	parsed := make(chan parsedBatch, 1)
	go im.readBatches(ctx, r, batch, parsed)
	for p := range parsed {
		b := p.batch
		if b != nil && b.lines > 0 {
			if deferred && st.Cars > 0 && len(b.garages) > 0 {
				// A garage changing state carries it to its cars, found
				// by the index: build it now rather than scan the cars.
				if err := db.ensureCarIndexes(ctx); err != nil {
					return st, fmt.Errorf("building cars_garage_idx: %w", err)
				}
				deferred = false
			}
			if err := im.writeBatch(ctx, b); err != nil {
				if ctx.Err() != nil {
					return st, ctx.Err()
				}
				return st, &ImportError{Line: p.first, LastLine: p.last, Msg: "the database refused the batch: " + err.Error(), Err: err}
			}
			st.Garages += b.garageLines
			st.Cars += b.carLines
			st.Lines = p.last
			if opt.Progress != nil {
				opt.Progress(st)
			}
		}
		if p.err != nil {
			return st, p.err
		}
	}
	return st, ctx.Err()
}

// writeBatch writes one batch in its own transaction. The cars go in
// with a plain INSERT until one of them is already stored; that batch is
// then written again, and every batch after it, with INSERT … ON CONFLICT
// DO UPDATE (on PostgreSQL the upsert made a load into an empty table
// some 60% slower).
func (im *importer) writeBatch(ctx context.Context, b *importBatch) error {
	err := im.writeBatchTx(ctx, b)
	if !im.upsert && isUniqueViolation(err) && ctx.Err() == nil {
		im.upsert = true
		err = im.writeBatchTx(ctx, b)
	}
	return err
}

func (im *importer) writeBatchTx(ctx context.Context, b *importBatch) error {
	im.db.prepareWrites(ctx, eventWrites...) // before the connection is taken (withTxOn)
	var conn *sql.Conn
	if im.db.engine == SQLite || !im.upsert {
		// On PostgreSQL the plain cars go in by COPY, on the
		// transaction's connection; on SQLite the connection goes without
		// foreign keys for the batch.
		c, err := im.db.write.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		conn = c
	}
	if im.db.engine == SQLite {
		// Foreign keys are a setting of SQLite's connection: off for this
		// batch, whose garages checkGarages checks instead, and back on
		// before the connection returns to the pool (or closed, when it
		// cannot be set back).
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return err
		}
		defer func() {
			if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); err != nil {
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	return im.db.withTxOn(ctx, conn, func(tx *Tx) error {
		if im.skipFKTrigger {
			if _, err := tx.ExecContext(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
		}
		v, err := carStamp(ctx, tx)
		if err != nil {
			return err
		}
		if err := im.writeGarages(ctx, tx, b.garages, v); err != nil {
			return err
		}
		if im.skipFKTrigger || im.db.engine == SQLite {
			if err := checkGarages(ctx, tx, b.garageIDs); err != nil {
				return err
			}
		}
		if err := im.writeCars(ctx, tx, b, v); err != nil {
			return err
		}
		return importEvent(ctx, tx, b)
	})
}

// parsedBatch is a batch of lines read and checked (readBatches), or
// the error that ended the reading (then the batch is nil: the lines of a
// batch with a bad line are not written).
type parsedBatch struct {
	batch       *importBatch
	first, last int // line numbers
	err         error
}

// readBatches reads r into batches of up to batch lines and sends them in
// order, the last one with the error that ended the reading, if any; it
// closes out at the end of r, at an error, or when ctx ends.
func (im *importer) readBatches(ctx context.Context, r io.Reader, batch int, out chan<- parsedBatch) {
	defer close(out)
	send := func(p parsedBatch) bool {
		select {
		case out <- p:
			return true
		case <-ctx.Done():
			return false
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxImportLine)
	lineNo := 0
	for {
		first := lineNo + 1
		b := newImportBatch()
		for n := 0; n < batch; {
			if !sc.Scan() {
				break
			}
			lineNo++
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			n++
			if err := im.parse(ctx, line, b); err != nil {
				if ie, ok := err.(*ImportError); ok {
					ie.Line = lineNo
				} else if ctx.Err() != nil {
					err = ctx.Err()
				} else {
					err = &ImportError{Line: lineNo, Msg: "the store could not be read: " + err.Error(), Err: err}
				}
				send(parsedBatch{err: err})
				return
			}
		}
		if err := sc.Err(); err != nil {
			msg := err.Error()
			if errors.Is(err, bufio.ErrTooLong) {
				msg = fmt.Sprintf("the line is longer than %d bytes", maxImportLine)
			}
			send(parsedBatch{err: &ImportError{Line: lineNo + 1, Msg: msg, Err: err}})
			return
		}
		if b.lines == 0 {
			return
		}
		im.complete(b)
		if !send(parsedBatch{batch: b, first: first, last: lineNo}) {
			return
		}
	}
}

// maxImportLine is the longest line an import reads.
const maxImportLine = 1 << 20

// importBatch is the garages and cars of one transaction, each id once:
// a line whose id repeats an earlier one of the batch takes its place (a
// multi-row INSERT ... ON CONFLICT DO UPDATE on PostgreSQL refuses to
// touch one row twice).
type importBatch struct {
	garages                      []*yard.Garage
	cars                         []importedCar
	garageAt, carAt              map[string]int
	lines, garageLines, carLines int
	// Built by complete, in the reading goroutine: the cars' garages
	// (carGarages) and, on SQLite, the cars' arguments (sqliteCarArgs).
	garageIDs []string
	carArgs   []driver.NamedValue
}

// complete builds what the writer needs of a batch whose lines are all
// read (readBatches does it in the reading goroutine).
func (im *importer) complete(b *importBatch) {
	b.garageIDs = b.carGarages()
	if im.db.engine == SQLite {
		b.carArgs = b.sqliteCarArgs(im.db.tuning.importChunk)
	}
}

func newImportBatch() *importBatch {
	return &importBatch{garageAt: map[string]int{}, carAt: map[string]int{}}
}

// importedCar is a car of an import with its garage's state key, looked up
// when the line was read (the cars carry a copy, docs/cars.md).
type importedCar struct {
	*yard.Car
	stateKey string
}

// putByID returns list with v in the place of the earlier value of the same
// id (at: id → place), or appended when the id is new: the last line of an
// id wins.
func putByID[T any](list []T, at map[string]int, id string, v T) []T {
	if i, ok := at[id]; ok {
		list[i] = v
		return list
	}
	at[id] = len(list)
	return append(list, v)
}

type importer struct {
	db     *DB
	states map[string]string         // garage id → state key, for the cars' copy
	seen   map[[sha256.Size]byte]int // id-less lines seen, by fields (newImportID)
	// interned shares the strings of repeated field values (parseLineFast).
	interned interner
	// skipFKTrigger: on PostgreSQL, the batches run with
	// session_replication_role = replica and check their garages
	// themselves (checkGarages).
	skipFKTrigger bool
	// upsert: a car of the import was already stored (writeBatch).
	upsert bool
}

// newImporter returns an importer that knows no garage yet.
func (db *DB) newImporter(ctx context.Context) *importer {
	im := &importer{db: db, states: map[string]string{}, seen: map[[sha256.Size]byte]int{}, interned: interner{}}
	if db.engine == Postgres {
		im.skipFKTrigger = db.maySkipTriggers(ctx)
	}
	return im
}
