package store

import "github.com/yard-api/yard/internal/defaults"

// tuning is how the store cuts its bigger statements, and gathers its
// reads of cars, fixed when it is opened (WithCarReadBatching, and the
// options of the store's tests: export_test.go); a zero or negative field
// means its default.
type tuning struct {
	// importChunk is the rows of one multi-row INSERT of an import on
	// SQLite (defaultImportChunk); pgImportChunk those of one INSERT …
	// SELECT FROM unnest(…) on PostgreSQL (defaultPGImportChunk).
	importChunk, pgImportChunk int
	// eventWindow is the span of transaction ids one statement of a read
	// of several people's events covers on PostgreSQL
	// (defaultEventWindowPG).
	eventWindow int64
	// noCarBatch: each read of a car by id is its own query on
	// PostgreSQL, not gathered with others (carload.go).
	noCarBatch bool
}

// withDefaults returns t with each field left unset at its default.
func (t tuning) withDefaults() tuning {
	t.importChunk = defaults.Positive(t.importChunk, defaultImportChunk)
	t.pgImportChunk = defaults.Positive(t.pgImportChunk, defaultPGImportChunk)
	t.eventWindow = defaults.Positive(t.eventWindow, defaultEventWindowPG)
	return t
}

// WithCarReadBatching turns the gathering of concurrent reads of cars by
// id into one query on PostgreSQL (carload.go) on, the default, or off.
// Benchmarks turn it off to show what it saves.
func WithCarReadBatching(on bool) Option {
	return func(o *options) { o.tuning.noCarBatch = !on }
}
