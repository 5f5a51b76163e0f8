package search

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// text fields of a car, in carRec.text order.
var textFields = [...]string{yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel}

// data is the index proper, in parts: the cars by position, the
// interned strings, a bitmap per value of every field, the garages, and
// per position a column per field; then what queries are made faster by,
// which every write keeps up to date or drops (range encodings, dense
// twins, cross counts, the facet cube). A car has a dense position; every
// value of every field has a bitmap of the positions holding it (a garage
// and a garage name a carSet, carset.go). Garages have a slot and the set
// of their cars, so renaming a garage or moving it to another state
// touches one garage's set, not its cars.
type data struct {
	cars    carTable     // positions: ids, times, the live cars, the id order
	strs    stringTable  // the text fields' values, interned, and their keys
	values  valueBitmaps // the cars of each value of a car's own fields
	garages garageTable  // garage slots, and the cars of each garage field's values
	cols    columns      // per position, each field's value id
	cum     cumulatives  // range-encoded bitmaps of the numeric fields (match.go)
	tw      twins        // dense twins of the common values (dense.go)
	cross   crossTabs    // cross counts of the column fields (cross.go)
	cube    facetCube    // counts of the few-valued fields' combinations (cube.go)
	// opts holds the options (options.go), which queries read; set under
	// the index's write lock.
	opts options
}

// carTable is the cars by position. A position is a car id's for good: a
// deleted car keeps it, and its id gets it back when it is created again.
type carTable struct {
	ids     idList          // position → car id
	byID    idTable         // car id → position
	times   []carTimes      // position → times; the other fields are in the columns
	alive   *roaring.Bitmap // positions of existing cars
	order   []uint32        // every position, sorted by car id
	inOrder bool            // order[i] == i: positions are in id order
	// touched counts the pages whose touch (plan.go) summed to 0xff:
	// the sum is kept, so the compiler keeps the loads.
	touched atomic.Uint32
}

// stringTable interns the text fields' values: each value as written, and
// its key (lower case: queries match keys, facets group by them), has an
// index, which the bitmaps and columns hold.
type stringTable struct {
	all   []string          // index → string
	index map[string]uint32 // string → index
	keyOf []uint32          // index → index of its key
}

// valueBitmaps hold, for each value of a car's own fields, the positions
// of the live cars holding it (the garage fields' are in garageTable).
type valueBitmaps struct {
	text  [len(textFields)]map[uint32]*roaring.Bitmap // key (string index) → cars
	doors map[int64]*roaring.Bitmap
	years map[int64]*roaring.Bitmap
}

// garageTable holds the garages by slot, and the cars of each value of
// the garage fields.
type garageTable struct {
	slots    []garageRec                // slot → garage; slot 0 is "no garage"
	slotOf   map[string]uint32          // garage id → slot
	free     []uint32                   // slots of deleted garages
	names    map[string]*carSet         // name key → cars
	states   map[string]*roaring.Bitmap // state key → cars
	noGarage *roaring.Bitmap            // the cars in no garage
}

// columns hold, per position, the id of its value in each field (column.go),
// so a walk over matching cars (facets) reads a byte or two per car and
// field, in order, and a car's fields are read back from them (rec).
type columns struct {
	key    [len(textFields)]valueColumn[uint32] // text fields' keys (string indexes)
	val    [len(textFields)]valueColumn[uint32] // text fields' values as written (string indexes)
	num    [2]valueColumn[int64]                // doors, year
	garage column                               // the garage's slot (0: none)
}

// cumulatives holds, per numeric field, the cars with a value up to each
// value (range-encoded bitmaps), built on the first range query after a
// change; a range is then one bitmap less another. Readers share the read
// lock, so mu makes one of them build it.
type cumulatives struct {
	mu sync.Mutex
	of [2]*cumulative
}

// carTimes holds a car's times, in Unix milliseconds (the zero time's too:
// it comes back as the zero time).
type carTimes struct{ created, updated int64 }

