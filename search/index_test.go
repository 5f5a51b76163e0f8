package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/search"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// The store is a Source: the search package reads it through domain types
// and does not import it.
var _ search.Source = (*store.DB)(nil)

// Value pools with duplicates that differ only in case, so matching that
// ignores case and facets that group by the lower-case key are exercised.
var (
	colors     = []string{"Red", "red", "RED", "blue", "Blue", "green", "Black", "white"}
	types      = []string{"sedan", "Sedan", "coupe", "pickup", "SUV", "suv"}
	makes      = []string{"Ford", "ford", "Toyota", "VW", "BMW", "Honda", "Kia"}
	models     = []string{"Focus", "focus", "Golf, GTI", "M3", "Civic", "F-150", "Rio"}
	garageIDs  = []string{"g1", "G1", "g-2", "g_3", "g.4", "G5", "g6", "g7"}
	names      = []string{"Main", "main", "MAIN", "Ocean Drive", "Hudson", "lot 9"}
	states     = []string{"CA", "ca", "NY", "Tx", "TX", "WA"}
	idLetters  = "abcABC019-_."
	queryExtra = map[string][]string{ // values no car holds
		"color": {"purple"}, "make": {"Tesla"}, "garage.id": {"g9", "null"}, "garage.name": {"nowhere", "null"},
		"garage.state": {"ZZ", "null"},
	}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func randomID(r *rand.Rand) string {
	for {
		n := 2 + r.IntN(5)
		b := make([]byte, n)
		for i := range b {
			b[i] = idLetters[r.IntN(len(idLetters))]
		}
		if id := string(b); yard.ValidClientID(id) {
			return id
		}
	}
}

func randomCar(r *rand.Rand, garages []string) *yard.Car {
	c := &yard.Car{Color: pick(r, colors), Type: pick(r, types), Doors: r.IntN(6), Make: pick(r, makes),
		Model: pick(r, models), Year: 2000 + r.IntN(12)}
	if len(garages) > 0 && r.IntN(5) > 0 {
		c.Garage = pick(r, garages)
	}
	return c
}

// importLines returns NDJSON of the garages (all of garageIDs) and n cars.
func importLines(r *rand.Rand, n int, withGarages bool) string {
	var b strings.Builder
	if withGarages {
		for _, g := range garageIDs {
			fmt.Fprintf(&b, `{"kind":"garage","id":%q,"name":%q,"state":%q}`+"\n", g, pick(r, names), pick(r, states))
		}
	}
	seen := map[string]bool{} // PostgreSQL refuses an id twice in one INSERT
	for range n {
		c := randomCar(r, garageIDs)
		c.ID = randomID(r)
		for seen[c.ID] {
			c.ID += pick(r, []string{"a", "B", "7"})
		}
		seen[c.ID] = true
		garage := "null"
		if c.Garage != "" {
			garage = fmt.Sprintf("%q", c.Garage)
		}
		fmt.Fprintf(&b, `{"kind":"car","id":%q,"color":%q,"type":%q,"doors":%d,"make":%q,"model":%q,"year":%d,"garage":%s}`+"\n",
			c.ID, c.Color, c.Type, c.Doors, c.Make, c.Model, c.Year, garage)
	}
	return b.String()
}

// randomQuery returns a raw query in the car grammar: a few fields, each
// with values (some excluded with '!', some unknown, null on the garage
// paths), comparison operators on numbers, and paging that may run past
// the end.
func randomQuery(r *rand.Rand) string {
	var pairs []string
	value := func(field string) string {
		var v string
		switch field {
		case "color":
			v = pick(r, colors)
		case "type":
			v = pick(r, types)
		case "make", "vendor":
			v = pick(r, makes)
		case "model":
			v = pick(r, models)
		case "doors":
			v = fmt.Sprint(r.IntN(7))
		case "year":
			v = fmt.Sprint(1999 + r.IntN(14))
		case "garage", "garage.id":
			v = pick(r, garageIDs)
		case "garage.name":
			v = pick(r, names)
		case "garage.state":
			v = pick(r, states)
		}
		if extra := queryExtra[strings.TrimPrefix(field, "vendor")]; len(extra) > 0 && r.IntN(8) == 0 {
			v = pick(r, extra)
		}
		if field == "garage" && r.IntN(6) == 0 {
			v = "null"
		}
		return strings.NewReplacer(",", "%2C", " ", "+").Replace(v)
	}
	fields := []string{"color", "type", "make", "vendor", "model", "doors", "year", "garage", "garage.id", "garage.name", "garage.state"}
	for range r.IntN(4) {
		field := pick(r, fields)
		switch r.IntN(4) {
		case 0, 1: // field=a,!b,...
			var vals []string
			for range 1 + r.IntN(3) {
				v := value(field)
				if r.IntN(4) == 0 {
					v = "!" + v
				}
				vals = append(vals, v)
			}
			pairs = append(pairs, field+"="+strings.Join(vals, ","))
		case 2:
			op := pick(r, []string{"eq", "ne"})
			pairs = append(pairs, "q."+field+"."+op+"="+value(field))
		case 3:
			nf := pick(r, []string{"doors", "year"})
			pairs = append(pairs, "q."+nf+"."+pick(r, []string{"lt", "le", "gt", "ge"})+"="+value(nf))
		}
	}
	switch r.IntN(5) {
	case 0:
		pairs = append(pairs, fmt.Sprintf("offset=%d", r.IntN(400)))
	case 1, 2:
		pairs = append(pairs, fmt.Sprintf("offset=%d", r.IntN(30)), fmt.Sprintf("max=%d", r.IntN(12)))
	}
	if r.IntN(3) == 0 {
		var fs []string
		for range 1 + r.IntN(3) {
			fs = append(fs, pick(r, fields))
		}
		pairs = append(pairs, "facets="+strings.Join(fs, ","))
	}
	r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return strings.Join(pairs, pick(r, []string{"&", ";"}))
}

// sameList fails t when the index's answer differs from the store's.
func sameList(t *testing.T, ctx context.Context, raw string, ix *search.Index, db *store.DB) {
	t.Helper()
	sameAsSQL(t, ctx, raw, ix, sqlList(t, ctx, raw, db))
}

// sqlList answers the query raw from the store's SQL: the reference the
// index is checked against.
func sqlList(t *testing.T, ctx context.Context, raw string, db *store.DB) *yard.CarList {
	t.Helper()
	q, page, facets, err := yard.ParseCarListQuery(raw)
	if err != nil {
		t.Fatalf("query %q: %v", raw, err)
	}
	want, err := db.ListCars(ctx, q, page, yard.FacetPaths(facets))
	if err != nil {
		t.Fatalf("SQL %q: %v", raw, err)
	}
	return want
}

// sameAsSQL checks the index's answer to raw against want, the store's.
func sameAsSQL(t *testing.T, ctx context.Context, raw string, ix *search.Index, want *yard.CarList) {
	t.Helper()
	q, page, facets, err := yard.ParseCarListQuery(raw)
	if err != nil {
		t.Fatalf("query %q: %v", raw, err)
	}
	got, err := ix.ListCars(ctx, q, page, yard.FacetPaths(facets))
	if err != nil {
		t.Fatalf("index %q: %v", raw, err)
	}
	if got.Total != want.Total {
		t.Fatalf("query %q: total %d, want %d (SQL)", raw, got.Total, want.Total)
	}
	if g, w := carsText(got.Cars), carsText(want.Cars); g != w {
		t.Fatalf("query %q: page\n%s\nwant (SQL)\n%s", raw, g, w)
	}
	if !reflect.DeepEqual(got.Facets, want.Facets) {
		t.Fatalf("query %q: facets\n%+v\nwant (SQL GROUP BY)\n%+v", raw, got.Facets, want.Facets)
	}
	for _, f := range got.Facets {
		sum := 0
		for _, v := range f.Values {
			sum += v.Count
		}
		if len(f.Values) < yard.MaxFacetValues && sum != got.Total {
			t.Fatalf("query %q: facet %s counts add up to %d, total %d", raw, f.Field, sum, got.Total)
		}
	}
}

func carsText(cars []*yard.Car) string {
	var b strings.Builder
	for _, c := range cars {
		fmt.Fprintf(&b, "%s %s %s %d %s %s %d %q %d %d\n", c.ID, c.Color, c.Type, c.Doors, c.Make, c.Model, c.Year, c.Garage,
			c.CreatedAt.UnixMilli(), c.UpdatedAt.UnixMilli())
	}
	return b.String()
}

func build(t *testing.T, db *store.DB, opts ...search.Option) *search.Index {
	t.Helper()
	ix := search.New(db, nil, opts...)
	if ix.Ready() {
		t.Fatal("ready before the build")
	}
	if err := ix.Build(context.Background()); err != nil {
		t.Fatalf("build: %v", err)
	}
	if !ix.Ready() {
		t.Fatal("not ready after the build")
	}
	return ix
}

// TestIndexMatchesSQL holds the index against the SQL path on random data
// sets and random queries of the whole grammar.
func TestIndexMatchesSQL(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		r := rand.New(rand.NewPCG(1, uint64(len(db.Engine()))))
		if _, err := db.ImportCars(ctx, strings.NewReader(importLines(r, 400, true)), 150); err != nil {
			t.Fatal(err)
		}
		// Garages and names hold their cars as bitmaps past 24 (carSet):
		// some of them do here.
		ix := build(t, db, search.WithCarSetBounds(24, 12))
		// Every strategy the index chooses between gives the same answer:
		// each random query's SQL answer is checked against all of them.
		for range 150 {
			raw := randomQuery(r)
			want := sqlList(t, ctx, raw, db)
			for _, facets := range []string{"", "walk", "complement", "cross", "cube"} {
				for _, page := range []string{"", "walk", "gather"} {
					for _, match := range []string{"", "bitmaps", "dense"} {
						ix.SetStrategy(search.WithStrategy(facets, page), search.WithMatch(match))
						sameAsSQL(t, ctx, raw, ix, want)
					}
				}
			}
		}
	})
}

