package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/yard-api/yard"
)

// Car lists by SQL: the page, the total and the facets of a query compiled
// by carquery.go, and the plans of those statements. The search index
// (package search) answers the same lists from memory and is held against
// these in tests.

// FindCars returns the page of cars matching q in id order, and the number
// of all matching cars, by SQL (ListCars without facets).
func (db *DB) FindCars(ctx context.Context, q yard.Query, page yard.Page) ([]*yard.Car, int, error) {
	l, err := db.ListCars(ctx, q, page, nil)
	if err != nil {
		return nil, 0, err
	}
	return l.Cars, l.Total, nil
}

// ListCars answers a car list by SQL: the page in id order, the exact
// total (a COUNT over the matching rows) and, per facet field, a GROUP BY
// of the matching rows. It is the path the search index (package search)
// is held against in tests, and the one that answers while the index is
// not built yet.
func (db *DB) ListCars(ctx context.Context, q yard.Query, page yard.Page, facets []string) (*yard.CarList, error) {
	ctx, span := db.span(ctx, "store.ListCars")
	defer span.End()
	where, args := CompileCarQuery(q, nil)
	out, err := db.carPage(ctx, where, args, page)
	if err != nil {
		return nil, err
	}
	l := &yard.CarList{Cars: out}
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM cars WHERE `+where, args...).Scan(&l.Total); err != nil {
		return nil, err
	}
	for _, f := range facets {
		fc, err := db.carFacet(ctx, f, where, args)
		if err != nil {
			return nil, err
		}
		l.Facets = append(l.Facets, fc)
	}
	return l, nil
}

// facetSQL maps a facet field to the query grouping the matching cars by
// it; %s is the WHERE condition. A garage's name is not on the car: the
// cars are grouped by garage first, and the groups by the garage's name.
var facetSQL = map[string]string{
	yard.FieldColor:       `SELECT color_key, COUNT(*) FROM cars WHERE %s GROUP BY color_key`,
	yard.FieldType:        `SELECT type_key, COUNT(*) FROM cars WHERE %s GROUP BY type_key`,
	yard.FieldDoors:       `SELECT CAST(doors AS TEXT), COUNT(*) FROM cars WHERE %s GROUP BY doors`,
	yard.FieldMake:        `SELECT make_key, COUNT(*) FROM cars WHERE %s GROUP BY make_key`,
	yard.FieldModel:       `SELECT model_key, COUNT(*) FROM cars WHERE %s GROUP BY model_key`,
	yard.FieldYear:        `SELECT CAST(year AS TEXT), COUNT(*) FROM cars WHERE %s GROUP BY year`,
	yard.FieldGarageID:    `SELECT garage_id, COUNT(*) FROM cars WHERE %s GROUP BY garage_id`,
	yard.FieldGarageState: `SELECT garage_state_key, COUNT(*) FROM cars WHERE %s GROUP BY garage_state_key`,
	yard.FieldGarageName: `SELECT g.name_key, SUM(x.n) FROM (SELECT garage_id, COUNT(*) AS n FROM cars WHERE %s GROUP BY garage_id) x
		LEFT JOIN garages g ON g.id = x.garage_id GROUP BY g.name_key`,
}

// carFacet counts the cars matching where per value of field. Every group
// is read and yard.SortFacet orders and cuts them, so both engines (and
// the index) order ties the same way whatever the database's collation.
func (db *DB) carFacet(ctx context.Context, field, where string, args []any) (yard.Facet, error) {
	text, ok := facetSQL[field]
	if !ok {
		return yard.Facet{}, yard.Invalid("Unknown facet field.", yard.FieldError{Field: "facets", Message: "unknown field " + field})
	}
	rows, err := db.read.QueryContext(ctx, fmt.Sprintf(text, where), args...)
	values, err := appendRows(nil, rows, err, func(row rowScanner) (yard.FacetValue, error) {
		var v sql.NullString
		var n int
		err := row.Scan(&v, &n)
		return yard.FacetValue{Value: v.String, Null: !v.Valid, Count: n}, err
	})
	if err != nil {
		return yard.Facet{}, err
	}
	fc := yard.Facet{Field: field, Values: values}
	yard.SortFacet(&fc)
	return fc, nil
}

// carPage runs the page query.
func (db *DB) carPage(ctx context.Context, where string, args []any, page yard.Page) ([]*yard.Car, error) {
	text, pageArgs := carPageSQL(db.engine, where, args, page)
	rows, err := db.Query(ctx, text, pageArgs...)
	return appendRows(make([]*yard.Car, 0, page.Max), rows, err, scanCar)
}

// carPageSQL returns the page query of a WHERE condition and its
// arguments. On SQLite, LIMIT and OFFSET are written into the text as
// numbers (they are ints, never client text): SQLite's planner looks at
// bound LIMIT values and re-prepares a statement whenever they are
// rebound, which doubled the cost of a page. PostgreSQL binds them.
func carPageSQL(engine, where string, args []any, page yard.Page) (string, []any) {
	head := `SELECT ` + carColumns + ` FROM cars WHERE ` + where + ` ORDER BY id`
	if engine == SQLite {
		return head + ` LIMIT ` + strconv.Itoa(page.Max) + ` OFFSET ` + strconv.Itoa(page.Offset), args
	}
	n := len(args)
	return head + ` LIMIT CAST($` + strconv.Itoa(n+1) + ` AS BIGINT) OFFSET $` + strconv.Itoa(n+2), append(append(make([]any, 0, n+2), args...), page.Max, page.Offset)
}

// CountCarsUncached counts the cars matching q (benchmarks and
// diagnostics).
func (db *DB) CountCarsUncached(ctx context.Context, q yard.Query) (int, error) {
	where, args := CompileCarQuery(q, nil)
	return scanValue[int](db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM cars WHERE `+where, args...))
}

// ExplainCars returns the engine's plan for the page query and the count
// query of q (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL), to
// show which indexes they use.
func (db *DB) ExplainCars(ctx context.Context, q yard.Query, page yard.Page) (string, error) {
	where, args := CompileCarQuery(q, nil)
	pageSQL, pageArgs := carPageSQL(db.engine, where, args, page)
	countSQL := `SELECT COUNT(*) FROM cars WHERE ` + where
	var b strings.Builder
	for _, stmt := range []struct {
		sql  string
		args []any
	}{{pageSQL, pageArgs}, {countSQL, args}} {
		b.WriteString(strings.Join(strings.Fields(stmt.sql), " ") + "\n")
		lines, err := db.explain(ctx, stmt.sql, stmt.args...)
		if err != nil {
			return "", err
		}
		for _, line := range lines {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String(), nil
}

// explain returns the engine's plan of one statement, a line per row
// (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL).
func (db *DB) explain(ctx context.Context, query string, args ...any) ([]string, error) {
	prefix := `EXPLAIN `
	if db.engine == SQLite {
		prefix = `EXPLAIN QUERY PLAN `
	}
	rows, err := queryValues(ctx, db.read, prefix+query, args...)
	lines := make([]string, len(rows))
	for i, vals := range rows {
		// SQLite: id, parent, notused, detail; PostgreSQL: one text column.
		lines[i] = strings.TrimSpace(fmt.Sprint(vals[len(vals)-1]))
		if raw, ok := vals[len(vals)-1].([]byte); ok {
			lines[i] = string(raw)
		}
	}
	return lines, err
}