// carRec holds a car's fields (text values as string indexes), as rec
// reads them from the columns: a struct per car cost 48 bytes, the
// columns of a car of the usual shape cost 8 besides its times.
type carRec struct {
	text             [len(textFields)]uint32
	doors            int32
	year             int32
	garage           uint32 // slot, 0 for no garage
	created, updated int64  // Unix milliseconds (the zero time's too: it comes back as the zero time)
}

// garageRec is a garage: its id, the keys of its name and state, its
// cars.
type garageRec struct {
	id                string
	nameKey, stateKey string
	cars              carSet
}

// newData returns an empty index of options o.
func newData(o options) *data {
	d := &data{
		cars:   carTable{alive: roaring.New(), inOrder: true},
		strs:   stringTable{index: map[string]uint32{}},
		values: valueBitmaps{doors: map[int64]*roaring.Bitmap{}, years: map[int64]*roaring.Bitmap{}},
		garages: garageTable{slots: []garageRec{{}}, slotOf: map[string]uint32{}, names: map[string]*carSet{},
			states: map[string]*roaring.Bitmap{}, noGarage: roaring.New()},
		opts: o,
	}
	for i := range d.values.text {
		d.values.text[i] = map[uint32]*roaring.Bitmap{}
	}
	return d
}

// --- maintenance -------------------------------------------------------------

func (d *data) allBitmaps() []*roaring.Bitmap {
	out := []*roaring.Bitmap{d.cars.alive, d.garages.noGarage}
	for _, m := range d.values.text {
		for _, b := range m {
			out = append(out, b)
		}
	}
	for _, m := range []map[int64]*roaring.Bitmap{d.values.doors, d.values.years} {
		for _, b := range m {
			out = append(out, b)
		}
	}
	for _, b := range d.garages.states {
		out = append(out, b)
	}
	for _, s := range d.carSets() {
		if s.big != nil {
			out = append(out, s.big)
		}
	}
	return out
}

// carSets returns the sets of the garages and of their names.
func (d *data) carSets() []*carSet {
	g := &d.garages
	out := make([]*carSet, 0, len(g.names)+len(g.slots))
	for _, s := range g.names {
		out = append(out, s)
	}
	for i := range g.slots {
		out = append(out, &g.slots[i].cars)
	}
	return out
}

// runOptimize compresses the bitmaps that runs make smaller, except the
// live cars': a query with exclusions only starts from a copy of it, and
// removing cars from a run container converts it range by range (a
// container of 65,536 live cars less a colour's took milliseconds).
func (d *data) runOptimize() {
	for _, b := range d.allBitmaps() {
		if b != d.cars.alive {
			b.RunOptimize()
		}
	}
	for _, s := range d.carSets() {
		s.compact()
	}
}

// intern returns the index of s (a car's value as written), interning it
// and its key.
func (t *stringTable) intern(s string) uint32 {
	if i, ok := t.index[s]; ok {
		return i
	}
	i := t.add(s)
	key := strings.ToLower(s)
	k, ok := t.index[key]
	if !ok {
		k = t.add(key)
		t.keyOf[k] = k
	}
	t.keyOf[i] = k
	return i
}

func (t *stringTable) add(s string) uint32 {
	i := uint32(len(t.all))
	t.all = append(t.all, s)
	t.keyOf = append(t.keyOf, i)
	t.index[s] = i
	return i
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
	gr := &d.garages.slots[slot]
	if gr.nameKey != name {
		d.moveNamed(gr.nameKey, name, &gr.cars)
		gr.nameKey = name
	}
	if gr.stateKey != state {
		d.moveStated(gr.stateKey, state, &gr.cars)
		gr.stateKey = state
	}
}

// moveNamed moves a garage's cars from the set of name from to that of
// name to.
func (d *data) moveNamed(from, to string, cars *carSet) {
	if cars.len() == 0 {
		return
	}
	if s := d.garages.names[from]; s != nil {
		d.setAndNot(s, cars)
		if s.len() == 0 {
			delete(d.garages.names, from)
			d.forget(s.big)
		}
	}
	d.setOr(d.named(to), cars)
}

