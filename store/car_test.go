package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// carFixture is a small, known set of garages and cars that the grammar
// tests below reason about.
const carFixture = `{"kind":"garage","id":"g-ca1","name":"Main Street","state":"CA"}
{"kind":"garage","id":"g-ca2","name":"Ocean Drive","state":"ca"}
{"kind":"garage","id":"g-ny","name":"Hudson","state":"NY"}
{"kind":"garage","id":"g-empty","name":"Empty Lot","state":"TX"}
{"kind":"car","id":"c01","color":"Red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g-ca1"}
{"kind":"car","id":"c02","color":"red","type":"coupe","doors":2,"make":"Ford","model":"Mustang","year":2018,"garage":"g-ca2"}
{"kind":"car","id":"c03","color":"blue","type":"sedan","doors":4,"make":"Toyota","model":"Corolla","year":2015,"garage":"g-ca1"}
{"kind":"car","id":"c04","color":"RED","type":"sedan","doors":4,"make":"Toyota","model":"Camry","year":2020,"garage":"g-ny"}
{"kind":"car","id":"c05","color":"green","type":"hatchback","doors":5,"make":"VW","model":"Golf, GTI","year":2012,"garage":null}
{"kind":"car","id":"c06","color":"red","type":"sedan","doors":4,"make":"Honda","model":"Civic","year":2005}
{"kind":"car","id":"c07","color":"black","type":"pickup","doors":2,"make":"Ford","model":"F-150","year":2021,"garage":"g-ny"}
{"kind":"car","id":"c08","color":"Blue","type":"coupe","doors":2,"make":"BMW","model":"M3","year":2019,"garage":"g-ca2"}
`

func loadFixture(t *testing.T, db *store.DB) {
	t.Helper()
	st, err := db.ImportCars(context.Background(), strings.NewReader(carFixture), 3)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if st.Garages != 4 || st.Cars != 8 {
		t.Fatalf("import stats %+v, want 4 garages and 8 cars", st)
	}
}

func carIDs(cars []*yard.Car) string {
	ids := make([]string, len(cars))
	for i, c := range cars {
		ids[i] = c.ID
	}
	return strings.Join(ids, ",")
}

