package store

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// rowScanner is a row to read: *sql.Row or *sql.Rows.
type rowScanner = interface{ Scan(...any) error }

// findPage reads a page of a list and the list's length: how many rows
// from holds (a table and its WHERE clause, whose placeholders args fill),
// then cols of limit of them after offset, in order, each read by scan.
// Both go through the cache of prepared statements.
func findPage[T any](ctx context.Context, db *DB, cols, from, order string, args []any, limit, offset int,
	scan func(rowScanner) (T, error)) ([]T, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM `+from, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	rows, err := db.Query(ctx, `SELECT `+cols+` FROM `+from+` ORDER BY `+order+
		` LIMIT CAST($`+strconv.Itoa(n+1)+` AS BIGINT) OFFSET $`+strconv.Itoa(n+2), append(args[:n:n], limit, offset)...)
	out, err := appendRows(nil, rows, err, scan)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// appendRows appends every row of rows, each read by scan, to out, and
// closes rows; err is the query's (rows, err := QueryContext(…)), returned
// as it is.
func appendRows[T any](out []T, rows *sql.Rows, err error, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// queryValues runs query on db and returns its rows, each as the values
// of its columns, whatever their types.
func queryValues(ctx context.Context, db *sql.DB, query string, args ...any) ([][]any, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	cols, _ := rows.Columns() // fails only on closed rows
	return appendRows(nil, rows, nil, func(row rowScanner) ([]any, error) {
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		return vals, row.Scan(ptrs...)
	})
}

// scanValue reads a row of one column.
func scanValue[T any](row rowScanner) (T, error) {
	var v T
	err := row.Scan(&v)
	return v, err
}

// scanned is v, read by a Scan that returned err: nil and err when it
// failed.
func scanned[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// scanPair reads a row of two text columns.
func scanPair(row rowScanner) ([2]string, error) {
	var p [2]string
	err := row.Scan(&p[0], &p[1])
	return p, err
}

// pageMax is a filter's page size: yard.DefaultPageMax when it sets none.
func pageMax(limit int) int {
	return defaults.Positive(limit, yard.DefaultPageMax)
}
