package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/yard-api/yard"
)

var _ yard.CarService = (*DB)(nil)

const carColumns = `id, color, type, doors, make, model, year, garage_id, created_at, updated_at`

func scanCar(row interface{ Scan(...any) error }) (*yard.Car, error) {
	var c yard.Car
	var garage sql.NullString
	var created, updated int64
	if err := row.Scan(&c.ID, &c.Color, &c.Type, &c.Doors, &c.Make, &c.Model, &c.Year, &garage, &created, &updated); err != nil {
		return nil, err
	}
	c.Garage = garage.String
	c.CreatedAt, c.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &c, nil
}

// FindCarByID returns the car with that id, or ENOTFOUND.
func (db *DB) FindCarByID(ctx context.Context, id string) (*yard.Car, error) {
	if db.engine == Postgres && !db.noCarBatch.Load() {
		return db.carLoaderOf().load(ctx, db, id)
	}
	c, err := scanCar(db.QueryRow(ctx, `SELECT `+carColumns+` FROM cars WHERE id = $1`, id))
	return c, notFound(err, "Car")
}

// FindCars returns the page of cars matching q in id order, and the number
// of all matching cars.
//
// Both the total and the page are cached in the process for one value of
// car_version.version, a counter every write to cars or garages (and every
// import batch) increments in its transaction. Each call reads the version
// first (a primary-key read), so cached answers are exact, also across
// several processes sharing PostgreSQL: a repeated count over a million
// rows and a repeated first page cost one tiny query.
func (db *DB) FindCars(ctx context.Context, q yard.Query, page yard.Page) ([]*yard.Car, int, error) {
	var version int64
	if err := db.QueryRow(ctx, `SELECT version FROM car_version WHERE id = 1`).Scan(&version); err != nil {
		return nil, 0, err
	}
	where, args := CompileCarQuery(db.engine, q, nil)
	cc := db.carCache()
	qkey := q.String()
	pkey := qkey + "|" + itoa(page.Offset) + "|" + itoa(page.Max)
	out, ok := cc.page(version, pkey)
	if !ok {
		var err error
		if out, err = db.carPage(ctx, where, args, page); err != nil {
			return nil, 0, err
		}
		cc.putPage(version, pkey, out)
	}
	total, err := db.countCars(ctx, cc, qkey, version, where, args)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// carPage runs the page query.
func (db *DB) carPage(ctx context.Context, where string, args []any, page yard.Page) ([]*yard.Car, error) {
	text, pageArgs := carPageSQL(db.engine, where, args, page)
	rows, err := db.Query(ctx, text, pageArgs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]*yard.Car, 0, page.Max)
	for rows.Next() {
		c, err := scanCar(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// carPageSQL returns the page query of a WHERE condition and its
// arguments. On SQLite, LIMIT and OFFSET are written into the text as
// numbers (they are ints, never client text): SQLite's planner looks at
// bound LIMIT values and re-prepares a statement whenever they are
// rebound, which doubled the cost of a page. PostgreSQL binds them.
func carPageSQL(engine, where string, args []any, page yard.Page) (string, []any) {
	head := `SELECT ` + carColumns + ` FROM cars WHERE ` + where + ` ORDER BY id`
	if engine == SQLite {
		return head + ` LIMIT ` + itoa(page.Max) + ` OFFSET ` + itoa(page.Offset), args
	}
	n := len(args)
	return head + ` LIMIT $` + itoa(n+1) + ` OFFSET $` + itoa(n+2), append(append(make([]any, 0, n+2), args...), page.Max, page.Offset)
}

// carCache remembers totals and pages of car queries for one cars version.
type carCache struct {
	mu       sync.Mutex
	version  int64
	totals   map[string]int
	pages    map[string][]yard.Car
	inflight map[string]*countCall
	noPages  bool
}

type countCall struct {
	done  chan struct{}
	total int
	err   error
}

// Bounds of the cache; past them it starts over.
const (
	maxCachedCounts = 4096
	maxCachedPages  = 1024
)

// carCache returns the store's cache of car totals and first pages,
// creating it on first use.
func (db *DB) carCache() *carCache {
	db.carCacheOnce.Do(func() {
		db.cars = &carCache{totals: map[string]int{}, pages: map[string][]yard.Car{}, inflight: map[string]*countCall{}}
	})
	return db.cars
}

// SetCarPageCache turns the cache of car pages on (the default) or off;
// totals are always cached. Benchmarks use it to show what it saves.
func (db *DB) SetCarPageCache(on bool) {
	cc := db.carCache()
	cc.mu.Lock()
	cc.noPages, cc.pages = !on, map[string][]yard.Car{}
	cc.mu.Unlock()
}

// sync forgets everything when the version moved; call with mu held.
func (cc *carCache) sync(version int64) {
	if cc.version != version {
		cc.version, cc.totals, cc.pages = version, map[string]int{}, map[string][]yard.Car{}
	}
}

// page returns copies of a cached page of this version.
func (cc *carCache) page(version int64, key string) ([]*yard.Car, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.sync(version)
	cars, ok := cc.pages[key]
	if !ok {
		return nil, false
	}
	out := make([]*yard.Car, len(cars))
	for i := range cars {
		c := cars[i]
		out[i] = &c
	}
	return out, true
}

func (cc *carCache) putPage(version int64, key string, cars []*yard.Car) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.noPages || cc.version != version {
		return
	}
	if len(cc.pages) >= maxCachedPages {
		cc.pages = map[string][]yard.Car{}
	}
	stored := make([]yard.Car, len(cars))
	for i, c := range cars {
		stored[i] = *c
	}
	cc.pages[key] = stored
}

// countCars returns the number of cars matching where. The caller read
// version before the count runs, so a total is never filed under a version
// older than the data it counted (at worst under one already superseded);
// concurrent identical counts share one query.
func (db *DB) countCars(ctx context.Context, cc *carCache, key string, version int64, where string, args []any) (int, error) {
	cc.mu.Lock()
	cc.sync(version)
	if n, ok := cc.totals[key]; ok {
		cc.mu.Unlock()
		return n, nil
	}
	callKey := itoa(int(version)) + "|" + key
	if call, ok := cc.inflight[callKey]; ok {
		cc.mu.Unlock()
		select {
		case <-call.done:
			return call.total, call.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	call := &countCall{done: make(chan struct{})}
	cc.inflight[callKey] = call
	cc.mu.Unlock()

	// The count runs without the caller's cancellation so that others
	// waiting for it are not failed by one client going away.
	err := db.QueryRow(context.WithoutCancel(ctx), `SELECT COUNT(*) FROM cars WHERE `+where, args...).Scan(&call.total)
	call.err = err
	cc.mu.Lock()
	delete(cc.inflight, callKey)
	if err == nil && cc.version == version {
		if len(cc.totals) >= maxCachedCounts {
			cc.totals = map[string]int{}
		}
		cc.totals[key] = call.total
	}
	cc.mu.Unlock()
	close(call.done)
	return call.total, err
}

// bumpCarVersion marks every cached total stale; call it in each write
// transaction on cars or garages.
func bumpCarVersion(tx *Tx) error {
	_, err := tx.ExecContext(context.Background(), `UPDATE car_version SET version = version + 1 WHERE id = 1`)
	return err
}

// garageStateKey returns the state key of a garage for a car being
// written, or EINVALID naming "garage" when there is no such garage.
func garageStateKey(ctx context.Context, tx *Tx, garage string) (any, error) {
	if garage == "" {
		return nil, nil
	}
	var state string
	err := tx.QueryRowContext(ctx, `SELECT state_key FROM garages WHERE id = $1`, garage).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, yard.Invalid("The car's garage does not exist.", yard.FieldError{Field: "garage", Message: "no garage has this id"})
	}
	return state, err
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateCar stores a new car; a car without id gets one.
func (db *DB) CreateCar(ctx context.Context, c *yard.Car) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.ID == "" {
		c.ID = yard.NewID()
	}
	return db.WithTx(ctx, func(tx *Tx) error {
		return insertCar(ctx, tx, c)
	})
}

func insertCar(ctx context.Context, tx *Tx, c *yard.Car) error {
	state, err := garageStateKey(ctx, tx, c.Garage)
	if err != nil {
		return err
	}
	c.CreatedAt, c.UpdatedAt = tx.Now().UTC(), tx.Now().UTC()
	_, err = tx.ExecContext(ctx, `INSERT INTO cars (id, color, color_key, type, type_key, doors, make, make_key, model, model_key, year,
		garage_id, garage_state_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
		c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type), c.Doors, c.Make, strings.ToLower(c.Make),
		c.Model, strings.ToLower(c.Model), c.Year, nullString(c.Garage), state, Millis(tx.Now()))
	if isUniqueViolation(err) {
		return yard.Errorf(yard.ECONFLICT, "A car with id %q exists.", c.ID)
	} else if err != nil {
		return err
	}
	c.CreatedAt, c.UpdatedAt = FromMillis(Millis(tx.Now())), FromMillis(Millis(tx.Now()))
	return bumpCarVersion(tx)
}

func updateCarRow(ctx context.Context, tx *Tx, c *yard.Car) error {
	state, err := garageStateKey(ctx, tx, c.Garage)
	if err != nil {
		return err
	}
	now := Millis(tx.Now())
	_, err = tx.ExecContext(ctx, `UPDATE cars SET color = $2, color_key = $3, type = $4, type_key = $5, doors = $6, make = $7,
		make_key = $8, model = $9, model_key = $10, year = $11, garage_id = $12, garage_state_key = $13, updated_at = $14 WHERE id = $1`,
		c.ID, c.Color, strings.ToLower(c.Color), c.Type, strings.ToLower(c.Type), c.Doors, c.Make, strings.ToLower(c.Make),
		c.Model, strings.ToLower(c.Model), c.Year, nullString(c.Garage), state, now)
	if err != nil {
		return err
	}
	c.UpdatedAt = FromMillis(now)
	return bumpCarVersion(tx)
}

// ReplaceCar stores c under c.ID, creating the car when there is none.
func (db *DB) ReplaceCar(ctx context.Context, c *yard.Car) (bool, error) {
	if err := c.Validate(); err != nil {
		return false, err
	}
	if c.ID == "" {
		return false, yard.Invalid("The car needs an id.", yard.FieldError{Field: "id", Message: "is required"})
	}
	created := false
	err := db.WithTx(ctx, func(tx *Tx) error {
		old, err := scanCar(tx.QueryRowContext(ctx, `SELECT `+carColumns+` FROM cars WHERE id = $1`, c.ID))
		if errors.Is(err, sql.ErrNoRows) {
			created = true
			return insertCar(ctx, tx, c)
		} else if err != nil {
			return err
		}
		c.CreatedAt = old.CreatedAt
		return updateCarRow(ctx, tx, c)
	})
	return created, err
}

// UpdateCar changes the given fields of a car and returns it.
func (db *DB) UpdateCar(ctx context.Context, id string, upd yard.CarUpdate) (*yard.Car, error) {
	var c *yard.Car
	err := db.WithTx(ctx, func(tx *Tx) error {
		var err error
		c, err = scanCar(tx.QueryRowContext(ctx, `SELECT `+carColumns+` FROM cars WHERE id = $1`, id))
		if err != nil {
			return notFound(err, "Car")
		}
		upd.Apply(c)
		if err := c.Validate(); err != nil {
			return err
		}
		return updateCarRow(ctx, tx, c)
	})
	return c, err
}

// DeleteCar removes a car.
func (db *DB) DeleteCar(ctx context.Context, id string) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM cars WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return yard.Errorf(yard.ENOTFOUND, "Car not found.")
		}
		return bumpCarVersion(tx)
	})
}

const garageColumns = `g.id, g.name, g.state, g.created_at, g.updated_at, (SELECT COUNT(*) FROM cars c WHERE c.garage_id = g.id)`

func scanGarage(row interface{ Scan(...any) error }) (*yard.Garage, error) {
	var g yard.Garage
	var created, updated int64
	if err := row.Scan(&g.ID, &g.Name, &g.State, &created, &updated, &g.CarCount); err != nil {
		return nil, err
	}
	g.CreatedAt, g.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &g, nil
}

// FindGarageByID returns the garage with its car count, or ENOTFOUND.
func (db *DB) FindGarageByID(ctx context.Context, id string) (*yard.Garage, error) {
	g, err := scanGarage(db.QueryRow(ctx, `SELECT `+garageColumns+` FROM garages g WHERE g.id = $1`, id))
	return g, notFound(err, "Garage")
}

// FindGarages returns a page of garages in id order and their number.
func (db *DB) FindGarages(ctx context.Context, page yard.Page) ([]*yard.Garage, int, error) {
	var total int
	if err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM garages`).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := db.read.QueryContext(ctx, `SELECT `+garageColumns+` FROM garages g ORDER BY g.id LIMIT $1 OFFSET $2`, page.Max, page.Offset)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []*yard.Garage{}
	for rows.Next() {
		g, err := scanGarage(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, g)
	}
	return out, total, rows.Err()
}

// CreateGarage stores a new garage; one without id gets one.
func (db *DB) CreateGarage(ctx context.Context, g *yard.Garage) error {
	if err := g.Validate(); err != nil {
		return err
	}
	if g.ID == "" {
		g.ID = yard.NewID()
	}
	return db.WithTx(ctx, func(tx *Tx) error { return insertGarage(ctx, tx, g) })
}

func insertGarage(ctx context.Context, tx *Tx, g *yard.Garage) error {
	now := Millis(tx.Now())
	_, err := tx.ExecContext(ctx, `INSERT INTO garages (id, name, name_key, state, state_key, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)`, g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State), now)
	if isUniqueViolation(err) {
		return yard.Errorf(yard.ECONFLICT, "A garage with id %q exists.", g.ID)
	} else if err != nil {
		return err
	}
	g.CreatedAt, g.UpdatedAt, g.CarCount = FromMillis(now), FromMillis(now), 0
	return bumpCarVersion(tx)
}

// updateGarageRow writes g's fields and carries a state change to the
// copy on its cars.
func updateGarageRow(ctx context.Context, tx *Tx, g *yard.Garage) error {
	now := Millis(tx.Now())
	if _, err := tx.ExecContext(ctx, `UPDATE garages SET name = $2, name_key = $3, state = $4, state_key = $5, updated_at = $6 WHERE id = $1`,
		g.ID, g.Name, strings.ToLower(g.Name), g.State, strings.ToLower(g.State), now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cars SET garage_state_key = $2 WHERE garage_id = $1 AND garage_state_key <> $2`,
		g.ID, strings.ToLower(g.State)); err != nil {
		return err
	}
	g.UpdatedAt = FromMillis(now)
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM cars WHERE garage_id = $1`, g.ID).Scan(&g.CarCount); err != nil {
		return err
	}
	return bumpCarVersion(tx)
}

// ReplaceGarage stores g under g.ID, creating the garage when there is none.
func (db *DB) ReplaceGarage(ctx context.Context, g *yard.Garage) (bool, error) {
	if err := g.Validate(); err != nil {
		return false, err
	}
	if g.ID == "" {
		return false, yard.Invalid("The garage needs an id.", yard.FieldError{Field: "id", Message: "is required"})
	}
	created := false
	err := db.WithTx(ctx, func(tx *Tx) error {
		old, err := scanGarage(tx.QueryRowContext(ctx, `SELECT `+garageColumns+` FROM garages g WHERE g.id = $1`, g.ID))
		if errors.Is(err, sql.ErrNoRows) {
			created = true
			return insertGarage(ctx, tx, g)
		} else if err != nil {
			return err
		}
		g.CreatedAt = old.CreatedAt
		return updateGarageRow(ctx, tx, g)
	})
	return created, err
}

// UpdateGarage changes the given fields of a garage and returns it.
func (db *DB) UpdateGarage(ctx context.Context, id string, upd yard.GarageUpdate) (*yard.Garage, error) {
	var g *yard.Garage
	err := db.WithTx(ctx, func(tx *Tx) error {
		var err error
		g, err = scanGarage(tx.QueryRowContext(ctx, `SELECT `+garageColumns+` FROM garages g WHERE g.id = $1`, id))
		if err != nil {
			return notFound(err, "Garage")
		}
		if upd.Name != nil {
			g.Name = *upd.Name
		}
		if upd.State != nil {
			g.State = *upd.State
		}
		if err := g.Validate(); err != nil {
			return err
		}
		return updateGarageRow(ctx, tx, g)
	})
	return g, err
}

// DeleteGarage removes an empty garage; one holding cars is ECONFLICT.
func (db *DB) DeleteGarage(ctx context.Context, id string) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM garages WHERE id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return yard.Errorf(yard.ENOTFOUND, "Garage not found.")
		}
		var held int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM cars WHERE garage_id = $1`, id).Scan(&held); err != nil {
			return err
		}
		if held > 0 {
			return yard.Errorf(yard.ECONFLICT, "The garage holds %d cars; move or delete them first.", held)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM garages WHERE id = $1`, id); err != nil {
			return err
		}
		return bumpCarVersion(tx)
	})
}