// TestCarGrammar runs each grammar feature against both engines and checks
// which cars come back, and that equivalent forms agree.
func TestCarGrammar(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		loadFixture(t, db)
		ctx := context.Background()
		tests := []struct {
			forms []string // all equivalent
			want  string
		}{
			{[]string{"", "max=20"}, "c01,c02,c03,c04,c05,c06,c07,c08"},
			{[]string{"color=red", "color=RED", "q.color.eq=Red", `{"color":"red"}`, `{"$class":"car","$q":{"$eq":{"color":"rEd"}}}`}, "c01,c02,c04,c06"},
			{[]string{"color=red,blue", "color=red&color=blue", "color=red;color=blue", `{"color":["red","blue"]}`}, "c01,c02,c03,c04,c06,c08"},
			{[]string{"color=!red", "q.color.ne=red", `{"$q":{"$ne":{"color":"red"}}}`}, "c03,c05,c07,c08"},
			{[]string{"color=red&make=!ford", "color=red;vendor=!Ford", `{"$q":{"$eq":{"color":"red"},"$ne":{"make":"ford"}}}`}, "c04,c06"},
			{[]string{"model=Golf%2C+GTI", "model=golf%2c%20gti", `{"model":"Golf, GTI"}`}, "c05"},
			{[]string{"model=golf,+gti"}, ""},
			{[]string{"vendor=toyota", "make=Toyota", "q.vendor.eq=TOYOTA"}, "c03,c04"},
			{[]string{"garage=null", "garage.id=null", "q.garage.id.eq=null", `{"garage":null}`, `{"$q":{"$eq":{"garage":null}}}`}, "c05,c06"},
			{[]string{"garage=!null", "q.garage.ne=null", `{"$q":{"$ne":{"garage":null}}}`}, "c01,c02,c03,c04,c07,c08"},
			{[]string{"garage.state=CA", "q.garage.state.eq=ca", `{"garage":{"state":"CA"}}`, `{"$q":{"$eq":{"garage":{"state":"ca"}}}}`}, "c01,c02,c03,c08"},
			{[]string{"garage.state=!ca", `{"$q":{"$ne":{"garage":{"state":"CA"}}}}`}, "c04,c05,c06,c07"},
			{[]string{"garage.name=main+street", `{"garage":{"name":"Main Street"}}`}, "c01,c03"},
			{[]string{"garage.name=!hudson,null"}, "c05,c06"},
			{[]string{"garage=g-ny", "garage.id=g-ny", "q.garage.id.eq=g-ny", `{"garage":"g-ny"}`, `{"garage":{"id":"g-ny"}}`}, "c04,c07"},
			{[]string{"garage=G-NY"}, ""},
			{[]string{"doors=2", "q.doors.eq=2", "q.doors.lt=3", "q.doors.le=2", `{"doors":2}`, `{"$q":{"$lt":{"doors":3}}}`}, "c02,c07,c08"},
			{[]string{"q.year.ge=2015&q.year.lt=2020", `{"$q":{"$ge":{"year":2015},"$lt":{"year":2020}}}`}, "c02,c03,c08"},
			{[]string{"q.year.gt=2018&color=!black", "q.year.gt=2018;q.color.ne=black"}, "c04,c08"},
			{[]string{"color=red&doors=4&make=!ford", "color=red;doors=4;vendor=!FORD", `{"$q":{"$eq":{"color":"red","doors":4},"$ne":{"vendor":"Ford"}}}`}, "c04,c06"},
			{[]string{"color=red&garage.state=ca&make=ford", `{"color":"red","make":"Ford","garage":{"state":"CA"}}`}, "c01,c02"},
		}
		for _, tt := range tests {
			for _, form := range tt.forms {
				var q yard.Query
				if strings.HasPrefix(form, "{") {
					req, err := yard.ParseSearchBody([]byte(form))
					if err != nil {
						t.Fatalf("%s: %v", form, err)
					}
					q = req.Query
				} else {
					var err error
					if q, _, err = yard.ParseCarQuery(form); err != nil {
						t.Fatalf("%s: %v", form, err)
					}
				}
				cars, total, err := db.FindCars(ctx, q, yard.Page{Max: 100})
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				if got := carIDs(cars); got != tt.want || total != len(cars) {
					t.Errorf("%s: got %q (total %d), want %q", form, got, total, tt.want)
				}
			}
		}
		// Paging: a window of the ordered result, total of all.
		q, _, _ := yard.ParseCarQuery("color=red")
		cars, total, err := db.FindCars(ctx, q, yard.Page{Offset: 1, Max: 2})
		if err != nil || carIDs(cars) != "c02,c04" || total != 4 {
			t.Fatalf("page: got %q of %d, %v; want c02,c04 of 4", carIDs(cars), total, err)
		}
		// And-ing a garage restriction (the /garages/{id}/cars list).
		g, _, _ := yard.ParseCarQuery("garage.id=g-ca1")
		cars, _, _ = db.FindCars(ctx, g.And(q), yard.Page{Max: 10})
		if carIDs(cars) != "c01" {
			t.Fatalf("garage and color: got %q, want c01", carIDs(cars))
		}
	})
}

