package search

import (
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/yard-api/yard"
)

// text fields of a car, in carRec.text order.
var textFields = [...]string{yard.FieldColor, yard.FieldType, yard.FieldMake, yard.FieldModel}

// data is the index proper. A car has a dense position; every value of
// every field has a bitmap of the positions holding it (a garage and a
// garage name a carSet, carset.go). Garages have a slot and the set of
// their cars, so renaming a garage or moving it to another state touches
// one garage's set, not its cars.
type data struct {
	ids     idList          // position → car id (kept after a deletion: a re-created id gets its position back)
	byID    idTable         // car id → position
	times   []carTimes      // position → times; the other fields are in columns (rec)
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
	// And per position the value as written of each text field (an id
	// into valIDs, which holds string indexes) and the garage's slot.
	valCol    [len(textFields)]column
	valID     [len(textFields)]map[uint32]uint32
	valIDs    [len(textFields)][]uint32
	garageCol column

	// cum holds, per numeric field, the cars with a value up to each
	// value (range-encoded bitmaps), built on the first range query after
	// a change; a range is then one bitmap less another.
	cumMu sync.Mutex
	cum   [2]*cumulative

	tw    twins     // dense twins of the common values (dense.go)
	cross crossTabs // cross counts of the column fields (cross.go)
	cube  facetCube // counts of the few-valued fields' combinations (cube.go)

	garages  []garageRec       // slot → garage; slot 0 is "no garage"
	slotOf   map[string]uint32 // garage id → slot
	free     []uint32          // slots of deleted garages
	names    map[string]*carSet
	states   map[string]*roaring.Bitmap
	noGarage *roaring.Bitmap

	// force holds the strategies the index's options force (options.go),
	// which queries read; set under the index's write lock.
	force strategy
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

type garageRec struct {
	id                string
	nameKey, stateKey string
	cars              carSet
}

func newData() *data {
	d := &data{
		alive: roaring.New(), inOrder: true,
		strID: map[string]uint32{}, doors: map[int64]*roaring.Bitmap{}, years: map[int64]*roaring.Bitmap{},
		numID:   [2]map[int64]uint32{{}, {}},
		keyID:   [len(textFields)]map[uint32]uint32{{}, {}, {}, {}},
		valID:   [len(textFields)]map[uint32]uint32{{}, {}, {}, {}},
		garages: []garageRec{{}}, slotOf: map[string]uint32{},
		names: map[string]*carSet{}, states: map[string]*roaring.Bitmap{}, noGarage: roaring.New(),
	}
	for i := range d.text {
		d.text[i] = map[uint32]*roaring.Bitmap{}
	}
	return d
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
	for _, b := range d.states {
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
	out := make([]*carSet, 0, len(d.names)+len(d.garages))
	for _, s := range d.names {
		out = append(out, s)
	}
	for i := range d.garages {
		out = append(out, &d.garages[i].cars)
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
	for _, s := range d.carSets() {
		s.compact()
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
	if s := d.names[from]; s != nil {
		d.setAndNot(s, cars)
		if s.len() == 0 {
			delete(d.names, from)
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
	if b := d.states[from]; b != nil {
		if cars.big != nil {
			d.andNotFrom(b, cars.big)
		} else {
			for _, p := range cars.ps {
				d.removeAt(b, p)
			}
		}
		if b.IsEmpty() {
			delete(d.states, from)
			d.forget(b)
		}
	}
	b := bitmapOf(d.states, to)
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
	d.garages[s] = garageRec{id: id}
	d.slotOf[id] = s
	return s
}

// deleteGarage forgets a garage; the store deletes only empty ones.
func (d *data) deleteGarage(id string) {
	s, ok := d.slotOf[id]
	if !ok {
		return
	}
	gr := &d.garages[s]
	if gr.cars.len() > 0 { // cannot happen: the store refuses it
		d.moveNamed(gr.nameKey, "", &gr.cars)
		d.moveStated(gr.stateKey, "", &gr.cars)
	}
	delete(d.slotOf, id)
	d.forget(gr.cars.big)
	d.garages[s] = garageRec{}
	d.free = append(d.free, s)
}

// search returns where id belongs in the order: a binary search over the
// ids, for a new id's place (position finds a known one).
func (d *data) search(id string) (int, bool) {
	return slices.BinarySearchFunc(d.order, id, func(q uint32, id string) int { return strings.Compare(d.ids.at(q), id) })
}

// position returns id's position, if the index has ever held it (a
// deleted car keeps its position).
func (d *data) position(id string) (uint32, bool) {
	return d.byID.find(&d.ids, id)
}

// putCar adds a car or applies its new fields. building says the car is
// new (the first build reads each id once), and order is sorted once at
// the end instead of at each car.
func (d *data) putCar(c *yard.Car, building bool) {
	var p uint32
	at, known := len(d.order), false
	if !building {
		if p, known = d.position(c.ID); !known {
			at, _ = d.search(c.ID)
		}
	}
	switch {
	case !known:
		p = uint32(d.ids.len())
		d.ids.add(c.ID)
		d.byID.add(&d.ids, p)
		d.times = append(d.times, carTimes{})
		for i := range d.keyCol {
			d.keyCol[i].grow()
			d.valCol[i].grow()
		}
		d.garageCol.grow()
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
	r := carRec{doors: int32(c.Doors), year: int32(c.Year), created: c.CreatedAt.UnixMilli(), updated: c.UpdatedAt.UnixMilli()}
	for i, v := range [...]string{c.Color, c.Type, c.Make, c.Model} {
		r.text[i] = d.intern(v)
	}
	if c.Garage != "" {
		r.garage = d.slot(c.Garage)
	}
	d.setRec(p, &r)
	d.index(p, &r)
}

// positions returns the number of positions.
func (d *data) positions() int { return len(d.times) }

// rec returns the fields of position p.
func (d *data) rec(p uint32) carRec {
	r := carRec{
		doors: int32(d.numVal[0][d.numCol[0].get(p)]), year: int32(d.numVal[1][d.numCol[1].get(p)]),
		garage: d.garageCol.get(p), created: d.times[p].created, updated: d.times[p].updated,
	}
	for i := range r.text {
		r.text[i] = d.valIDs[i][d.valCol[i].get(p)]
	}
	return r
}

// setRec writes the fields of position p into the columns; index then
// indexes them.
func (d *data) setRec(p uint32, r *carRec) {
	for i, s := range r.text {
		d.valCol[i].set(p, columnID(d.valID[i], &d.valIDs[i], s))
	}
	d.numCol[0].set(p, d.numIDOf(0, int64(r.doors)))
	d.numCol[1].set(p, d.numIDOf(1, int64(r.year)))
	d.garageCol.set(p, r.garage)
	d.times[p] = carTimes{r.created, r.updated}
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
	if p, ok := d.position(id); ok && d.alive.Contains(p) {
		d.unindex(p)
	}
}

// index adds position p, whose fields r setRec has just written, to the
// bitmaps of its values.
func (d *data) index(p uint32, r *carRec) {
	for i, s := range r.text {
		d.addTo(bitmapOf(d.text[i], d.keyOf[s]), p)
		d.keyCol[i].set(p, d.keyIDOf(i, d.keyOf[s]))
	}
	d.addTo(bitmapOf(d.doors, int64(r.doors)), p)
	d.addTo(bitmapOf(d.years, int64(r.year)), p)
	d.cumChange(0, int64(r.doors), p, true)
	d.cumChange(1, int64(r.year), p, true)
	d.cum = [2]*cumulative{}
	if r.garage == 0 {
		d.addTo(d.noGarage, p)
	} else {
		g := &d.garages[r.garage]
		d.setAdd(&g.cars, p)
		d.setAdd(d.named(g.nameKey), p)
		d.addTo(bitmapOf(d.states, g.stateKey), p)
	}
	d.addTo(d.alive, p)
	d.crossAdd(p, false)
}

// unindex removes position p from every bitmap.
func (d *data) unindex(p uint32) {
	r := d.rec(p)
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
		d.setRemove(&g.cars, p)
		if s := d.names[g.nameKey]; s != nil {
			d.setRemove(s, p)
			if s.len() == 0 {
				delete(d.names, g.nameKey)
				d.forget(s.big)
			}
		}
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

// named returns the set of garage name key, making it when it is new.
func (d *data) named(key string) *carSet {
	s := d.names[key]
	if s == nil {
		s = &carSet{}
		d.names[key] = s
	}
	return s
}
