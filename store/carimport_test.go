package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestImportErrorWords: an import error names the line and says what is
// wrong in words, without Go's own error texts.
func TestImportErrorWords(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		car := `"type":"sedan","doors":4,"make":"Ford","model":"Focus"`
		for _, tt := range []struct{ in, want string }{
			{`{"kind":"car","id":"c1","color":"red",` + car + `,"year":1700}`,
				`line 1: car "c1": year must be a whole number from 1886 to 9999`},
			{"\n\n" + `nope`, `line 3: not JSON: unexpected 'o' at column 2`},
			{`{"kind":"car","color":"red"`, `line 1: not JSON: the line ends inside the object`},
			{`{"kind":"car"} {}`, `line 1: not JSON: more after the object, at column 15`},
			{`[1]`, `line 1: not a JSON object (each line is one garage or car object)`},
			{`{"kind":"car","color":"red",` + car + `,"year":"2010"}`, `line 1: year must be a whole number, not string`},
			{`{"kind":"garage","name":"x","state":"CA","extra":1}`, `line 1: unknown field "extra" (a garage line has kind`},
			{`{"kind":"garage","name":"x","state":"CA","doors":1}`, `line 1: garage: only kind, id, name and state belong on a garage line`},
			{`{"kind":"boat"}`, `line 1: kind must be "garage" or "car", not "boat"`},
			{`{"id":"x"}`, `line 1: no "kind": it must be "garage" or "car"`},
			{`{"kind":"car","color":"",` + car + `,"year":2000,"garage":"nowhere"}`, `line 1: car: color is required`},
			{`{"kind":"car","id":"c2","color":"red",` + car + `,"year":2000,"garage":"nowhere"}`,
				`line 1: car "c2": garage "nowhere" is unknown: define it on an earlier line or import it first`},
		} {
			_, err := db.ImportCars(ctx, strings.NewReader(tt.in), 0)
			var ie *store.ImportError
			if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("import %q:\ngot  %v\nwant %s…", tt.in, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "code=") {
				t.Errorf("import %q: Go internals in %q", tt.in, err)
			}
		}
		if _, total, _ := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 1}); total != 0 {
			t.Fatalf("%d cars stored by failed imports", total)
		}
		// The batches before a bad line stay written and are counted.
		var b strings.Builder
		for i := range 5 {
			fmt.Fprintf(&b, `{"kind":"car","id":"ok%d","color":"red",%s,"year":2000}`+"\n", i, car)
		}
		b.WriteString("{\n")
		st, err := db.ImportCars(ctx, strings.NewReader(b.String()), 2)
		if err == nil || !strings.HasPrefix(err.Error(), "line 6: ") || st.Cars != 4 || st.Lines != 4 {
			t.Fatalf("bad 6th line in batches of 2: %+v %v, want 4 cars written and an error on line 6", st, err)
		}
	})
}