func TestCarWrites(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		loadFixture(t, db)
		red, _, _ := yard.ParseCarQuery("color=red")
		ca, _, _ := yard.ParseCarQuery("garage.state=ca")
		count := func(q yard.Query) int {
			t.Helper()
			_, n, err := db.FindCars(ctx, q, yard.Page{Max: 1})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(red); n != 4 {
			t.Fatalf("red: %d, want 4", n)
		}
		// A new car is counted at once.
		c := &yard.Car{Color: "Red", Type: "sedan", Doors: 4, Make: "Kia", Model: "Rio", Year: 2022, Garage: "g-ca1"}
		if err := db.CreateCar(ctx, c); err != nil {
			t.Fatal(err)
		}
		if n := count(red); n != 5 {
			t.Fatalf("red after create: %d, want 5", n)
		}
		// A write shows in the next page at once.
		page, _, err := db.FindCars(ctx, red, yard.Page{Max: 10})
		if err != nil || !strings.Contains(carIDs(page), c.ID) {
			t.Fatalf("red page after create: %q, %v; want %s in it", carIDs(page), err, c.ID)
		}
		page[0].Color = "scribbled" // callers get copies
		again, _, _ := db.FindCars(ctx, red, yard.Page{Max: 10})
		if again[0].Color == "scribbled" || carIDs(again) != carIDs(page) {
			t.Fatalf("a page changed by a caller: %+v", again[0])
		}
		blue := "Blue"
		if _, err := db.UpdateCar(ctx, c.ID, yard.CarUpdate{Color: &blue}); err != nil {
			t.Fatal(err)
		}
		if page, n, _ := db.FindCars(ctx, red, yard.Page{Max: 10}); n != 4 || strings.Contains(carIDs(page), c.ID) {
			t.Fatalf("red after recolouring: %q (%d)", carIDs(page), n)
		}
		red2 := "Red"
		if _, err := db.UpdateCar(ctx, c.ID, yard.CarUpdate{Color: &red2}); err != nil {
			t.Fatal(err)
		}
		bad := &yard.Car{Color: "red", Type: "sedan", Doors: 4, Make: "Kia", Model: "Rio", Year: 2022, Garage: "nope"}
		if err := db.CreateCar(ctx, bad); yard.ErrorCode(err) != yard.EINVALID || err.(*yard.Error).Fields[0].Field != "garage" {
			t.Fatalf("unknown garage: %v, want invalid naming garage", err)
		}
		if err := db.CreateCar(ctx, &yard.Car{ID: "c01", Color: "x", Type: "x", Doors: 1, Make: "x", Model: "x", Year: 2000}); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("duplicate id: %v, want conflict", err)
		}
		if err := db.CreateCar(ctx, &yard.Car{Color: "", Type: "x", Doors: 1, Make: "x", Model: "x", Year: 1200}); yard.ErrorCode(err) != yard.EINVALID {
			t.Fatalf("bad car: %v, want invalid", err)
		}
		// Moving a car out of its garage changes the garage.state matches.
		none := ""
		got, err := db.UpdateCar(ctx, c.ID, yard.CarUpdate{Garage: &none})
		if err != nil || got.Garage != "" || got.Color != "Red" {
			t.Fatalf("update: %+v, %v", got, err)
		}
		if n := count(ca); n != 4 {
			t.Fatalf("ca after move: %d, want 4", n)
		}
		// A garage changing state carries its cars along.
		tx := "TX"
		if g, err := db.UpdateGarage(ctx, "g-ny", yard.GarageUpdate{State: &tx}); err != nil || g.CarCount != 2 || g.State != "TX" {
			t.Fatalf("garage update: %+v, %v", g, err)
		}
		txq, _, _ := yard.ParseCarQuery("garage.state=tx")
		if n := count(txq); n != 2 {
			t.Fatalf("tx after state change: %d, want 2", n)
		}
		// Replace creates, then replaces.
		r := &yard.Car{ID: "mine-1", Color: "white", Type: "van", Doors: 5, Make: "Ford", Model: "Transit", Year: 2017, Garage: "g-empty"}
		if created, err := db.ReplaceCar(ctx, r); err != nil || !created {
			t.Fatalf("replace new: %v, %v", created, err)
		}
		r.Color = "Grey"
		if created, err := db.ReplaceCar(ctx, r); err != nil || created {
			t.Fatalf("replace existing: %v, %v", created, err)
		}
		if got, _ := db.FindCarByID(ctx, "mine-1"); got.Color != "Grey" || got.Garage != "g-empty" {
			t.Fatalf("replaced car: %+v", got)
		}
		// A replacement keeps the creation time, and moves the car's
		// garage.state with its garage.
		first, _ := db.FindCarByID(ctx, "mine-1")
		noop := yard.CarChangeHandler{Garage: func(*yard.Garage) {}, Car: func(*yard.Car) {},
			CarDeleted: func(string) {}, GarageDeleted: func(string) {}}
		p0, err := db.ReadCarChanges(ctx, yard.CarPosition{}, noop)
		if err != nil {
			t.Fatal(err)
		}
		r.Garage = "g-ny"
		if created, err := db.ReplaceCar(ctx, r); err != nil || created || !r.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("replace into g-ny: %v, %v, created %v want %v", created, err, r.CreatedAt, first.CreatedAt)
		}
		var replaced []string
		p1, err := db.ReadCarChanges(ctx, p0, yard.CarChangeHandler{Garage: func(*yard.Garage) {},
			Car: func(c *yard.Car) { replaced = append(replaced, c.ID) }, CarDeleted: func(string) {}, GarageDeleted: func(string) {}})
		if err != nil || strings.Join(replaced, ",") != "mine-1" {
			t.Fatalf("changes after a replacement: %q, %v; want mine-1", replaced, err)
		}
		if l, _ := db.ListCars(ctx, txq, yard.Page{Max: 10}, nil); !strings.Contains(carIDs(l.Cars), "mine-1") {
			t.Fatalf("garage.state=tx after replacing into g-ny: %q", carIDs(l.Cars))
		}
		// An unknown garage writes nothing, whether the car exists or not.
		for _, id := range []string{"mine-1", "mine-2"} {
			bad := &yard.Car{ID: id, Color: "pink", Type: "van", Doors: 5, Make: "Ford", Model: "Transit", Year: 2017, Garage: "nope"}
			if _, err := db.ReplaceCar(ctx, bad); yard.ErrorCode(err) != yard.EINVALID || err.(*yard.Error).Fields[0].Field != "garage" {
				t.Fatalf("replace %s with an unknown garage: %v, want invalid naming garage", id, err)
			}
		}
		if got, _ := db.FindCarByID(ctx, "mine-1"); got.Color != "Grey" || got.Garage != "g-ny" {
			t.Fatalf("car after a refused replacement: %+v", got)
		}
		if _, err := db.FindCarByID(ctx, "mine-2"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("car created by a refused replacement: %v", err)
		}
		if moved, err := db.CarsChangedSince(ctx, p1); err != nil || moved {
			t.Fatalf("changes after refused replacements: %v, %v; want none", moved, err)
		}
		r.Garage = "g-empty"
		if _, err := db.ReplaceCar(ctx, r); err != nil {
			t.Fatal(err)
		}
		// A garage holding cars cannot be deleted.
		if err := db.DeleteGarage(ctx, "g-empty"); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("delete full garage: %v, want conflict", err)
		}
		if err := db.DeleteCar(ctx, "mine-1"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteCar(ctx, "mine-1"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("delete again: %v, want not found", err)
		}
		if err := db.DeleteGarage(ctx, "g-empty"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindGarageByID(ctx, "g-empty"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("deleted garage: %v", err)
		}
		gs, total, err := db.FindGarages(ctx, yard.Page{Max: 10})
		if err != nil || total != 3 || len(gs) != 3 || gs[0].ID != "g-ca1" || gs[0].CarCount != 2 {
			t.Fatalf("garages: %d of %d, %v; first %+v", len(gs), total, err, gs[0])
		}
		if created, err := db.ReplaceGarage(ctx, &yard.Garage{ID: "g-ca1", Name: "Main St", State: "NV"}); err != nil || created {
			t.Fatalf("replace garage: %v %v", created, err)
		}
		nv, _, _ := yard.ParseCarQuery("garage.state=nv")
		if n := count(nv); n != 2 {
			t.Fatalf("nv after replace: %d, want 2", n)
		}
	})
}

