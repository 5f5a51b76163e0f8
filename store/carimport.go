package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/yard-api/yard"
)

// ImportStats counts what an import wrote.
type ImportStats struct {
	Garages int
	Cars    int
	Lines   int
}

// DefaultImportBatch is the number of lines written per transaction.
const DefaultImportBatch = 50000

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

// ImportCars bulk-loads NDJSON lines {"kind":"garage"|"car", ...fields}
// (fields as in the API; a line without id gets a new one) in one
// transaction per batch of lines. A line whose id exists replaces that
// garage or car, so an import can be run again. A car's garage must be
// defined on an earlier line or already stored. Errors name the line; the
// batches before it stay written.
func (db *DB) ImportCars(ctx context.Context, r io.Reader, batch int) (ImportStats, error) {
	if batch <= 0 {
		batch = DefaultImportBatch
	}
	im := &importer{db: db, states: map[string]string{}}
	if db.engine == SQLite {
		// A bigger page cache for the writer while it loads: index pages
		// stay in memory instead of being read back from the file.
		// Statement journals of the multi-row INSERTs stay in memory.
		// The WAL is checkpointed once at the end rather than after every
		// batch.
		for _, p := range []string{`PRAGMA cache_size = -262144`, `PRAGMA temp_store = MEMORY`, `PRAGMA wal_autocheckpoint = 0`} {
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
	var st ImportStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	lineNo := 0
	for {
		var garages []*yard.Garage
		var cars []*yard.Car
		more := false
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
			more = true
			var l importLine
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				return st, fmt.Errorf("line %d: %w", lineNo, err)
			}
			switch l.Kind {
			case "garage":
				g := &yard.Garage{ID: l.ID, Name: l.Name, State: l.State}
				if g.ID == "" {
					g.ID = yard.NewID()
				}
				if err := g.Validate(); err != nil {
					return st, fmt.Errorf("line %d: %w", lineNo, err)
				}
				garages = append(garages, g)
				im.states[g.ID] = strings.ToLower(g.State)
			case "car":
				c := &yard.Car{ID: l.ID, Color: l.Color, Type: l.Type, Doors: l.Doors, Make: l.Make, Model: l.Model, Year: l.Year}
				if l.Garage != nil {
					c.Garage = *l.Garage
				}
				if c.ID == "" {
					c.ID = yard.NewID()
				}
				if err := c.Validate(); err != nil {
					return st, fmt.Errorf("line %d: %w", lineNo, err)
				}
				if c.Garage != "" {
					if err := im.knowGarage(ctx, c.Garage); err != nil {
						return st, fmt.Errorf("line %d: %w", lineNo, err)
					}
				}
				cars = append(cars, c)
			default:
				return st, fmt.Errorf("line %d: kind must be \"garage\" or \"car\", not %q", lineNo, l.Kind)
			}
		}
		if err := sc.Err(); err != nil {
			return st, fmt.Errorf("line %d: %w", lineNo+1, err)
		}
		if !more {
			return st, nil
		}
		if err := db.WithTx(ctx, func(tx *Tx) error {
			v, err := bumpCarVersion(ctx, tx)
			if err != nil {
				return err
			}
			if err := im.writeGarages(ctx, tx, garages, v); err != nil {
				return err
			}
			return im.writeCars(ctx, tx, cars, v)
		}); err != nil {
			return st, fmt.Errorf("batch ending at line %d: %w", lineNo, err)
		}
		st.Garages += len(garages)
		st.Cars += len(cars)
		st.Lines = lineNo
	}
}

type importer struct {
	db     *DB
	states map[string]string // garage id → state key, for the cars' copy
}

// knowGarage makes sure the state of garage id is known, reading it from
// the store when the import did not define it.
func (im *importer) knowGarage(ctx context.Context, id string) error {
	if _, ok := im.states[id]; ok {
		return nil
	}
	var state string
	err := im.db.read.QueryRowContext(ctx, `SELECT state_key FROM garages WHERE id = $1`, id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return yard.Invalid(fmt.Sprintf("Unknown garage %q: define it on an earlier line.", id), yard.FieldError{Field: "garage", Message: "no garage has this id"})
	} else if err != nil {
		return err
	}
	im.states[id] = state
	return nil
}