// CountCarsUncached counts the cars matching q without the totals cache
// (benchmarks and diagnostics).
func (db *DB) CountCarsUncached(ctx context.Context, q yard.Query) (int, error) {
	where, args := CompileCarQuery(db.engine, q, nil)
	var n int
	err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM cars WHERE `+where, args...).Scan(&n)
	return n, err
}

// ExplainCars returns the engine's plan for the page query and the count
// query of q (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL), to
// show which indexes they use.
func (db *DB) ExplainCars(ctx context.Context, q yard.Query, page yard.Page) (string, error) {
	where, args := CompileCarQuery(db.engine, q, nil)
	pageSQL, pageArgs := carPageSQL(db.engine, where, args, page)
	countSQL := `SELECT COUNT(*) FROM cars WHERE ` + where
	var b strings.Builder
	for _, stmt := range []struct {
		sql  string
		args []any
	}{{pageSQL, pageArgs}, {countSQL, args}} {
		b.WriteString(strings.Join(strings.Fields(stmt.sql), " ") + "\n")
		prefix := `EXPLAIN `
		if db.engine == SQLite {
			prefix = `EXPLAIN QUERY PLAN `
		}
		rows, err := db.read.QueryContext(ctx, prefix+stmt.sql, stmt.args...)
		if err != nil {
			return "", err
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", err
			}
			// SQLite: id, parent, notused, detail; PostgreSQL: one text column.
			line := vals[len(vals)-1]
			switch v := line.(type) {
			case []byte:
				b.WriteString("  " + string(v) + "\n")
			default:
				b.WriteString("  " + strings.TrimSpace(fmtAny(v)) + "\n")
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func fmtAny(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