func TestSearches(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		req, err := yard.ParseSearchBody([]byte(`{"$class":"car","$q":{"$eq":{"color":"red","garage":{"state":"CA"}},"$ne":{"make":"Ford"}},"name":"RedCA"}`))
		if err != nil {
			t.Fatal(err)
		}
		s := &yard.Search{Name: req.Name, Query: req.Query, CreatedBy: "u1"}
		if err := db.CreateSearch(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateSearch(ctx, &yard.Search{Name: "redca", CreatedBy: "u1"}); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("duplicate name: %v", err)
		}
		if err := db.CreateSearch(ctx, &yard.Search{CreatedBy: "u1"}); err != nil {
			t.Fatalf("unnamed: %v", err)
		}
		if err := db.CreateSearch(ctx, &yard.Search{CreatedBy: "u1"}); err != nil {
			t.Fatalf("second unnamed: %v", err)
		}
		got, err := db.FindSearchByName(ctx, "redCA")
		if err != nil || got.ID != s.ID || !got.Query.Equal(req.Query) || got.Name != "RedCA" {
			t.Fatalf("by name: %+v, %v", got, err)
		}
		if got, err := db.FindSearchByID(ctx, s.ID); err != nil || got.Query.String() != "color=red&garage.state=ca&make=!ford" {
			t.Fatalf("by id: %+v, %v", got, err)
		}
		list, total, err := db.FindSearches(ctx, yard.Page{Max: 2})
		if err != nil || total != 3 || len(list) != 2 {
			t.Fatalf("list: %d of %d, %v", len(list), total, err)
		}
		if err := db.DeleteSearch(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindSearchByName(ctx, "redca"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("after delete: %v", err)
		}
		if err := db.DeleteSearch(ctx, s.ID); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("delete again: %v", err)
		}
	})
}

