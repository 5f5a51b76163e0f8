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
// index").
package search

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
)

// Source is what the index reads: the store's SQL path (the fallback
// while the index is built) and its change feed. *store.DB is one.
type Source interface {
	yard.CarLister
	CarsChangedSince(ctx context.Context, since store.CarPosition) (bool, error)
	ReadCarChanges(ctx context.Context, since store.CarPosition, h store.CarChangeHandler) (store.CarPosition, error)
}

var _ Source = (*store.DB)(nil)

// Index is the search index of cars. Its zero value is not usable; call
// New.
type Index struct {
	src    Source
	logger *slog.Logger

	ready     atomic.Bool
	held      atomic.Pointer[store.CarPosition] // the position of the store the index holds
	buildTime atomic.Int64                      // nanoseconds the first build took
	reads     atomic.Int64                      // catch-up reads started

	probes     changeProbes
	syncMu     sync.Mutex   // one build or catch-up at a time
	caughtUpTo int64        // (syncMu) the number of the last catch-up read done
	mu         sync.RWMutex // guards the data below
	d          *data
}

// text fields of a car, in carRec.text order.
var textFields = [...]string{yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel}

// data is the index proper. A car has a dense position; every value of
// every field has a bitmap of the positions holding it. Garages have a
// slot and a bitmap of their cars, so renaming a garage or moving it to
// another state touches one garage's bitmap, not its cars.
type data struct {
	ids     idList          // position → car id (kept after a deletion: a re-created id gets its position back)
	recs    []carRec        // position → fields
	alive   *roaring.Bitmap // positions of existing cars
	order   []uint32        // every position, sorted by car id; also the map from id to position
	inOrder bool            // order[i] == i: positions are in id order

	strs  []string          // interned strings: car field values as written, and their keys
	strID map[string]uint32 // string → index in strs
	keyOf []uint32          // string index → index of its key (lower case)

	text  [len(textFields)]map[uint32]*roaring.Bitmap // key string index → cars
	doors map[int64]*roaring.Bitmap
	years map[int64]*roaring.Bitmap

	// Columns for facets: per position, the id of its value in each field
	// (text: an index into keyIDs, numbers: into numVal), so a walk over
	// matching cars reads a byte or two per car and field, in order.
	keyCol [len(textFields)]column
	keyID  [len(textFields)]map[uint32]uint32 // key string index → id
	keyIDs [len(textFields)][]uint32          // id → key string index
	numCol [2]column                          // doors, year
	numID  [2]map[int64]uint32
	numVal [2][]int64

	// cum holds, per numeric field, the cars with a value up to each
	// value (range-encoded bitmaps), built on the first range query after
	// a change; a range is then one bitmap less another.
	cumMu sync.Mutex
	cum   [2]*cumulative

	tw    twins     // dense twins of the common values (dense.go)
	cross crossTabs // cross counts of the column fields (cross.go)

	garages  []garageRec       // slot → garage; slot 0 is "no garage"
	slotOf   map[string]uint32 // garage id → slot
	free     []uint32          // slots of deleted garages
	names    map[string]*roaring.Bitmap
	states   map[string]*roaring.Bitmap
	noGarage *roaring.Bitmap
}

// carRec holds a car's fields; text values as string indexes.
type carRec struct {
	text             [len(textFields)]uint32
	doors            int32
	year             int32
	garage           uint32 // slot, 0 for no garage
	created, updated int64  // Unix milliseconds
}

type garageRec struct {
	id                string
	nameKey, stateKey string
	cars              *roaring.Bitmap
	used              bool
}

func newData() *data {
	d := &data{
		alive: roaring.New(), inOrder: true,
		strID: map[string]uint32{}, doors: map[int64]*roaring.Bitmap{}, years: map[int64]*roaring.Bitmap{},
		numID:   [2]map[int64]uint32{{}, {}},
		keyID:   [len(textFields)]map[uint32]uint32{{}, {}, {}, {}},
		garages: []garageRec{{}}, slotOf: map[string]uint32{},
		names: map[string]*roaring.Bitmap{}, states: map[string]*roaring.Bitmap{}, noGarage: roaring.New(),
	}
	for i := range d.text {
		d.text[i] = map[uint32]*roaring.Bitmap{}
	}
	return d
}