// moveStated moves a garage's cars from the bitmap of state from to that
// of state to.
func (d *data) moveStated(from, to string, cars *carSet) {
	if cars.len() == 0 {
		return
	}
	cars.each(func(ps []uint32) {
		for _, p := range ps {
			d.tally(from, p, true)
			d.tally(to, p, false)
		}
	})
	states := d.garages.states
	if b := states[from]; b != nil {
		if cars.big != nil {
			d.andNotFrom(b, cars.big)
		} else {
			for _, p := range cars.ps {
				d.removeAt(b, p)
			}
		}
		if b.IsEmpty() {
			delete(states, from)
			d.forget(b)
		}
	}
	b := bitmapOf(states, to)
	if cars.big != nil {
		d.orInto(b, cars.big)
		return
	}
	for _, p := range cars.ps {
		d.addTo(b, p)
	}
}

// slot returns the slot of a garage id, making one when it is new.
func (d *data) slot(id string) uint32 {
	g := &d.garages
	if s, ok := g.slotOf[id]; ok {
		return s
	}
	var s uint32
	if n := len(g.free); n > 0 {
		s, g.free = g.free[n-1], g.free[:n-1]
	} else {
		s = uint32(len(g.slots))
		g.slots = append(g.slots, garageRec{})
	}
	g.slots[s] = garageRec{id: id}
	g.slotOf[id] = s
	return s
}

// deleteGarage forgets a garage; the store deletes only empty ones.
func (d *data) deleteGarage(id string) {
	g := &d.garages
	s, ok := g.slotOf[id]
	if !ok {
		return
	}
	gr := &g.slots[s]
	if gr.cars.len() > 0 { // cannot happen: the store refuses it
		d.moveNamed(gr.nameKey, "", &gr.cars)
		d.moveStated(gr.stateKey, "", &gr.cars)
	}
	delete(g.slotOf, id)
	d.forget(gr.cars.big)
	g.slots[s] = garageRec{}
	g.free = append(g.free, s)
}

// search returns where id belongs in the order: a binary search over the
// ids, for a new id's place (position finds a known one).
func (d *data) search(id string) (int, bool) {
	return slices.BinarySearchFunc(d.cars.order, id, func(q uint32, id string) int { return strings.Compare(d.cars.ids.at(q), id) })
}

// position returns id's position, if the index has ever held it (a
// deleted car keeps its position).
func (d *data) position(id string) (uint32, bool) {
	return d.cars.byID.find(&d.cars.ids, id)
}

// putCar adds a car or applies its new fields. building says the car is
// new (the first build reads each id once), and order is sorted once at
// the end instead of at each car.
func (d *data) putCar(c *yard.Car, building bool) {
	cars := &d.cars
	var p uint32
	at, known := len(cars.order), false
	if !building {
		if p, known = d.position(c.ID); !known {
			at, _ = d.search(c.ID)
		}
	}
	switch {
	case !known:
		p = uint32(cars.ids.len())
		cars.ids.add(c.ID)
		cars.byID.add(&cars.ids, p)
		cars.times = append(cars.times, carTimes{})
		d.cols.grow()
		if at == len(cars.order) {
			cars.order = append(cars.order, p) // the greatest id so far: order stays i → i
		} else {
			cars.order = slices.Insert(cars.order, at, p)
			cars.inOrder = false
		}
	case cars.alive.Contains(p):
		d.unindex(p)
	}
	r := carRec{doors: int32(c.Doors), year: int32(c.Year), created: c.CreatedAt.UnixMilli(), updated: c.UpdatedAt.UnixMilli()}
	for i, v := range [...]string{c.Color, c.Type, c.Make, c.Model} {
		r.text[i] = d.strs.intern(v)
	}
	if c.Garage != "" {
		r.garage = d.slot(c.Garage)
	}
	d.setRec(p, &r)
	d.index(p, &r)
}

// grow appends a position to every column.
func (c *columns) grow() {
	for i := range c.key {
		c.key[i].col.grow()
		c.val[i].col.grow()
	}
	for i := range c.num {
		c.num[i].col.grow()
	}
	c.garage.grow()
}