func TestImportErrorsAndDemo(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, tt := range []struct{ in, want string }{
			{`{"kind":"car","color":"red","type":"x","doors":2,"make":"m","model":"m","year":2000,"garage":"nowhere"}`, "line 1"},
			{"\n" + `{"kind":"boat"}`, "line 2"},
			{`{"kind":"garage","name":"x","state":"CA","extra":1}`, "line 1"},
			{`{"kind":"car","color":"","type":"x","doors":2,"make":"m","model":"m","year":2000}`, "line 1"},
		} {
			if _, err := db.ImportCars(ctx, strings.NewReader(tt.in), 0); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("import %q: %v, want an error naming %s", tt.in, err, tt.want)
			}
		}
		before, err := db.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seeded, err := db.SeedDemoCars(ctx)
		if err != nil || !seeded {
			t.Fatalf("seed: %v %v", seeded, err)
		}
		// Every garage and car it wrote has its created event.
		seen, err := db.ReadEvents(ctx, yard.EventFilter{After: before, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, e := range seen.Events {
			kinds[e.Type]++
		}
		if kinds[yard.EventGarageCreated] != 4 || kinds[yard.EventCarCreated] != 24 || len(seen.Events) != 28 {
			t.Fatalf("the demo's events: %v", kinds)
		}
		if seeded, err := db.SeedDemoCars(ctx); err != nil || seeded {
			t.Fatalf("second seed: %v %v, want nothing written", seeded, err)
		}
		all, total, err := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 100})
		if err != nil || total != 24 || len(all) != 24 {
			t.Fatalf("demo cars: %d of %d, %v", len(all), total, err)
		}
		// Re-importing a line with a known id replaces it.
		if _, err := db.ImportCars(ctx, strings.NewReader(`{"kind":"car","id":"car-01","color":"Pink","type":"sedan","doors":4,"make":"Fiat","model":"500","year":2011}`), 0); err != nil {
			t.Fatal(err)
		}
		if c, _ := db.FindCarByID(ctx, "car-01"); c.Color != "Pink" || c.Garage != "" {
			t.Fatalf("re-imported car: %+v", c)
		}
		// Many lines across batches and multi-row chunks.
		var b strings.Builder
		b.WriteString(`{"kind":"garage","id":"bulk","name":"Bulk","state":"WA"}` + "\n")
		for i := range 250 {
			fmt.Fprintf(&b, `{"kind":"car","color":"c%d","type":"t","doors":4,"make":"m","model":"m","year":2000,"garage":"bulk"}`+"\n", i%7)
		}
		st, err := db.ImportCars(ctx, strings.NewReader(b.String()), 120)
		if err != nil || st.Cars != 250 || st.Garages != 1 {
			t.Fatalf("bulk: %+v %v", st, err)
		}
		wa, _, _ := yard.ParseCarQuery("garage.state=WA")
		if _, n, _ := db.FindCars(ctx, wa, yard.Page{Max: 1}); n != 250 {
			t.Fatalf("bulk cars in WA: %d, want 250", n)
		}
		if !slices.ContainsFunc(all, func(c *yard.Car) bool { return c.Garage == "" }) {
			t.Fatal("demo data has no car outside a garage")
		}
	})
}