// TestIndexFollowsWrites interleaves every kind of write with queries: the
// query after a write sees it.
func TestIndexFollowsWrites(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		r := rand.New(rand.NewPCG(2, uint64(len(db.Engine()))))
		if _, err := db.ImportCars(ctx, strings.NewReader(importLines(r, 150, true)), 100); err != nil {
			t.Fatal(err)
		}
		// Garages hold 15-40 cars and names more: with these bounds their
		// sets turn into bitmaps and back into arrays as cars move
		// (carSet).
		ix := build(t, db, search.WithCarSetBounds(24, 12))
		var deleted []string
		carIDs := func() []string {
			l, err := db.ListCars(ctx, yard.Query{}, yard.Page{Max: 1000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(l.Cars))
			for i, c := range l.Cars {
				ids[i] = c.ID
			}
			return ids
		}
		liveGarages := append([]string(nil), garageIDs...)
		for step := range 200 {
			ids := carIDs()
			var what string
			switch k := r.IntN(11); {
			case k == 0: // create
				c := randomCar(r, liveGarages)
				if r.IntN(2) == 0 {
					c.ID = randomID(r) // client-chosen ids land anywhere in the id order
				}
				what = "create " + c.ID
				if err := db.CreateCar(ctx, c); err != nil && yard.ErrorCode(err) != yard.ECONFLICT {
					t.Fatal(err)
				}
			case k == 1 && len(ids) > 0: // PUT
				c := randomCar(r, liveGarages)
				c.ID = pick(r, ids)
				what = "put " + c.ID
				if _, err := db.ReplaceCar(ctx, c); err != nil {
					t.Fatal(err)
				}
			case k == 2 && len(ids) > 0: // PATCH moving a car between garages
				g := ""
				if r.IntN(4) > 0 {
					g = pick(r, liveGarages)
				}
				id := pick(r, ids)
				what = "move " + id + " to " + g
				if _, err := db.UpdateCar(ctx, id, yard.CarUpdate{Garage: &g}); err != nil {
					t.Fatal(err)
				}
			case k == 3 && len(ids) > 0: // PATCH a field
				c := pick(r, colors)
				id := pick(r, ids)
				what = "recolour " + id
				if _, err := db.UpdateCar(ctx, id, yard.CarUpdate{Color: &c}); err != nil {
					t.Fatal(err)
				}
			case k == 4 && len(ids) > 0: // DELETE
				id := pick(r, ids)
				what = "delete " + id
				if err := db.DeleteCar(ctx, id); err != nil {
					t.Fatal(err)
				}
				deleted = append(deleted, id)
			case k == 5 && len(deleted) > 0: // the same id again
				c := randomCar(r, liveGarages)
				c.ID = pick(r, deleted)
				what = "re-create " + c.ID
				if _, err := db.ReplaceCar(ctx, c); err != nil {
					t.Fatal(err)
				}
			case k == 6: // garage renamed
				n := pick(r, names)
				g := pick(r, liveGarages)
				what = "rename " + g
				if _, err := db.UpdateGarage(ctx, g, yard.GarageUpdate{Name: &n}); err != nil {
					t.Fatal(err)
				}
			case k == 7: // garage moved to another state
				s := pick(r, states)
				g := pick(r, liveGarages)
				what = "state of " + g
				if _, err := db.UpdateGarage(ctx, g, yard.GarageUpdate{State: &s}); err != nil {
					t.Fatal(err)
				}
			case k == 8: // import batch, replacing some cars too
				lines := importLines(r, 1+r.IntN(20), false)
				if len(ids) > 0 {
					lines += fmt.Sprintf(`{"kind":"car","id":%q,"color":"Teal","type":"van","doors":3,"make":"Kia","model":"Rio","year":2011,"garage":null}`+"\n", pick(r, ids))
				}
				what = "import"
				if _, err := db.ImportCars(ctx, strings.NewReader(lines), 7); err != nil {
					t.Fatal(err)
				}
			case k == 9: // a new garage, or an empty one deleted
				id := fmt.Sprintf("gn%d", step)
				what = "garage " + id
				if err := db.CreateGarage(ctx, &yard.Garage{ID: id, Name: pick(r, names), State: pick(r, states)}); err != nil {
					t.Fatal(err)
				}
				liveGarages = append(liveGarages, id)
				if r.IntN(2) == 0 {
					what += " deleted"
					if err := db.DeleteGarage(ctx, id); err != nil {
						t.Fatal(err)
					}
					liveGarages = liveGarages[:len(liveGarages)-1]
				}
			default:
				what = "nothing"
			}
			t.Logf("step %d: %s", step, what)
			facets, page := pick(r, []string{"", "walk", "complement", "cross", "cube"}), pick(r, []string{"", "walk", "gather"})
			ix.SetStrategy(search.WithStrategy(facets, page), search.WithMatch(pick(r, []string{"", "bitmaps", "dense", "dense"})))
			for range 3 {
				sameList(t, ctx, randomQuery(r), ix, db)
			}
			sameList(t, ctx, "max=100&facets=garage.id,garage.name,garage.state,color", ix, db)
			// Every state and name, so a garage renamed or moved is
			// checked on both sides of the move, twins included: the
			// totals, and the first page (20 cars; the random queries
			// above page deeper).
			for _, s := range []string{"ca", "ny", "tx", "wa"} {
				sameList(t, ctx, "garage.state="+s+"&doors=!9", ix, db)
			}
			for _, n := range []string{"main", "ocean+drive", "hudson", "lot+9"} {
				sameList(t, ctx, "garage.name="+n+"&doors=!9", ix, db)
			}
			// A car by id, the one just written among them.
			ids = carIDs()
			for _, id := range append(ids[:min(3, len(ids))], append(deleted, "no-such-car", lastWord(what))...) {
				sameCar(t, ctx, id, ix, db)
			}
		}
	})
}

