package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/yard-api/yard"
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

// importLine is one NDJSON line of `yard import`.
type importLine struct {
	Kind   string  `json:"kind"`
	ID     string  `json:"id"`
	Name   string  `json:"name"`  // garage
	State  string  `json:"state"` // garage
	Color  string  `json:"color"`
	Type   string  `json:"type"`
	Doors  int     `json:"doors"`
	Make   string  `json:"make"`
	Model  string  `json:"model"`
	Year   int     `json:"year"`
	Garage *string `json:"garage"`
}

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
	batch := opt.Batch
	if batch <= 0 {
		batch = DefaultImportBatch
	}
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

func (b *importBatch) addGarage(g *yard.Garage) {
	b.garageLines++
	b.garages = putByID(b.garages, b.garageAt, g.ID, g)
}

func (b *importBatch) addCar(c importedCar) {
	b.carLines++
	b.cars = putByID(b.cars, b.carAt, c.ID, c)
}

// importedCar is a car of an import with its garage's state key, looked up
// when the line was read (the cars carry a copy, docs/cars.md).
type importedCar struct {
	*yard.Car
	stateKey any // nil without a garage
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

// parse reads one non-empty line into the batch. Its errors are
// *ImportError without the line number, or errors of the store.
func (im *importer) parse(ctx context.Context, line []byte, b *importBatch) error {
	b.lines++
	var l importLine
	if !parseLineFast(line, &l, im.interned.intern) {
		// Anything but the common shape goes through encoding/json, which
		// decides and words the error.
		l = importLine{}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return &ImportError{Msg: describeJSONError(err), Err: err}
		}
		if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
			return &ImportError{Msg: fmt.Sprintf("not JSON: more after the object, at column %d", int(dec.InputOffset())+1)}
		}
	}
	switch l.Kind {
	case "garage":
		if l.Color != "" || l.Type != "" || l.Doors != 0 || l.Make != "" || l.Model != "" || l.Year != 0 || l.Garage != nil {
			return &ImportError{Msg: describeLine("garage", l.ID) + "only kind, id, name and state belong on a garage line"}
		}
		g := &yard.Garage{ID: l.ID, Name: l.Name, State: l.State}
		if err := g.Validate(); err != nil {
			return &ImportError{Msg: describeLine("garage", l.ID) + describeInvalid(err), Err: err}
		}
		if g.ID == "" {
			g.ID = im.newImportID("garage", l.Name, l.State)
		}
		b.addGarage(g)
		im.states[g.ID] = strings.ToLower(g.State)
	case "car":
		if l.Name != "" || l.State != "" {
			return &ImportError{Msg: describeLine("car", l.ID) + "name and state belong on a garage line"}
		}
		c := &yard.Car{ID: l.ID, Color: l.Color, Type: l.Type, Doors: l.Doors, Make: l.Make, Model: l.Model, Year: l.Year}
		if l.Garage != nil {
			c.Garage = *l.Garage
		}
		if err := c.Validate(); err != nil {
			return &ImportError{Msg: describeLine("car", l.ID) + describeInvalid(err), Err: err}
		}
		if c.Garage != "" {
			known, err := im.knowGarage(ctx, c.Garage)
			if err != nil {
				return err
			}
			if !known {
				return &ImportError{Msg: describeLine("car", l.ID) + fmt.Sprintf("garage %q is unknown: define it on an earlier line or import it first", c.Garage)}
			}
		}
		if c.ID == "" {
			c.ID = im.newImportID("car", c.Color, c.Type, strconv.Itoa(c.Doors), c.Make, c.Model, strconv.Itoa(c.Year), c.Garage)
		}
		ic := importedCar{Car: c}
		if c.Garage != "" {
			ic.stateKey = im.states[c.Garage]
		}
		b.addCar(ic)
	case "":
		return &ImportError{Msg: `no "kind": it must be "garage" or "car"`}
	default:
		return &ImportError{Msg: fmt.Sprintf("kind must be \"garage\" or \"car\", not %q", l.Kind)}
	}
	return nil
}

// newImportID returns the id of an id-less line of the kind with these
// field values: "car-" or "garage-" and 20 hex digits of a SHA-256 over
// the kind, the values and how many identical id-less lines the import
// has seen before this one. The same file imported again gives the same
// ids; so does any file holding the same id-less lines in any order.
func (im *importer) newImportID(kind string, values ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, v := range values {
		h.Write([]byte{0})
		h.Write([]byte(v))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	n := im.seen[key]
	im.seen[key] = n + 1
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(n)))
	return kind + "-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// describeLine starts the message about a line: `car "c1": ` or `car: `.
func describeLine(kind, id string) string {
	if id == "" || !yard.ValidClientID(id) {
		return kind + ": "
	}
	return fmt.Sprintf("%s %q: ", kind, id)
}