// importChunk returns the number of rows in one multi-row INSERT. Small on
// SQLite on purpose: modernc looks up each $N's name by a linear scan when
// it binds, so the cost per row grows with the placeholders per statement.
// PostgreSQL wants few round trips instead (200 car rows are 3200
// placeholders, well under its 65535).
func importChunk(engine string) int {
	if engine == Postgres {
		return 200
	}
	return 8
}

// writeGarages writes a batch's garages, stamped with version v.
func (im *importer) writeGarages(ctx context.Context, tx *Tx, gs []*yard.Garage, v int64) error {
	now := Millis(tx.Now())
	return insertChunks(ctx, tx, len(gs), 8,
		`INSERT INTO garages (id, name, name_key, state, state_key, created_at, updated_at, changed_version) VALUES `,
		` ON CONFLICT (id) DO UPDATE SET name = excluded.name, name_key = excluded.name_key, state = excluded.state,
		  state_key = excluded.state_key, updated_at = excluded.updated_at, changed_version = excluded.changed_version`,
		func(i int, args []any) []any {
			g := gs[i]
			return append(args, g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State), now, now, v)
		}, func(ctx context.Context, tx *Tx, from, to int) error {
			// A replaced garage may have changed state: carry it to its cars.
			for _, g := range gs[from:to] {
				if _, err := tx.ExecContext(ctx, `UPDATE cars SET garage_state_key = $2 WHERE garage_id = $1 AND garage_state_key <> $2`,
					g.ID, strings.ToLower(g.State)); err != nil {
					return err
				}
			}
			return nil
		})
}

// writeCars writes a batch's cars, stamped with version v.
func (im *importer) writeCars(ctx context.Context, tx *Tx, cs []*yard.Car, v int64) error {
	now := Millis(tx.Now())
	return insertChunks(ctx, tx, len(cs), 16,
		`INSERT INTO cars (id, color, color_key, type, type_key, doors, make, make_key, model, model_key, year,
		 garage_id, garage_state_key, created_at, updated_at, changed_version) VALUES `,
		` ON CONFLICT (id) DO UPDATE SET color = excluded.color, color_key = excluded.color_key, type = excluded.type,
		  type_key = excluded.type_key, doors = excluded.doors, make = excluded.make, make_key = excluded.make_key,
		  model = excluded.model, model_key = excluded.model_key, year = excluded.year, garage_id = excluded.garage_id,
		  garage_state_key = excluded.garage_state_key, updated_at = excluded.updated_at,
		  changed_version = excluded.changed_version`,
		func(i int, args []any) []any {
			c := cs[i]
			var state any
			if c.Garage != "" {
				state = im.states[c.Garage]
			}
			return append(args, c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type), c.Doors,
				c.Make, strings.ToLower(c.Make), c.Model, strings.ToLower(c.Model), c.Year, nullString(c.Garage), state, now, now, v)
		}, nil)
}

// insertChunks writes n rows with multi-row INSERTs of up to importChunk
// rows, preparing the full-size statement once. row appends the cols
// arguments of row i; after, when set, runs after each chunk.
func insertChunks(ctx context.Context, tx *Tx, n, cols int, head, tail string,
	row func(i int, args []any) []any, after func(ctx context.Context, tx *Tx, from, to int) error) error {
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	chunk := importChunk(tx.DB().Engine())
	args := make([]any, 0, chunk*cols)
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n)
		args = args[:0]
		for i := from; i < to; i++ {
			args = row(i, args)
		}
		text := head + valuesList(to-from, cols) + tail
		var err error
		if to-from == chunk {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, text); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, text, args...)
		}
		if err != nil {
			return err
		}
		if after != nil {
			if err := after(ctx, tx, from, to); err != nil {
				return err
			}
		}
	}
	return nil
}

// valuesList returns "($1, ..., $cols), (...)" for rows rows.
func valuesList(rows, cols int) string {
	var b strings.Builder
	p := 1
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}
