package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/yard-api/yard"
)

const searchColumns = `id, name, query, created_by, created_at`

func scanSearch(row rowScanner) (*yard.Search, error) {
	var s yard.Search
	var name sql.NullString
	var query string
	if err := row.Scan(&s.ID, &name, &query, &s.CreatedBy, ms(&s.CreatedAt)); err != nil {
		return nil, err
	}
	s.Name = name.String
	// The stored text is the canonical rendering of a parsed query.
	q, _, err := yard.ParseCarQuery(query)
	if err != nil {
		return nil, err
	}
	s.Query = q
	return &s, nil
}

// CreateSearch stores a search; its name, when set, must be free (ignoring
// case) or the result is ECONFLICT.
func (db *DB) CreateSearch(ctx context.Context, s *yard.Search) error {
	defer db.trace(&ctx, "store.CreateSearch").End()
	if s.Name != "" && !yard.ValidSearchName(s.Name) {
		return yard.Invalid("The search name is not valid.", yard.FieldError{Field: "name", Message: "must be 1-64 letters, digits, '-', '_' or '.'"})
	}
	ensureID(&s.ID)
	return db.WithTx(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO searches (id, name, name_key, query, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			s.ID, nullString(s.Name), nullString(strings.ToLower(s.Name)), s.Query.String(), s.CreatedBy, Millis(tx.Now()))
		if err := conflictIf(err, "A search named %q exists.", s.Name); err != nil {
			return err
		}
		s.CreatedAt = FromMillis(Millis(tx.Now()))
		return nil
	})
}

// FindSearchByID returns a search, or ENOTFOUND.
func (db *DB) FindSearchByID(ctx context.Context, id string) (*yard.Search, error) {
	defer db.trace(&ctx, "store.FindSearchByID").End()
	s, err := scanSearch(db.read.QueryRowContext(ctx, `SELECT `+searchColumns+` FROM searches WHERE id = $1`, id))
	return s, notFound(err, "Search")
}

// FindSearchByName returns the search saved under name (ignoring case),
// or ENOTFOUND.
func (db *DB) FindSearchByName(ctx context.Context, name string) (*yard.Search, error) {
	defer db.trace(&ctx, "store.FindSearchByName").End()
	s, err := scanSearch(db.read.QueryRowContext(ctx, `SELECT `+searchColumns+` FROM searches WHERE name_key = $1`, strings.ToLower(name)))
	return s, notFound(err, "Search")
}

// FindSearches returns a page of searches in id (creation) order and
// their number.
func (db *DB) FindSearches(ctx context.Context, page yard.Page) ([]*yard.Search, int, error) {
	defer db.trace(&ctx, "store.FindSearches").End()
	return findPage(ctx, db, searchColumns, `searches`, `id`, nil, page.Max, page.Offset, scanSearch)
}

// DeleteSearch removes a search, or answers ENOTFOUND.
func (db *DB) DeleteSearch(ctx context.Context, id string) error {
	defer db.trace(&ctx, "store.DeleteSearch").End()
	return db.WithTx(ctx, func(tx *Tx) error {
		_, err := scanValue[string](tx.QueryRowContext(ctx, `DELETE FROM searches WHERE id = $1 RETURNING id`, id))
		return notFound(err, "Search")
	})
}