// describeInvalid says in words what a validation error found wrong:
// "year must be ...; doors must be ...".
func describeInvalid(err error) string {
	var ye *yard.Error
	if !errors.As(err, &ye) {
		return err.Error()
	}
	if len(ye.Fields) == 0 {
		return ye.Message
	}
	parts := make([]string, len(ye.Fields))
	for i, f := range ye.Fields {
		parts[i] = f.Field + " " + f.Message
	}
	return strings.Join(parts, "; ")
}

// describeJSONError says in words why a line is not the JSON object an
// import expects.
func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "not JSON: the line ends inside the object"
	case errors.As(err, &syn):
		what := "unexpected input"
		if _, rest, ok := strings.Cut(syn.Error(), "invalid character "); ok {
			// 'o' in literal null (expecting 'u') → unexpected 'o'
			if i := strings.LastIndex(rest, "' "); i > 0 && rest[0] == '\'' {
				what = "unexpected " + rest[:i+1]
			}
		}
		return fmt.Sprintf("not JSON: %s at column %d", what, syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "not a JSON object (each line is one garage or car object)"
		}
		want := "a string"
		switch typ.Type.Kind() {
		case reflect.Int:
			want = "a whole number"
		case reflect.Pointer:
			want = "a string or null"
		}
		return fmt.Sprintf("%s must be %s, not %s", typ.Field, want, typ.Value)
	case strings.HasPrefix(msg, "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ") +
			" (a garage line has kind, id, name, state; a car line has kind, id, color, type, doors, make, model, year, garage)"
	}
	return "not JSON: " + strings.TrimPrefix(msg, "json: ")
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

// knowGarage reports whether garage id was defined by the import or is
// stored, learning its state from the store in the second case.
func (im *importer) knowGarage(ctx context.Context, id string) (bool, error) {
	if _, ok := im.states[id]; ok {
		return true, nil
	}
	var state string
	err := im.db.read.QueryRowContext(ctx, `SELECT state_key FROM garages WHERE id = $1`, id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	im.states[id] = state
	return true, nil
}

// defaultImportChunk is the number of rows in one multi-row INSERT on
// SQLite, unless WithImportChunks says otherwise (PostgreSQL takes arrays
// instead: writeCarsPG). Its placeholders are "?": modernc looks up a
// named placeholder ($N) by a linear scan of the statement's names when it
// binds, so with names the cost per row grew with the rows per statement;
// positional ones it binds in place.
const defaultImportChunk = 64

// writeGarages writes a batch's garages, stamped v.
func (im *importer) writeGarages(ctx context.Context, tx *Tx, gs []*yard.Garage, v int64) error {
	now := Millis(tx.Now())
	if tx.DB().Engine() == Postgres {
		return writeGaragesPG(ctx, tx, gs, now, v)
	}
	args := make([]driver.NamedValue, 0, 5*len(gs))
	for _, g := range gs {
		args = appendRow(args, 5, tx.db.tuning.importChunk, g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State))
	}
	if err := insertChunks(ctx, tx, 5, args,
		`INSERT INTO garages (id, name, name_key, state, state_key, created_at, updated_at, changed_version) VALUES `,
		stampValues(now, v),
		` ON CONFLICT (id) DO UPDATE SET name = excluded.name, name_key = excluded.name_key, state = excluded.state,
		  state_key = excluded.state_key, updated_at = excluded.updated_at, changed_version = excluded.changed_version`); err != nil {
		return err
	}
	// A replaced garage may have changed state: carry it to its cars.
	for _, g := range gs {
		if _, err := tx.ExecContext(ctx, `UPDATE cars SET garage_state_key = $2 WHERE garage_id = $1 AND garage_state_key <> $2`,
			g.ID, strings.ToLower(g.State)); err != nil {
			return err
		}
	}
	return nil
}

// stampValues returns ", now, now, v": a row's created_at, updated_at and
// changed_version, the same for every row of a batch, written into the
// statement rather than bound row by row.
func stampValues(now, v int64) string { return fmt.Sprintf(", %d, %d, %d", now, now, v) }

// writeCars writes a batch's cars, stamped v. A car whose garage is
// (re)defined in the same batch takes that garage's last state, as the
// garage's other cars do (writeGarages); otherwise the state its garage
// had when the car's line was read.
func (im *importer) writeCars(ctx context.Context, tx *Tx, b *importBatch, v int64) error {
	now := Millis(tx.Now())
	conflict := ""
	if im.upsert {
		conflict = ` ON CONFLICT (id) DO UPDATE SET ` + carUpsertSet
	}
	if tx.DB().Engine() == Postgres {
		return writeCarsPG(ctx, tx, b, now, v, conflict)
	}
	return insertChunks(ctx, tx, carArgCols, b.carArgs, `INSERT INTO cars (`+carWriteColumns+`) VALUES `, stampValues(now, v), conflict)
}

