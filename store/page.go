package store

import (
	"context"

	"github.com/yard-api/yard"
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
		` LIMIT CAST($`+itoa(n+1)+` AS BIGINT) OFFSET $`+itoa(n+2), append(args[:n:n], limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	return out, total, rows.Err()
}

// pageMax is a filter's page size: yard.DefaultPageMax when it sets none.
func pageMax(limit int) int {
	if limit <= 0 {
		return yard.DefaultPageMax
	}
	return limit
}