// positions returns the number of positions.
func (d *data) positions() int { return len(d.cars.times) }

// rec returns the fields of position p.
func (d *data) rec(p uint32) carRec {
	t := d.cars.times[p]
	r := carRec{
		doors: int32(d.cols.num[0].at(p)), year: int32(d.cols.num[1].at(p)),
		garage: d.cols.garage.get(p), created: t.created, updated: t.updated,
	}
	for i := range r.text {
		r.text[i] = d.cols.val[i].at(p)
	}
	return r
}

// setRec writes the fields of position p into the columns; index then
// indexes them.
func (d *data) setRec(p uint32, r *carRec) {
	c := &d.cols
	for i, s := range r.text {
		c.val[i].col.set(p, c.val[i].idOf(s))
	}
	c.num[0].col.set(p, c.num[0].idOf(int64(r.doors)))
	c.num[1].col.set(p, c.num[1].idOf(int64(r.year)))
	c.garage.set(p, r.garage)
	d.cars.times[p] = carTimes{r.created, r.updated}
}

// sortOrder sorts the order after a build, when the store's id order
// differs from byte order (a PostgreSQL database with another collation
// than C).
func (d *data) sortOrder() {
	cars := &d.cars
	less := func(a, b uint32) int { return strings.Compare(cars.ids.at(a), cars.ids.at(b)) }
	if !slices.IsSortedFunc(cars.order, less) {
		slices.SortFunc(cars.order, less)
		cars.inOrder = false
	}
}

func (d *data) deleteCar(id string) {
	if p, ok := d.position(id); ok && d.cars.alive.Contains(p) {
		d.unindex(p)
	}
}

// index adds position p, whose fields r setRec has just written, to the
// bitmaps of its values.
func (d *data) index(p uint32, r *carRec) {
	v := &d.values
	for i, s := range r.text {
		k := d.strs.keyOf[s]
		d.addTo(bitmapOf(v.text[i], k), p)
		d.cols.key[i].col.set(p, d.cols.key[i].idOf(k))
	}
	d.addTo(bitmapOf(v.doors, int64(r.doors)), p)
	d.addTo(bitmapOf(v.years, int64(r.year)), p)
	d.cumChange(0, int64(r.doors), p, true)
	d.cumChange(1, int64(r.year), p, true)
	d.cum.of = [2]*cumulative{}
	if r.garage == 0 {
		d.addTo(d.garages.noGarage, p)
	} else {
		g := &d.garages.slots[r.garage]
		d.setAdd(&g.cars, p)
		d.setAdd(d.named(g.nameKey), p)
		d.addTo(bitmapOf(d.garages.states, g.stateKey), p)
	}
	d.addTo(d.cars.alive, p)
	d.crossAdd(p, false)
}

// unindex removes position p from every bitmap.
func (d *data) unindex(p uint32) {
	r := d.rec(p)
	v := &d.values
	for i, s := range r.text {
		removeFrom(d, v.text[i], d.strs.keyOf[s], p)
	}
	removeFrom(d, v.doors, int64(r.doors), p)
	removeFrom(d, v.years, int64(r.year), p)
	d.cumChange(0, int64(r.doors), p, false)
	d.cumChange(1, int64(r.year), p, false)
	d.cum.of = [2]*cumulative{}
	if r.garage == 0 {
		d.removeAt(d.garages.noGarage, p)
	} else {
		g := &d.garages.slots[r.garage]
		d.setRemove(&g.cars, p)
		if s := d.garages.names[g.nameKey]; s != nil {
			d.setRemove(s, p)
			if s.len() == 0 {
				delete(d.garages.names, g.nameKey)
				d.forget(s.big)
			}
		}
		removeFrom(d, d.garages.states, g.stateKey, p)
	}
	d.removeAt(d.cars.alive, p)
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

// named returns the set of garage name key, making it when it is new.
func (d *data) named(key string) *carSet {
	s := d.garages.names[key]
	if s == nil {
		s = &carSet{}
		d.garages.names[key] = s
	}
	return s
}