// carArgCols is the number of arguments of one car in SQLite's INSERT:
// carFieldArgs and the garage's state (the times and the stamp are in the
// statement: stampValues).
const carArgCols = 13

// carGarage returns a car's garage and that garage's state key as
// column values (nil without a garage): the state of the garage's last
// line when the batch defines it, as the garage's other cars get
// (writeGarages), otherwise the state its garage had when the car's line
// was read.
func (b *importBatch) carGarage(c importedCar) (garage, state any) {
	if c.Garage == "" {
		return nil, nil
	}
	if g, ok := b.garageAt[c.Garage]; ok {
		return c.Garage, strings.ToLower(b.garages[g].State)
	}
	if s, ok := c.stateKey.(string); ok {
		return c.Garage, s
	}
	return c.Garage, nil
}

// sqliteCarArgs returns the arguments of the batch's cars for SQLite's
// INSERT, carArgCols a car, as the driver takes them (strings, int64s and
// nils, numbered by appendRow for statements of chunk rows). The reading
// goroutine builds them once the batch is complete (readBatches), so that
// the writer only binds them.
func (b *importBatch) sqliteCarArgs(chunk int) []driver.NamedValue {
	args := make([]driver.NamedValue, 0, carArgCols*len(b.cars))
	for _, c := range b.cars {
		garage, state := b.carGarage(c)
		args = appendRow(args, carArgCols, chunk, c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type),
			int64(c.Doors), c.Make, strings.ToLower(c.Make), c.Model, strings.ToLower(c.Model), int64(c.Year), garage, state)
	}
	return args
}