// sameCar checks the index's answer for one car id against the store's.
func sameCar(t *testing.T, ctx context.Context, id string, ix *search.Index, db *store.DB) {
	t.Helper()
	want, werr := db.FindCarByID(ctx, id)
	got, gerr := ix.FindCarByID(ctx, id)
	if (werr == nil) != (gerr == nil) || yard.ErrorCode(werr) != yard.ErrorCode(gerr) {
		t.Fatalf("car %q: index error %v, store error %v", id, gerr, werr)
	}
	if werr == nil && carsText([]*yard.Car{got}) != carsText([]*yard.Car{want}) {
		t.Fatalf("car %q: index\n%s store\n%s", id, carsText([]*yard.Car{got}), carsText([]*yard.Car{want}))
	}
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// TestIndexSeesOtherProcesses: a write through one store handle (one
// process) is seen by the index of another handle on the same database
// by the first query that starts after the write returned.
// With a read lease (PostgreSQL, docs/cars.md "Read leases") the reader's
// queries go without the probe while nothing is written, and see the same.
func TestIndexSeesOtherProcesses(t *testing.T) {
	for _, engine := range append(slices.Clone(storetest.Engines), "postgres with a read lease") {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			lease := strings.HasSuffix(engine, "lease")
			if lease {
				engine = store.Postgres
			}
			dsn := storetest.DSN(t, engine)
			open := func() *store.DB {
				db := storetest.OpenDSN(t, dsn)
				return db
			}
			writer, reader := open(), open()
			if lease {
				lctx, stop := context.WithCancel(ctx)
				held := make(chan struct{})
				go func() { defer close(held); reader.HoldCarLease(lctx, time.Second, nil) }()
				t.Cleanup(func() { stop(); <-held })
			}
			r := rand.New(rand.NewPCG(3, 3))
			if _, err := writer.ImportCars(ctx, strings.NewReader(importLines(r, 60, true)), 50); err != nil {
				t.Fatal(err)
			}
			ix := build(t, reader)
			red, _, _ := yard.ParseCarQuery("color=red")
			count := func() int {
				l, err := ix.ListCars(ctx, red, yard.Page{Max: 1}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return l.Total
			}
			// quiet: a query went without the probe since the last call.
			var without int64
			quiet := func() bool {
				n := reader.CarReadsWithoutProbe()
				defer func() { without = n }()
				return n > without
			}
			if lease {
				for deadline := time.Now().Add(10 * time.Second); !quiet(); {
					if time.Now().After(deadline) {
						t.Fatal("the reader's queries did not go without the probe within 10 s")
					}
					count()
					time.Sleep(20 * time.Millisecond)
				}
			}
			before := count()
			c := &yard.Car{ID: "zz-new", Color: "RED", Type: "van", Doors: 3, Make: "Kia", Model: "Rio", Year: 2020, Garage: "g1"}
			if err := writer.CreateCar(ctx, c); err != nil {
				t.Fatal(err)
			}
			if got := count(); got != before+1 {
				t.Fatalf("after a create in another process: %d red cars, want %d", got, before+1)
			}
			ca := "ZZ-state"
			if _, err := writer.UpdateGarage(ctx, "g1", yard.GarageUpdate{State: &ca}); err != nil {
				t.Fatal(err)
			}
			q, _, _ := yard.ParseCarQuery("garage.state=zz-STATE&color=red")
			l, err := ix.ListCars(ctx, q, yard.Page{Max: 100}, nil)
			if err != nil || !strings.Contains(carsText(l.Cars), "zz-new ") {
				t.Fatalf("after a garage's state changed in another process: %v %s", err, carsText(l.Cars))
			}
			if err := writer.DeleteCar(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			if got := count(); got != before {
				t.Fatalf("after a delete in another process: %d red cars, want %d", got, before)
			}
			if _, err := writer.ImportCars(ctx, strings.NewReader(importLines(r, 30, false)), 10); err != nil {
				t.Fatal(err)
			}
			for range 50 {
				sameList(t, ctx, randomQuery(r), ix, writer)
			}
			if lease {
				quiet()
				count()
				count()
				if !quiet() {
					t.Fatal("after queries and no write, a query still probed")
				}
			}
		})
	}
}

// TestIndexBeforeBuild: until it is built, the index passes lists to the
// store.
func TestIndexBeforeBuild(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 4))
	if _, err := db.ImportCars(ctx, strings.NewReader(importLines(r, 20, true)), 50); err != nil {
		t.Fatal(err)
	}
	ix := search.New(db, nil)
	l, err := ix.ListCars(ctx, yard.Query{}, yard.Page{Max: 100}, []string{yard.FieldColor})
	if err != nil || l.Total != 20 || len(l.Cars) != 20 || len(l.Facets) != 1 {
		t.Fatalf("before the build: %v, %+v", err, l)
	}
	if err := ix.Sync(ctx); err != nil || ix.Ready() {
		t.Fatalf("Sync before the build: %v, ready %v", err, ix.Ready())
	}
}
