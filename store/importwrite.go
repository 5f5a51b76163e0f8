package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/yard-api/yard"
)

// Writing one batch of an import (importer.writeBatchTx): the garages,
// then the cars, in multi-row INSERTs of driver values on SQLite, and in
// arrays or one binary COPY on PostgreSQL (docs/cars.md, "How an import is
// made fast").

// defaultImportChunk is the number of rows in one multi-row INSERT on
// SQLite, unless tuning says otherwise (PostgreSQL takes arrays
// instead: writeCarsPG). Its placeholders are "?": modernc looks up a
// named placeholder ($N) by a linear scan of the statement's names when it
// binds, so with names the cost per row grew with the rows per statement;
// positional ones it binds in place.
const defaultImportChunk = 64

// writeGarages writes a batch's garages, stamped v.
func (im *importer) writeGarages(ctx context.Context, tx *Tx, gs []*yard.Garage, v int64) error {
	now := Millis(tx.Now())
	if tx.db.engine == Postgres {
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
	if tx.db.engine == Postgres {
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
	return c.Garage, c.stateKey
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
// per statement, are skipped. The transaction is on its connection
// (writeBatchTx), whose driver, modernc's, prepares and executes with
// contexts.
func insertChunks(ctx context.Context, tx *Tx, cols int, args []driver.NamedValue, head, rowTail, tail string) error {
	return tx.conn.Raw(func(dc any) error {
		prep := dc.(driver.ConnPrepareContext)
		var full driver.Stmt // the statement of chunk rows, prepared once
		chunk, n := tx.db.tuning.importChunk, len(args)/cols
		for from := 0; from < n; from += chunk {
			rows := min(chunk, n-from)
			st := full
			if st == nil || rows < chunk {
				var err error
				if st, err = prep.PrepareContext(ctx, head+valuesList(rows, cols, rowTail)+tail); err != nil {
					return err
				}
				defer st.Close() // full, or the last statement, of fewer rows
				if rows == chunk {
					full = st
				}
			}
			if _, err := st.(driver.StmtExecContext).ExecContext(ctx, args[from*cols:(from+rows)*cols]); err != nil {
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
// on PostgreSQL, unless tuning says otherwise: a column is one
// array parameter, so a statement costs the same to send and plan
// whatever its rows, and pgx sends the arrays in binary.
const defaultPGImportChunk = 10000

// writeGaragesPG is writeGarages on PostgreSQL: the garages of a chunk in
// one statement, then the state of the replaced ones carried to their cars
// in one more.
func writeGaragesPG(ctx context.Context, tx *Tx, gs []*yard.Garage, now, v int64) error {
	for part := range slices.Chunk(gs, tx.db.tuning.pgImportChunk) {
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
	for part := range slices.Chunk(b.cars, tx.db.tuning.pgImportChunk) {
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