// insertChunks writes the rows of args, cols arguments a row, with
// multi-row INSERTs of up to the store's importChunk rows on SQLite (as
// appendRow numbered them), preparing the
// full-size statement once; rowTail ends each row's values (", 1, 2" for
// values written into the statement). It runs the driver's statements on
// the transaction's connection: the arguments are driver values already
// (appendRow), so database/sql's conversion of each one, and its locking
// per statement, are skipped.
func insertChunks(ctx context.Context, tx *Tx, cols int, args []driver.NamedValue, head, rowTail, tail string) error {
	if tx.conn == nil {
		return errors.New("insertChunks: the transaction has no connection of its own")
	}
	return tx.conn.Raw(func(dc any) error {
		prep, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("insertChunks: %T cannot prepare", dc)
		}
		exec := func(st driver.Stmt, part []driver.NamedValue) error {
			ex, ok := st.(driver.StmtExecContext)
			if !ok {
				return fmt.Errorf("insertChunks: %T cannot execute", st)
			}
			_, err := ex.ExecContext(ctx, part)
			return err
		}
		var full driver.Stmt
		defer func() {
			if full != nil {
				full.Close()
			}
		}()
		chunk, n := tx.db.tuning.importChunk, len(args)/cols
		for from := 0; from < n; from += chunk {
			to := min(from+chunk, n)
			part := args[from*cols : to*cols]
			if to-from == chunk {
				if full == nil {
					st, err := prep.PrepareContext(ctx, head+valuesList(chunk, cols, rowTail)+tail)
					if err != nil {
						return err
					}
					full = st
				}
				if err := exec(full, part); err != nil {
					return err
				}
				continue
			}
			st, err := prep.PrepareContext(ctx, head+valuesList(to-from, cols, rowTail)+tail)
			if err != nil {
				return err
			}
			err = exec(st, part)
			st.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// appendRow appends one row of cols values to args, numbered as
// insertChunks binds them: from 1 within each statement of chunk rows.
func appendRow(args []driver.NamedValue, cols, chunk int, vals ...driver.Value) []driver.NamedValue {
	per := cols * chunk
	for _, v := range vals {
		args = append(args, driver.NamedValue{Ordinal: len(args)%per + 1, Value: v})
	}
	return args
}

// valuesList returns "(?, ..., ?<rowTail>), (...)": rows rows of cols
// positional placeholders (SQLite).
func valuesList(rows, cols int, rowTail string) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?" + rowTail + ")"
	return strings.Repeat(row+", ", rows-1) + row
}

// defaultPGImportChunk is the rows of one INSERT … SELECT FROM unnest(…)
// on PostgreSQL, unless WithImportChunks says otherwise: a column is one
// array parameter, so a statement costs the same to send and plan
// whatever its rows, and pgx sends the arrays in binary.
const defaultPGImportChunk = 10000

// writeGaragesPG is writeGarages on PostgreSQL: the garages of a chunk in
// one statement, then the state of the replaced ones carried to their cars
// in one more.
func writeGaragesPG(ctx context.Context, tx *Tx, gs []*yard.Garage, now, v int64) error {
	chunk := tx.db.tuning.pgImportChunk
	for from := 0; from < len(gs); from += chunk {
		part := gs[from:min(from+chunk, len(gs))]
		ids, names, nameKeys, states, stateKeys := make([]string, len(part)), make([]string, len(part)),
			make([]string, len(part)), make([]string, len(part)), make([]string, len(part))
		for i, g := range part {
			ids[i], names[i], nameKeys[i], states[i], stateKeys[i] = g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO garages (id, name, name_key, state, state_key, created_at, updated_at, changed_version)
			SELECT g.id, g.name, g.name_key, g.state, g.state_key, $6, $6, $7
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS g(id, name, name_key, state, state_key)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name, name_key = excluded.name_key, state = excluded.state,
			  state_key = excluded.state_key, updated_at = excluded.updated_at, changed_version = excluded.changed_version`,
			ids, names, nameKeys, states, stateKeys, now, v); err != nil {
			return err
		}
		// A replaced garage may have changed state: carry it to its cars
		// (a new garage has none).
		if _, err := tx.ExecContext(ctx, `UPDATE cars SET garage_state_key = g.state_key
			FROM unnest($1::text[], $2::text[]) AS g(id, state_key)
			WHERE cars.garage_id = g.id AND cars.garage_state_key <> g.state_key`, ids, stateKeys); err != nil {
			return err
		}
	}
	return nil
}

// writeCarsPG is writeCars on PostgreSQL, a chunk of cars per statement
// (conflict: the statement's ON CONFLICT clause, if any), or one COPY when
// there is none and the transaction has its connection (copyCarsPG).
func writeCarsPG(ctx context.Context, tx *Tx, b *importBatch, now, v int64, conflict string) error {
	if conflict == "" && tx.conn != nil {
		return copyCarsPG(ctx, tx, b, now, v)
	}
	cs, chunk := b.cars, tx.db.tuning.pgImportChunk
	for from := 0; from < len(cs); from += chunk {
		part := cs[from:min(from+chunk, len(cs))]
		n := len(part)
		var (
			ids, colors, colorKeys, types, typeKeys = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			makes, makeKeys, models, modelKeys      = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
			doors, years                            = make([]int32, n), make([]int32, n)
			garages, stateKeys                      = make([]*string, n), make([]*string, n)
		)
		for i, c := range part {
			ids[i], colors[i], colorKeys[i], types[i], typeKeys[i] = c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type)
			makes[i], makeKeys[i], models[i], modelKeys[i] = c.Make, strings.ToLower(c.Make), c.Model, strings.ToLower(c.Model)
			doors[i], years[i] = int32(c.Doors), int32(c.Year)
			garage, state := b.carGarage(c)
			if g, ok := garage.(string); ok {
				garages[i] = &g
			}
			if st, ok := state.(string); ok {
				stateKeys[i] = &st
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO cars (`+carWriteColumns+`)
			SELECT c.*, $14, $14, $15
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[],
			  $9::text[], $10::text[], $11::int[], $12::text[], $13::text[])
			  AS c(id, color, color_key, type, type_key, doors, make, make_key, model, model_key, year, garage_id, garage_state_key)`+conflict,
			ids, colors, colorKeys, types, typeKeys, doors, makes, makeKeys, models, modelKeys, years, garages, stateKeys,
			now, v); err != nil {
			return err
		}
	}
	return nil
}

// copyCarsColumns are the columns copyCarsPG writes, in carWriteColumns'
// order.
var copyCarsColumns = []string{"id", "color", "color_key", "type", "type_key", "doors", "make", "make_key",
	"model", "model_key", "year", "garage_id", "garage_state_key", "created_at", "updated_at", "changed_version"}

// copyCarsPG writes a batch's cars with COPY, in binary: some 40% less of
// the server's time than INSERT … SELECT FROM unnest(…), which decodes an
// array per column first. pgx encodes the rows in a goroutine of its own
// while the server takes them in. COPY cannot resolve conflicts: a car
// already stored fails it (writeBatch then writes the batch again as an
// upsert).
func copyCarsPG(ctx context.Context, tx *Tx, b *importBatch, now, v int64) error {
	cs := b.cars
	row := make([]any, len(copyCarsColumns))
	i := -1
	src := pgx.CopyFromFunc(func() ([]any, error) {
		i++
		if i >= len(cs) {
			return nil, nil
		}
		c := cs[i]
		garage, state := b.carGarage(c)
		row[0], row[1], row[2], row[3], row[4] = c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type)
		row[5], row[6], row[7], row[8], row[9] = int32(c.Doors), c.Make, strings.ToLower(c.Make), c.Model, strings.ToLower(c.Model)
		row[10], row[11], row[12], row[13], row[14], row[15] = int32(c.Year), garage, state, now, now, v
		return row, nil
	})
	return tx.conn.Raw(func(dc any) error {
		_, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{"cars"}, copyCarsColumns, src)
		return err
	})
}
