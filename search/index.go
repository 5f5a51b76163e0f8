// Package search is the in-memory search index of cars: a projection of
// the store, never a second truth. It answers every car list from
// compressed bitmaps (github.com/RoaringBitmap/roaring/v2) through
// yard.CarLister, the interface the store's SQL path answers too, so
// either can serve a list and the tests hold one against the other.
//
// The index is fed by the store's commit-ordered changes: every write to
// cars or garages stamps the rows it writes (and a tombstone for each
// deletion) with its transaction's place in the commit order, the number
// its events carry (store.ReadCarChanges). Before answering, the index
// asks the store whether anything changed after the position it holds
// (one statement of three index probes) and, when it did, applies the
// changes. So a write answered before a query starts is visible to the
// query, whichever process wrote it. Until its first build is done, the
// index passes every list to the store (docs/cars.md, "The search
// index"). The index reads the store through Source, in domain types
// (yard.CarPosition, yard.CarChangeHandler); it does not import it.
//
// The files, by concern:
//
//   - index.go: Index, its build and its catch-up with the store (Sync).
//   - options.go: the options the tests change (export_test.go) to
//     force one of the strategies the index otherwise chooses between by
//     cost; a server runs with the defaults.
//   - data.go: the data proper, in named parts (the cars by position, the
//     interned strings, a bitmap per value, garage slots, columns), and
//     its changes (putCar, putGarage, ...).
//   - match.go: a query read as bitmaps (eachPart, parts, combine) and
//     number ranges as range-encoded bitmaps.
//   - plan.go: the planner (list): which strategy answers a list, and
//     its page.
//   - facets.go: facet counts, from a walk over a set of cars.
//   - dense.go: dense twins, plain bitsets of the common values, and the
//     list strategy that scans them; densescan.go: the scan itself.
//   - cross.go: cross counts, the start of a facet walk from a filter's
//     cars.
//   - cube.go: the facet cube, counts per combination of the few-valued
//     fields, which answers their facets without a walk.
//   - column.go, ids.go, probe.go: a field's value ids per car; the car
//     ids end to end; the probe for changes that concurrent lists share.
package search

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
)

// Source is what the index reads: the store's SQL path (the fallback
// while the index is built) and its change feed, in domain types.
// *store.DB is one.
type Source interface {
	yard.CarLister
	FindCarByID(ctx context.Context, id string) (*yard.Car, error)
	CarsChangedSince(ctx context.Context, since yard.CarPosition) (bool, error)
	ReadCarChanges(ctx context.Context, since yard.CarPosition, h yard.CarChangeHandler) (yard.CarPosition, error)
}

// quietSource is a Source that can tell, without a query, that nothing
// changed after a position (SQLite's WAL index: store.DB.CarsQuietSince).
// False means "ask CarsChangedSince".
type quietSource interface {
	CarsQuietSince(since yard.CarPosition) bool
}

// Index is the search index of cars. Its zero value is not usable; call
// New.
type Index struct {
	src    Source
	logger *slog.Logger

	ready atomic.Bool
	held  atomic.Pointer[yard.CarPosition] // the position of the store the index holds
	reads atomic.Int64                     // catch-up reads started

	probes     changeProbes
	syncMu     sync.Mutex   // one build or catch-up at a time
	caughtUpTo int64        // (syncMu) the number of the last catch-up read done
	mu         sync.RWMutex // guards the data below
	opts       options      // the options (options.go), which each data built takes
	d          *data
}

// New returns an index over src; it answers through src until Build (or
// Run) has built it.
func New(src Source, logger *slog.Logger, opts ...Option) *Index {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ix := &Index{src: src, logger: logger, opts: defaultOptions()}
	for _, o := range opts {
		o(&ix.opts)
	}
	return ix
}

// storeContext bounds ctx by the store wait (WithStoreWait) for a read
// that reaches the store, unless ctx already has a deadline.
func (ix *Index) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || ix.opts.storeWait <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, ix.opts.storeWait)
}

// Ready reports whether the index answers lists (else the store does).
func (ix *Index) Ready() bool { return ix.ready.Load() }