// TestImportRerunAndRepeatedIDs: lines without id get ids derived from
// their content, so importing a file again replaces instead of adding; a
// repeated id within one batch (bigger than PostgreSQL's 200-row
// statements) is last-one-wins on both engines.
func TestImportRerunAndRepeatedIDs(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		in := `{"kind":"garage","name":"Anon","state":"OR"}
{"kind":"car","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010}
{"kind":"car","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010}
{"kind":"car", "year":2011, "color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus"}
`
		var progress []store.ImportStats
		for run := 1; run <= 2; run++ {
			st, err := db.ImportCarsWith(ctx, strings.NewReader(in), store.ImportOptions{Batch: 2, Progress: func(s store.ImportStats) {
				progress = append(progress, s)
			}})
			if err != nil || st != (store.ImportStats{Garages: 1, Cars: 3, Lines: 4}) {
				t.Fatalf("run %d: %+v %v", run, st, err)
			}
			cars, total, err := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 10})
			if err != nil || total != 3 {
				t.Fatalf("run %d: %d cars (%v), want 3: two identical lines are two cars, and a re-run adds none", run, total, err)
			}
			if _, n, _ := db.FindGarages(ctx, yard.Page{Max: 10}); n != 1 {
				t.Fatalf("run %d: %d garages, want 1", run, n)
			}
			for _, c := range cars {
				if !strings.HasPrefix(c.ID, "car-") || !yard.ValidClientID(c.ID) {
					t.Fatalf("generated id %q", c.ID)
				}
			}
		}
		if len(progress) != 4 || progress[0] != (store.ImportStats{Garages: 1, Cars: 1, Lines: 2}) || progress[1].Lines != 4 {
			t.Fatalf("progress reports %+v, want one per batch of 2 lines", progress)
		}

		// 452 lines, ids repeating across the 64-row statements (SQLite)
		// and the 100-row arrays (PostgreSQL, whose default is larger) of
		// one batch, and right next to each other.
		defer store.SetImportChunks(64, 100)()
		var b strings.Builder
		b.WriteString(`{"kind":"garage","id":"gdup","name":"First","state":"WA"}` + "\n")
		b.WriteString(`{"kind":"garage","id":"gdup","name":"Second","state":"ID"}` + "\n")
		for i := range 450 {
			fmt.Fprintf(&b, `{"kind":"car","id":"dup-%d","color":"c%d","type":"t","doors":4,"make":"m","model":"m","year":2000,"garage":"gdup"}`+"\n", i%150, i)
		}
		st, err := db.ImportCars(ctx, strings.NewReader(b.String()), 1000)
		if err != nil || st.Cars != 450 || st.Garages != 2 {
			t.Fatalf("repeated ids: %+v %v", st, err)
		}
		g, err := db.FindGarageByID(ctx, "gdup")
		if err != nil || g.Name != "Second" {
			t.Fatalf("repeated garage: %+v %v, want the last line's", g, err)
		}
		for _, i := range []int{0, 97, 149} {
			c, err := db.FindCarByID(ctx, fmt.Sprintf("dup-%d", i))
			if want := fmt.Sprintf("c%d", 300+i); err != nil || c.Color != want {
				t.Fatalf("dup-%d: %+v %v, want the last line's color %s", i, c, err, want)
			}
		}
		id, _, _ := yard.ParseCarQuery("garage.state=id")
		if _, n, _ := db.FindCars(ctx, id, yard.Page{Max: 1}); n != 150 {
			t.Fatalf("cars in the repeated garage's last state: %d, want 150", n)
		}

		// A garage moved to another state after its cars' lines, in the
		// same batch and in later ones (the lines are read while the
		// batch before is written): every car ends in its garage's last
		// state.
		car := `{"kind":"car","id":"mv-%d","color":"red","type":"t","doors":2,"make":"m","model":"m","year":2001,"garage":"gmove"}` + "\n"
		garage := `{"kind":"garage","id":"gmove","name":"M","state":"%s"}` + "\n"
		moves := fmt.Sprintf(garage, "TX") + fmt.Sprintf(car, 1) + fmt.Sprintf(garage, "NV") + fmt.Sprintf(car, 2) + fmt.Sprintf(garage, "UT")
		for _, batch := range []int{1000, 3, 2, 1} {
			if _, err := db.ImportCars(ctx, strings.NewReader(moves), batch); err != nil {
				t.Fatal(err)
			}
			ut, _, _ := yard.ParseCarQuery("garage.state=ut")
			if _, n, _ := db.FindCars(ctx, ut, yard.Page{Max: 1}); n != 2 {
				t.Fatalf("batch %d: %d cars in the moved garage's last state, want 2", batch, n)
			}
			// Back to TX for the next round.
			if _, err := db.ImportCars(ctx, strings.NewReader(fmt.Sprintf(garage, "TX")), 1); err != nil {
				t.Fatal(err)
			}
		}
	})
}