// New returns an index over src; it answers through src until Build (or
// Start) has built it.
func New(src Source, logger *slog.Logger) *Index {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Index{src: src, logger: logger}
}

// Ready reports whether the index answers lists (else the store does).
func (ix *Index) Ready() bool { return ix.ready.Load() }

// BuildTime returns how long the first build took (0 before it is done).
func (ix *Index) BuildTime() time.Duration { return time.Duration(ix.buildTime.Load()) }

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
	d := newData()
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
	at, err := ix.src.ReadCarChanges(ctx, store.CarPosition{}, store.CarChangeHandler{
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
	ix.d = d
	ix.held.Store(&at)
	ix.mu.Unlock()
	ix.buildTime.Store(int64(took))
	ix.ready.Store(true)
	ix.logger.Info("car search index ready", "cars", d.alive.GetCardinality(), "garages", len(d.slotOf),
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
	got, err := ix.src.ReadCarChanges(ctx, *ix.held.Load(), store.CarChangeHandler{
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

// Stats describes the index.
type Stats struct {
	Cars, Garages int
	Horizon       int64  // of the position held (store.CarPosition)
	BitmapBytes   uint64 // serialized size of every bitmap
}

// Stats returns the index's size.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.d == nil {
		return Stats{}
	}
	st := Stats{Cars: int(ix.d.alive.GetCardinality()), Garages: len(ix.d.slotOf), Horizon: ix.held.Load().Horizon}
	for _, b := range ix.d.allBitmaps() {
		st.BitmapBytes += b.GetSizeInBytes()
	}
	return st
}

// --- maintenance -------------------------------------------------------------

func (d *data) allBitmaps() []*roaring.Bitmap {
	out := []*roaring.Bitmap{d.alive, d.noGarage}
	for _, m := range d.text {
		for _, b := range m {
			out = append(out, b)
		}
	}
	for _, m := range []map[int64]*roaring.Bitmap{d.doors, d.years} {
		for _, b := range m {
			out = append(out, b)
		}
	}
	for _, m := range []map[string]*roaring.Bitmap{d.names, d.states} {
		for _, b := range m {
			out = append(out, b)
		}
	}
	for _, g := range d.garages {
		if g.cars != nil {
			out = append(out, g.cars)
		}
	}
	return out
}

// runOptimize compresses the bitmaps that runs make smaller, except the
// live cars': a query with exclusions only starts from a copy of it, and
// removing cars from a run container converts it range by range (a
// container of 65,536 live cars less a colour's took milliseconds).
func (d *data) runOptimize() {
	for _, b := range d.allBitmaps() {
		if b != d.alive {
			b.RunOptimize()
		}
	}
}

// intern returns the index of s (a car's value as written), interning it
// and its key.
func (d *data) intern(s string) uint32 {
	if i, ok := d.strID[s]; ok {
		return i
	}
	i := d.add(s)
	key := strings.ToLower(s)
	k, ok := d.strID[key]
	if !ok {
		k = d.add(key)
		d.keyOf[k] = k
	}
	d.keyOf[i] = k
	return i
}

func (d *data) add(s string) uint32 {
	i := uint32(len(d.strs))
	d.strs = append(d.strs, s)
	d.keyOf = append(d.keyOf, i)
	d.strID[s] = i
	return i
}

// keyIDOf returns the column id of key k (a string index) of text field
// f.
func (d *data) keyIDOf(f int, k uint32) uint32 { return columnID(d.keyID[f], &d.keyIDs[f], k) }

// numIDOf returns the column id of number v of numeric field f (0 doors,
// 1 year).
func (d *data) numIDOf(f int, v int64) uint32 { return columnID(d.numID[f], &d.numVal[f], v) }

// columnID returns the id of v in a column (ids: value → id, vals: id →
// value), appending v when the column does not have it yet.
func columnID[V comparable](ids map[V]uint32, vals *[]V, v V) uint32 {
	if id, ok := ids[v]; ok {
		return id
	}
	id := uint32(len(*vals))
	*vals = append(*vals, v)
	ids[v] = id
	return id
}

func bitmapOf[K comparable](m map[K]*roaring.Bitmap, k K) *roaring.Bitmap {
	b := m[k]
	if b == nil {
		b = roaring.New()
		m[k] = b
	}
	return b
}

// putGarage adds a garage or applies a new name and state to it: its cars
// move between the name and state bitmaps in one operation each.
func (d *data) putGarage(g *yard.Garage) {
	name, state := strings.ToLower(g.Name), strings.ToLower(g.State)
	slot := d.slot(g.ID)
	gr := &d.garages[slot]
	if gr.nameKey != name {
		d.moveCars(d.names, gr.nameKey, name, gr.cars)
		gr.nameKey = name
	}
	if gr.stateKey != state {
		d.moveCars(d.states, gr.stateKey, state, gr.cars)
		gr.stateKey = state
	}
}

// moveCars moves the cars from set m[from] to m[to].
func (d *data) moveCars(m map[string]*roaring.Bitmap, from, to string, cars *roaring.Bitmap) {
	if cars.IsEmpty() {
		return
	}
	if b := m[from]; b != nil {
		d.andNotFrom(b, cars)
		if b.IsEmpty() {
			delete(m, from)
			d.forget(b)
		}
	}
	d.orInto(bitmapOf(m, to), cars)
}

// slot returns the slot of a garage id, making one when it is new.
func (d *data) slot(id string) uint32 {
	if s, ok := d.slotOf[id]; ok {
		return s
	}
	var s uint32
	if n := len(d.free); n > 0 {
		s, d.free = d.free[n-1], d.free[:n-1]
	} else {
		s = uint32(len(d.garages))
		d.garages = append(d.garages, garageRec{})
	}
	d.garages[s] = garageRec{id: id, cars: roaring.New(), used: true}
	d.slotOf[id] = s
	return s
}

// deleteGarage forgets a garage; the store deletes only empty ones.
func (d *data) deleteGarage(id string) {
	s, ok := d.slotOf[id]
	if !ok {
		return
	}
	gr := d.garages[s]
	if !gr.cars.IsEmpty() { // cannot happen: the store refuses it
		d.moveCars(d.names, gr.nameKey, "", gr.cars)
		d.moveCars(d.states, gr.stateKey, "", gr.cars)
	}
	delete(d.slotOf, id)
	d.forget(gr.cars)
	d.garages[s] = garageRec{}
	d.free = append(d.free, s)
}

// search returns where id is or belongs in the order, and whether it is
// there: a binary search over the ids instead of a map from id to
// position (which would cost some 40 bytes per car).
func (d *data) search(id string) (int, bool) {
	return slices.BinarySearchFunc(d.order, id, func(q uint32, id string) int { return strings.Compare(d.ids.at(q), id) })
}

// putCar adds a car or applies its new fields. building says the car is
// new (the first build reads each id once), and order is sorted once at
// the end instead of at each car.
func (d *data) putCar(c *yard.Car, building bool) {
	var p uint32
	at, known := len(d.order), false
	if !building {
		if at, known = d.search(c.ID); known {
			p = d.order[at]
		}
	}
	switch {
	case !known:
		p = uint32(d.ids.len())
		d.ids.add(c.ID)
		d.recs = append(d.recs, carRec{})
		for i := range d.keyCol {
			d.keyCol[i].grow()
		}
		for i := range d.numCol {
			d.numCol[i].grow()
		}
		if at == len(d.order) {
			d.order = append(d.order, p) // the greatest id so far: order stays i → i
		} else {
			d.order = slices.Insert(d.order, at, p)
			d.inOrder = false
		}
	case d.alive.Contains(p):
		d.unindex(p)
	}
	r := carRec{doors: int32(c.Doors), year: int32(c.Year), created: store.Millis(c.CreatedAt), updated: store.Millis(c.UpdatedAt)}
	for i, v := range [...]string{c.Color, c.Type, c.Make, c.Model} {
		r.text[i] = d.intern(v)
	}
	if c.Garage != "" {
		r.garage = d.slot(c.Garage)
	}
	d.recs[p] = r
	d.index(p)
}

// sortOrder sorts the order after a build, when the store's id order
// differs from byte order (a PostgreSQL database with another collation
// than C).
func (d *data) sortOrder() {
	less := func(a, b uint32) int { return strings.Compare(d.ids.at(a), d.ids.at(b)) }
	if !slices.IsSortedFunc(d.order, less) {
		slices.SortFunc(d.order, less)
		d.inOrder = false
	}
}

func (d *data) deleteCar(id string) {
	if at, ok := d.search(id); ok && d.alive.Contains(d.order[at]) {
		d.unindex(d.order[at])
	}
}

// index adds position p to the bitmaps of its values.
func (d *data) index(p uint32) {
	r := &d.recs[p]
	for i, s := range r.text {
		d.addTo(bitmapOf(d.text[i], d.keyOf[s]), p)
		d.keyCol[i].set(p, d.keyIDOf(i, d.keyOf[s]))
	}
	d.addTo(bitmapOf(d.doors, int64(r.doors)), p)
	d.addTo(bitmapOf(d.years, int64(r.year)), p)
	d.cumChange(0, int64(r.doors), p, true)
	d.cumChange(1, int64(r.year), p, true)
	d.numCol[0].set(p, d.numIDOf(0, int64(r.doors)))
	d.numCol[1].set(p, d.numIDOf(1, int64(r.year)))
	d.cum = [2]*cumulative{}
	if r.garage == 0 {
		d.addTo(d.noGarage, p)
	} else {
		g := &d.garages[r.garage]
		d.addTo(g.cars, p)
		d.addTo(bitmapOf(d.names, g.nameKey), p)
		d.addTo(bitmapOf(d.states, g.stateKey), p)
	}
	d.addTo(d.alive, p)
	d.crossAdd(p, false)
}

// unindex removes position p from every bitmap.
func (d *data) unindex(p uint32) {
	r := &d.recs[p]
	for i, s := range r.text {
		removeFrom(d, d.text[i], d.keyOf[s], p)
	}
	removeFrom(d, d.doors, int64(r.doors), p)
	removeFrom(d, d.years, int64(r.year), p)
	d.cumChange(0, int64(r.doors), p, false)
	d.cumChange(1, int64(r.year), p, false)
	d.cum = [2]*cumulative{}
	if r.garage == 0 {
		d.removeAt(d.noGarage, p)
	} else {
		g := &d.garages[r.garage]
		d.removeAt(g.cars, p)
		removeFrom(d, d.names, g.nameKey, p)
		removeFrom(d, d.states, g.stateKey, p)
	}
	d.removeAt(d.alive, p)
	d.crossAdd(p, true)
}

// removeFrom removes p from m[k], and m[k] from m when it is left empty.
func removeFrom[K comparable](d *data, m map[K]*roaring.Bitmap, k K, p uint32) {
	if b := m[k]; b != nil {
		d.removeAt(b, p)
		if b.IsEmpty() {
			delete(m, k)
			d.forget(b)
		}
	}
}

// --- queries -------------------------------------------------------------------

// force overrides the choices between equivalent strategies, so tests
// hold each against the SQL path: facets "walk" or "complement", page
// "walk" or "gather" (also when positions are in id order).
var force struct{ facets, page, match string }

// list answers one car list; call with the read lock held.
func (d *data) list(q yard.Query, page yard.Page, facets []string) *yard.CarList {
	if l, ok := d.listDense(q, page, facets); ok {
		return l
	}
	alive := d.alive.GetCardinality()
	incl, excl := d.parts(q)
	var ps []uint32
	var total uint64
	var set *roaring.Bitmap // the cars a facet walk visits
	complement := false
	var base *crossBase // when set, the walk's cars are base's cars that do not match
	if len(incl) == 0 && len(excl) > 0 && d.inOrder && force.page == "" && force.match != "bitmaps" {
		// Only exclusions: the matches are the live cars less their
		// union u, which is never made. The exclusions' bitmaps hold
		// live cars only, so the total is a difference of sizes; the
		// page is the first live cars not in u (when most cars match,
		// about as many tests as the offset and the page); facets walk
		// u when it is the smaller side.
		u := union(excl)
		total = alive - u.GetCardinality()
		if total > alive/2 {
			ps = d.pageExcluding(u, total, page)
			if len(facets) > 0 {
				set, complement = u, true
				if force.facets == "walk" {
					set, complement = roaring.AndNot(d.alive, u), false
				}
				// The base's cars that do not match are those in u.
				if b, s := d.crossWalk(q, facets, total, func(b *roaring.Bitmap) *roaring.Bitmap { return roaring.And(b, u) }); b != nil {
					set, base = s, b
				}
			}
			return d.answer(ps, total, facets, bitmapWalker(set), complement, base)
		}
	}
	m := d.combine(incl, excl)
	total = m.GetCardinality()
	ps = d.page(m, total, page)
	if len(facets) > 0 {
		complement = total > alive/2
		if force.facets != "" {
			complement = force.facets == "complement"
		}
		set = m
		if b, s := d.crossWalk(q, facets, total, func(b *roaring.Bitmap) *roaring.Bitmap { return roaring.AndNot(b, m) }); b != nil {
			set, base = s, b
		} else if complement {
			set = roaring.AndNot(d.alive, m) // not in place: see combine
		}
	}
	return d.answer(ps, total, facets, bitmapWalker(set), complement, base)
}

// answer makes the list of the cars at positions ps, with its total and
// the facets counted over set: the matches, or when complement the live
// cars that do not match, or when base is set the base's cars that do not
// match (cross.go).
func (d *data) answer(ps []uint32, total uint64, facets []string, set walker, complement bool, base *crossBase) *yard.CarList {
	l := &yard.CarList{Total: int(total), Cars: make([]*yard.Car, 0, len(ps))}
	for _, p := range ps {
		l.Cars = append(l.Cars, d.car(p))
	}
	if len(facets) > 0 {
		l.Facets = d.facets(facets, set, complement, base)
	}
	return l
}

// pageExcluding returns the page's positions when the matches are the
// live cars not in u and positions are in id order.
func (d *data) pageExcluding(u *roaring.Bitmap, total uint64, page yard.Page) []uint32 {
	if page.Max <= 0 || uint64(page.Offset) >= total {
		return nil
	}
	want := min(uint64(page.Max), total-uint64(page.Offset))
	out := make([]uint32, 0, want)
	skip := page.Offset
	it := d.alive.Iterator()
	for it.HasNext() && uint64(len(out)) < want {
		p := it.Next()
		if u.Contains(p) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *data) car(p uint32) *yard.Car {
	r := &d.recs[p]
	c := &yard.Car{ID: d.ids.at(p), Color: d.strs[r.text[0]], Type: d.strs[r.text[1]], Make: d.strs[r.text[2]], Model: d.strs[r.text[3]],
		Doors: int(r.doors), Year: int(r.year), CreatedAt: store.FromMillis(r.created), UpdatedAt: store.FromMillis(r.updated)}
	if r.garage != 0 {
		c.Garage = d.garages[r.garage].id
	}
	return c
}

// match returns the positions of the cars matching q: the intersection,
// over the filters, of the union of the bitmaps of the values asked for,
// less the union of those excluded. The stored bitmaps are never
// changed; the result may be one of them (a query of one value), so the
// caller must not change it either.
func (d *data) match(q yard.Query) *roaring.Bitmap {
	return d.combine(d.parts(q))
}

// eachPart walks q as the index reads it, filter by filter: for each
// filter asking for values (or null, on a garage path), in gets the
// bitmaps of those values (the cars in no garage for null); out gets the
// bitmap of each value excluded (the cars in no garage for not null), and
// ranged each filter with bounds. Values no live car holds have no bitmap
// and are left out. parts and dense (dense.go) read queries through it.
func (d *data) eachPart(q yard.Query, in func(any []*roaring.Bitmap), out func(b *roaring.Bitmap), ranged func(f yard.Filter)) {
	held := func(b *roaring.Bitmap) bool { return b != nil && !b.IsEmpty() }
	for _, f := range q.Filters {
		if len(f.In) > 0 || f.Null {
			var any []*roaring.Bitmap
			for _, v := range f.In {
				if b := d.valueBitmap(f.Field, v); held(b) {
					any = append(any, b)
				}
			}
			if f.Null && isGarageField(f.Field) && held(d.noGarage) {
				any = append(any, d.noGarage)
			}
			in(any)
		}
		for _, v := range f.NotIn {
			if b := d.valueBitmap(f.Field, v); held(b) {
				out(b)
			}
		}
		if f.NotNull && isGarageField(f.Field) && held(d.noGarage) {
			out(d.noGarage)
		}
		if len(f.Ranges) > 0 {
			ranged(f)
		}
	}
}

// parts returns the bitmaps a query's matches are the intersection of
// (incl) and those it removes from it (excl); none is to be changed.
func (d *data) parts(q yard.Query) (incl, excl []*roaring.Bitmap) {
	d.eachPart(q,
		func(any []*roaring.Bitmap) { incl = append(incl, union(any)) },
		func(b *roaring.Bitmap) { excl = append(excl, b) },
		func(f yard.Filter) {
			in, out := d.rangeBitmaps(f)
			if in != nil {
				incl = append(incl, in)
			}
			if out != nil {
				excl = append(excl, out)
			}
		})
	return incl, excl
}

// combine returns the intersection of incl (every live car for none) less
// the union of excl: see match.
func (d *data) combine(incl, excl []*roaring.Bitmap) *roaring.Bitmap {
	var m *roaring.Bitmap
	switch len(incl) {
	case 0, 1:
		// One bitmap less the union of the exclusions, in one operation
		// that makes a new bitmap (the live cars' full containers are
		// runs, as roaring makes a full container one, and taking cars
		// out of a run in place is slow); with no exclusion, the bitmap
		// itself, not a copy.
		base := d.alive
		if len(incl) == 1 {
			base = incl[0]
		}
		if len(excl) == 0 {
			return base
		}
		return roaring.AndNot(base, union(excl))
	default:
		// Smallest first: each AND then works on less.
		slices.SortFunc(incl, func(a, b *roaring.Bitmap) int { return cmp.Compare(a.GetCardinality(), b.GetCardinality()) })
		m = roaring.FastAnd(incl...)
	}
	for _, b := range excl {
		if m.IsEmpty() {
			break
		}
		m.AndNot(b)
	}
	return m
}

func isGarageField(f string) bool { return strings.HasPrefix(f, "garage.") }

// union returns the union of bs; the result may be one of bs, so it must
// not be changed.
func union(bs []*roaring.Bitmap) *roaring.Bitmap {
	switch len(bs) {
	case 0:
		return roaring.New()
	case 1:
		return bs[0]
	}
	return roaring.FastOr(bs...)
}

// valueBitmap returns the cars whose field holds value v (in its matching
// form, as the parser gives it), or nil for none.
func (d *data) valueBitmap(field, v string) *roaring.Bitmap {
	switch field {
	case yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel:
		k, ok := d.strID[v]
		if !ok {
			return nil
		}
		return d.text[textIndex(field)][k]
	case yard.FieldDoors, yard.FieldYear:
		n, ok := parseInt(v)
		if !ok {
			return nil
		}
		if field == yard.FieldDoors {
			return d.doors[n]
		}
		return d.years[n]
	case yard.FieldGarageID:
		if s, ok := d.slotOf[v]; ok {
			return d.garages[s].cars
		}
		return nil
	case yard.FieldGarageName:
		return d.names[v]
	case yard.FieldGarageState:
		return d.states[v]
	}
	return nil
}

func textIndex(field string) int {
	for i, f := range textFields {
		if f == field {
			return i
		}
	}
	return -1
}

func parseInt(s string) (int64, bool) {
	var n int64
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// cumulative is a numeric field's range encoding: upTo[i] holds the cars
// whose value is at most vals[i] (vals sorted).
type cumulative struct {
	vals []int64
	upTo []*roaring.Bitmap
}

// cumulativeOf returns the range encoding of numeric field f (0 doors,
// 1 year), building it after a change. Readers share the read lock, so
// cumMu makes one of them build it.
func (d *data) cumulativeOf(f int) *cumulative {
	d.cumMu.Lock()
	defer d.cumMu.Unlock()
	if c := d.cum[f]; c != nil {
		return c
	}
	m := d.doors
	if f == 1 {
		m = d.years
	}
	c := &cumulative{}
	for v := range m {
		c.vals = append(c.vals, v)
	}
	slices.Sort(c.vals)
	acc := roaring.New()
	for _, v := range c.vals {
		acc = roaring.Or(acc, m[v])
		c.upTo = append(c.upTo, acc)
	}
	d.cum[f] = c
	return c
}

// rangeBitmaps returns the cars whose number lies within every bound of
// f as a bitmap to include (nil for every car), less one to exclude (nil
// for none): with the bounds as [lo, hi], the cars up to hi less the cars
// below lo.
func (d *data) rangeBitmaps(f yard.Filter) (in, out *roaring.Bitmap) {
	field, lo, hi, empty := rangeOf(f)
	if empty {
		return roaring.New(), nil
	}
	c := d.cumulativeOf(field)
	iLo, iHi, empty := valueSpan(c.vals, lo, hi)
	if empty {
		return roaring.New(), nil
	}
	if iLo >= 0 {
		out = c.upTo[iLo]
	}
	if iHi == len(c.vals)-1 {
		// No upper bound: every car is up to the greatest value. Leaving
		// it out also keeps the match off that bitmap's full containers,
		// which roaring holds as runs; taking a run from a run is slow.
		return nil, out
	}
	return c.upTo[iHi], out
}

// rangeOf returns the numeric field of f (0 doors, 1 year) and f's bounds
// as [lo, hi]; empty when no number fits them (or f is on another field).
func rangeOf(f yard.Filter) (field int, lo, hi int64, empty bool) {
	switch f.Field {
	case yard.FieldDoors:
		field = 0
	case yard.FieldYear:
		field = 1
	default:
		return 0, 0, 0, true
	}
	lo, hi = math.MinInt64, math.MaxInt64
	for _, r := range f.Ranges {
		switch r.Op {
		case yard.OpLt:
			if r.Value == math.MinInt64 {
				return field, 0, 0, true
			}
			hi = min(hi, r.Value-1)
		case yard.OpLe:
			hi = min(hi, r.Value)
		case yard.OpGt:
			if r.Value == math.MaxInt64 {
				return field, 0, 0, true
			}
			lo = max(lo, r.Value+1)
		case yard.OpGe:
			lo = max(lo, r.Value)
		}
	}
	return field, lo, hi, lo > hi
}

// valueSpan returns, in the sorted values vals, iLo (the last value below
// lo, -1 for none) and iHi (the last value up to hi); empty when no value
// lies in [lo, hi].
func valueSpan(vals []int64, lo, hi int64) (iLo, iHi int, empty bool) {
	iHi, found := slices.BinarySearch(vals, hi)
	if !found {
		iHi--
	}
	iLo, _ = slices.BinarySearch(vals, lo)
	iLo--
	return iLo, iHi, iHi < 0 || iHi <= iLo || lo > hi
}

// page returns the positions of the page's cars in id order. When
// positions are in id order, the page is read straight off m from its
// offset-th member. Otherwise it either walks the positions in id order
// testing membership (cheap when matches are dense: about
// (offset+max)·n/total tests) or gathers every match and sorts them by id
// (cheap when they are few), whichever costs less.
func (d *data) page(m *roaring.Bitmap, total uint64, page yard.Page) []uint32 {
	if page.Max <= 0 || uint64(page.Offset) >= total {
		return nil
	}
	want := min(uint64(page.Max), total-uint64(page.Offset))
	out := make([]uint32, 0, want)
	if d.inOrder && force.page == "" {
		first, err := m.Select(uint32(page.Offset))
		if err != nil {
			return nil
		}
		it := m.Iterator()
		it.AdvanceIfNeeded(first)
		for it.HasNext() && uint64(len(out)) < want {
			out = append(out, it.Next())
		}
		return out
	}
	n := uint64(len(d.order))
	need := uint64(page.Offset) + want
	walk := need * n / total
	gather := total * uint64(bitsLen(total)+1) * 4 // a sort compares strings
	if force.page != "" {
		walk, gather = 0, 0
		if force.page == "gather" {
			walk = 1
		}
	}
	if walk <= gather {
		skip := page.Offset
		for _, p := range d.order {
			if !m.Contains(p) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if out = append(out, p); uint64(len(out)) == want {
				break
			}
		}
		return out
	}
	all := m.ToArray()
	slices.SortFunc(all, func(a, b uint32) int { return strings.Compare(d.ids.at(a), d.ids.at(b)) })
	return append(out, all[page.Offset:uint64(page.Offset)+want]...)
}

func bitsLen(x uint64) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// facets counts the matches per value of each field, in one walk over
// the matching cars reading their value ids from the columns. When more
// than half the cars match, it walks the cars that do not match instead
// and subtracts their counts from each value's whole count (a bitmap's
// cardinality): the walk never covers more than half the cars.
//
// With a base (cross.go), set holds the base's cars that do not match, and
// a value's count is the base's cross count less those walked.
func (d *data) facets(fields []string, set walker, complement bool, base *crossBase) []yard.Facet {
	type counter struct {
		field  string
		col    *column // nil for the garage fields (slots)
		counts []uint64
	}
	cs := make([]*counter, len(fields))
	for i, f := range fields {
		c := &counter{field: f}
		switch f {
		case yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel:
			t := textIndex(f)
			c.col, c.counts = &d.keyCol[t], make([]uint64, len(d.keyIDs[t]))
		case yard.FieldDoors:
			c.col, c.counts = &d.numCol[0], make([]uint64, len(d.numVal[0]))
		case yard.FieldYear:
			c.col, c.counts = &d.numCol[1], make([]uint64, len(d.numVal[1]))
		default:
			c.counts = make([]uint64, len(d.garages))
		}
		cs[i] = c
	}
	var slots []uint64 // counts per garage slot, shared by the garage fields
	for _, c := range cs {
		if c.col == nil {
			slots = c.counts
		}
	}
	set(func(ps []uint32) {
		for _, c := range cs {
			if c.col == nil {
				continue
			}
			c.col.count(ps, c.counts)
		}
		if slots != nil {
			for _, p := range ps {
				slots[d.recs[p].garage]++
			}
		}
	})
	out := make([]yard.Facet, len(cs))
	for i, c := range cs {
		fc := yard.Facet{Field: c.field}
		add := func(v string, null bool, n uint64) {
			if n > 0 {
				fc.Values = append(fc.Values, yard.FacetValue{Value: v, Null: null, Count: int(n)})
			}
		}
		// count returns the matches of a value: walked, or its whole
		// count less the non-matches walked.
		count := func(walked uint64, g int, j uint32, all func() uint64) uint64 {
			if base != nil {
				return base.count(&d.cross, g, j) - walked
			}
			if complement {
				return all() - walked
			}
			return walked
		}
		switch c.field {
		case yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel:
			t := textIndex(c.field)
			for k, b := range d.text[t] {
				j := d.keyID[t][k]
				add(d.strs[k], false, count(c.counts[j], t, j, b.GetCardinality))
			}
		case yard.FieldDoors, yard.FieldYear:
			f, bms := 0, d.doors
			if c.field == yard.FieldYear {
				f, bms = 1, d.years
			}
			for v, b := range bms {
				j := d.numID[f][v]
				add(itoa(v), false, count(c.counts[j], 4+f, j, b.GetCardinality))
			}
		default:
			add("", true, count(slots[0], -1, 0, d.noGarage.GetCardinality))
			keys := map[string]uint64{}
			for id, s := range d.slotOf {
				n := count(slots[s], -1, 0, d.garages[s].cars.GetCardinality)
				switch c.field {
				case yard.FieldGarageName:
					keys[d.garages[s].nameKey] += n
				case yard.FieldGarageState:
					keys[d.garages[s].stateKey] += n
				default:
					keys[id] += n
				}
			}
			for v, n := range keys {
				add(v, false, n)
			}
		}
		yard.SortFacet(&fc)
		out[i] = fc
	}
	return out
}

// walker calls fn with the positions of a set, in ascending batches.
type walker func(fn func(ps []uint32))

// bitmapWalker walks the positions of b.
func bitmapWalker(b *roaring.Bitmap) walker {
	return func(fn func([]uint32)) {
		if b == nil {
			return
		}
		buf := make([]uint32, 512)
		it := b.ManyIterator()
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			fn(buf[:n])
		}
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [24]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