// Run builds the index, trying again every few seconds after a failure,
// and returns once it is built or ctx ends. Lists are answered by the
// store meanwhile; run it in the background.
func (ix *Index) Run(ctx context.Context) {
	for {
		err := ix.Build(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		ix.logger.Error("car search index build failed; car lists stay on SQL", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// Build reads every car and garage from the store into a new index and
// makes it answer lists. It logs how long it took.
func (ix *Index) Build(ctx context.Context) error {
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	start := time.Now()
	ix.mu.RLock()
	d := newData(ix.opts)
	ix.mu.RUnlock()
	// The store's rows are scanned in this goroutine and indexed in
	// another, in batches: on two cores the two halves overlap.
	batches := make(chan []*yard.Car, 8)
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		for b := range batches {
			for _, c := range b {
				d.putCar(c, true)
			}
		}
	}()
	batch := make([]*yard.Car, 0, 4096)
	at, err := ix.src.ReadCarChanges(ctx, yard.CarPosition{}, yard.CarChangeHandler{
		// Every garage comes before the first car (ReadCarChanges), so
		// garages are written before the indexing goroutine starts on cars.
		Garage: d.putGarage,
		Car: func(c *yard.Car) {
			if batch = append(batch, c); len(batch) == cap(batch) {
				batches <- batch
				batch = make([]*yard.Car, 0, 4096)
			}
		},
		CarDeleted:    func(string) {},
		GarageDeleted: func(string) {},
	})
	if len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	<-indexed
	if err != nil {
		return err
	}
	d.sortOrder()
	d.runOptimize()
	took := time.Since(start)
	ix.mu.Lock()
	d.opts = ix.opts
	ix.d = d
	ix.held.Store(&at)
	ix.mu.Unlock()
	ix.ready.Store(true)
	ix.logger.Info("car search index ready", "cars", d.cars.alive.GetCardinality(), "garages", len(d.garages.slotOf),
		"horizon", at.Horizon, "took_ms", took.Milliseconds())
	return nil
}

// Sync brings the index up to the store: it asks whether anything
// changed after the position it holds (sharing the probe with concurrent
// callers, changeProbes) and, when something did, applies the changes.
// After Sync returns, every write committed before it was called is in the
// index.
func (ix *Index) Sync(ctx context.Context) error {
	if !ix.ready.Load() {
		return nil // nothing to bring up to date; lists go to the store
	}
	if q, ok := ix.src.(quietSource); ok && q.CarsQuietSince(*ix.held.Load()) {
		return nil // read after the call began, like a probe that starts after it
	}
	ctx, cancel := ix.storeContext(ctx)
	defer cancel()
	arrived := ix.reads.Load()
	changed, err := ix.probes.read(ctx, ix.changed)
	if err != nil || !changed {
		return err
	}
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	if ix.caughtUpTo > arrived {
		return nil // a read that began after this call did the work meanwhile
	}
	n := ix.reads.Add(1)
	// Changes are applied in chunks, each under the write lock, so a
	// large catch-up (an import elsewhere) does not stall readers for
	// its whole length. Readers that need this catch-up wait on syncMu.
	var cars []*yard.Car
	flush := func() {
		if len(cars) == 0 {
			return
		}
		ix.mu.Lock()
		for _, c := range cars {
			ix.d.putCar(c, false)
		}
		ix.mu.Unlock()
		cars = cars[:0]
	}
	locked := func(fn func()) {
		flush()
		ix.mu.Lock()
		fn()
		ix.mu.Unlock()
	}
	got, err := ix.src.ReadCarChanges(ctx, *ix.held.Load(), yard.CarChangeHandler{
		Garage: func(g *yard.Garage) { locked(func() { ix.d.putGarage(g) }) },
		Car: func(c *yard.Car) {
			if cars = append(cars, c); len(cars) == 4096 {
				flush()
			}
		},
		CarDeleted:    func(id string) { locked(func() { ix.d.deleteCar(id) }) },
		GarageDeleted: func(id string) { locked(func() { ix.d.deleteGarage(id) }) },
	})
	flush()
	if err != nil {
		// What was applied is newer than the position held, and applying
		// it again is harmless: the next call starts from the same place.
		return err
	}
	ix.held.Store(&got)
	ix.caughtUpTo = n
	return nil
}

// changed is the probe of Sync.
func (ix *Index) changed(ctx context.Context) (bool, error) {
	return ix.src.CarsChangedSince(ctx, *ix.held.Load())
}

// ListCars answers a car list from the index, after Sync; before the
// index is built, the store answers.
func (ix *Index) ListCars(ctx context.Context, q yard.Query, page yard.Page, facets []string) (*yard.CarList, error) {
	if !ix.ready.Load() {
		ctx, cancel := ix.storeContext(ctx)
		defer cancel()
		return ix.src.ListCars(ctx, q, page, facets)
	}
	if err := ix.Sync(ctx); err != nil {
		return nil, err
	}
	for _, f := range facets {
		if _, ok := yard.FieldKindOf(f); !ok {
			return nil, yard.Invalid("Unknown facet field.", yard.FieldError{Field: "facets", Message: "unknown field " + f})
		}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.d.list(q, page, facets), nil
}

// FindCarByID answers one car from the index, after Sync, so a car
// written before the call is seen as written; before the index is built,
// the store answers. Its error is the store's: ENOTFOUND for an id no car
// has.
func (ix *Index) FindCarByID(ctx context.Context, id string) (*yard.Car, error) {
	if !ix.ready.Load() {
		ctx, cancel := ix.storeContext(ctx)
		defer cancel()
		return ix.src.FindCarByID(ctx, id)
	}
	if err := ix.Sync(ctx); err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if p, ok := ix.d.position(id); ok && ix.d.cars.alive.Contains(p) {
		return ix.d.car(p), nil
	}
	return nil, yard.Errorf(yard.ENOTFOUND, "Car not found.")
}

// Stats describes the index.
type Stats struct {
	Cars, Garages int
	Horizon       int64  // of the position held (yard.CarPosition)
	BitmapBytes   uint64 // serialized size of every bitmap
}

// Stats returns the index's size.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.d == nil {
		return Stats{}
	}
	st := Stats{Cars: int(ix.d.cars.alive.GetCardinality()), Garages: len(ix.d.garages.slotOf), Horizon: ix.held.Load().Horizon}
	for _, b := range ix.d.allBitmaps() {
		st.BitmapBytes += b.GetSizeInBytes()
	}
	return st
}
