package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

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
			{`{"kind":"car","color":"red","type":"sedan","make":"Ford","model":"T","year":2000}`, `line 1: car: doors is required`},
			{`{"kind":"car","id":"c3","color":"red","type":"sedan","doors":null,"make":"Ford","model":"T","year":2000}`, `line 1: car "c3": doors is required`},
			{`{"kind":"garage","name":"x","state":"CA","state":"NY"}`, `line 1: member "state" is given twice`},
			{`{"KIND":"garage","name":"x","state":"CA"}`, `line 1: unknown field "KIND" (a garage line has kind`},
			{"{\"kind\":\"garage\",\"name\":\"x\xff\",\"state\":\"CA\"}", `line 1: not JSON: invalid UTF-8`},
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
		// one batch, and right next to each other, into a store that cuts
		// its statements so.
		db = storetest.Open(t, db.Engine(), store.WithImportChunks(64, 100))
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

// TestBulkImport: an import into an empty cars table leaves
// cars_garage_idx out while it loads (and, on PostgreSQL, the foreign key's
// trigger) and writes the same rows as one that keeps every index up to
// date: with garages after cars, garages changing state, and car ids
// repeating across batches (the plain INSERT then gives way to the
// upsert). The index is there at the end, after a failed import too, and
// Migrate builds it when an import was killed before its end.
func TestBulkImport(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if db.Engine() == store.Postgres && !db.MaySkipTriggers(ctx) {
			t.Log("the test role may not set session_replication_role: the foreign key's trigger stays on")
		}
		rng := rand.New(rand.NewPCG(7, 25))
		var b strings.Builder
		garage := func(i int) {
			fmt.Fprintf(&b, `{"kind":"garage","id":"g%d","name":"Garage %d","state":"%s"}`+"\n", i, i, []string{"CA", "Or", "wa"}[rng.IntN(3)])
		}
		for i := range 20 {
			garage(i)
		}
		for i := range 900 {
			if i == 400 || i == 700 {
				garage(rng.IntN(20)) // a garage changing state, after cars
				garage(20 + i)       // and a new one
			}
			g := `"garage":null`
			if rng.IntN(10) > 0 {
				g = fmt.Sprintf(`"garage":"g%d"`, rng.IntN(20))
			}
			id := i
			if i >= 600 && rng.IntN(4) == 0 {
				id = rng.IntN(600) // already written by an earlier batch
			}
			fmt.Fprintf(&b, `{"kind":"car","id":"c%d","color":"%s","type":"sedan","doors":%d,"make":"M%d","model":"X","year":%d,%s}`+"\n",
				id, []string{"red", "Blue", "grün"}[rng.IntN(3)], rng.IntN(5), rng.IntN(4), 1990+rng.IntN(30), g)
		}
		in := b.String()

		keep := storetest.Open(t, db.Engine())
		for _, s := range []struct {
			db   *store.DB
			keep bool
		}{{db, false}, {keep, true}} {
			if _, err := s.db.ImportCarsWith(ctx, strings.NewReader(in), store.ImportOptions{Batch: 100, KeepIndexes: s.keep}); err != nil {
				t.Fatalf("import (keep indexes %v): %v", s.keep, err)
			}
			if ok, err := s.db.HasCarGarageIndex(ctx); !ok || err != nil {
				t.Fatalf("cars_garage_idx after the import (keep indexes %v): %v %v", s.keep, ok, err)
			}
		}
		bulk, err := db.CarRowsForTest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := keep.CarRowsForTest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(bulk) < 22+600 || strings.Join(bulk, "\n") != strings.Join(kept, "\n") {
			t.Fatalf("the bulk import wrote %d rows, the other %d; they differ:\n%s\n---\n%s", len(bulk), len(kept),
				strings.Join(bulk[:min(30, len(bulk))], "\n"), strings.Join(kept[:min(30, len(kept))], "\n"))
		}
		// Run again, every car goes through the upsert (on PostgreSQL the
		// unnest arrays rather than COPY) and writes the same rows.
		if _, err := keep.ImportCars(ctx, strings.NewReader(in), 100); err != nil {
			t.Fatal(err)
		}
		again, err := keep.CarRowsForTest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(again, "\n") != strings.Join(kept, "\n") {
			t.Fatal("the import run again changed the rows")
		}

		// A failed import into an empty table builds the index on its way
		// out; a killed one leaves it to Migrate.
		fresh := storetest.Open(t, db.Engine())
		if _, err := fresh.ImportCars(ctx, strings.NewReader(in[:len(in)/2]+"{\n"), 100); err == nil {
			t.Fatal("an import with a bad line succeeded")
		}
		if ok, err := fresh.HasCarGarageIndex(ctx); !ok || err != nil {
			t.Fatalf("cars_garage_idx after a failed import: %v %v", ok, err)
		}
		empty := storetest.Open(t, db.Engine())
		if dropped, err := empty.DeferCarIndexes(ctx); !dropped || err != nil {
			t.Fatalf("an empty cars table kept its index: %v %v", dropped, err)
		}
		if ok, _ := empty.HasCarGarageIndex(ctx); ok {
			t.Fatal("cars_garage_idx still there")
		}
		if err := empty.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := empty.HasCarGarageIndex(ctx); !ok || err != nil {
			t.Fatalf("cars_garage_idx after Migrate: %v %v", ok, err)
		}
		if dropped, err := db.DeferCarIndexes(ctx); dropped || err != nil {
			t.Fatalf("a table of cars lost its index: %v %v", dropped, err)
		}
	})
}

// TestImportGarageGone: a car whose garage the import had seen, but which
// is gone when its batch is written, fails the batch on both engines, also
// when the batch skips the foreign key's trigger (PostgreSQL).
func TestImportGarageGone(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		err := db.ImportKnowingGarage(ctx, "gone", "ca",
			`{"kind":"car","id":"c1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"gone"}`)
		if err == nil {
			t.Fatal("a car in a garage that is not stored was imported")
		}
		if _, total, _ := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 1}); total != 0 {
			t.Fatalf("%d cars written", total)
		}
		// The store checks foreign keys again after an import, failed or
		// not (SQLite turns them off on the batch's connection).
		// (ReplaceCar of a stored car leaves the garage to the foreign key.)
		if err := db.CreateCar(ctx, &yard.Car{ID: "c9", Color: "red", Type: "sedan", Doors: 4, Make: "Ford", Model: "Focus", Year: 2010}); err != nil {
			t.Fatal(err)
		}
		for _, in := range []string{"{\n", `{"kind":"garage","id":"g1","name":"G","state":"CA"}`} {
			_, _ = db.ImportCars(ctx, strings.NewReader(in), 10)
			_, err := db.ReplaceCar(ctx, &yard.Car{ID: "c9", Color: "red", Type: "sedan", Doors: 4, Make: "Ford", Model: "Focus", Year: 2010, Garage: "nowhere"})
			if yard.ErrorCode(err) != yard.EINVALID {
				t.Fatalf("a car in no stored garage after an import: %v, want EINVALID", err)
			}
		}
	})
}

// TestImportRoleWithoutReplica: a PostgreSQL role that may not set
// session_replication_role imports with the foreign key's trigger on
// (COPY fires it too): the same rows, and a car whose garage is gone is
// refused by the constraint.
func TestImportRoleWithoutReplica(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.NewPostgresDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	role := "yard_plain_" + name
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{`CREATE ROLE ` + role + ` LOGIN PASSWORD 'plain'`, `ALTER DATABASE ` + name + ` OWNER TO ` + role} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			if os.Getenv("CI") != "true" && strings.Contains(err.Error(), "42501") { // YARD_TEST_POSTGRES_URL's role may not
				t.Skipf("%s: %v", q, err)
			}
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		u.Path = "/postgres"
		if c, err := sql.Open("pgx", u.String()); err == nil {
			_, _ = c.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
			_, _ = c.Exec(`DROP ROLE IF EXISTS ` + role)
			c.Close()
		}
	})
	admin.Close()
	plain := *u
	plain.User = url.UserPassword(role, "plain")
	db := storetest.OpenDSN(t, plain.String())
	if db.MaySkipTriggers(ctx) {
		t.Fatalf("role %s may set session_replication_role", role)
	}
	in := `{"kind":"garage","id":"g1","name":"G","state":"CA"}
{"kind":"car","id":"c1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}
{"kind":"car","id":"c2","color":"blue","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2011}
`
	if st, err := db.ImportCars(ctx, strings.NewReader(in), 10); err != nil || st.Cars != 2 {
		t.Fatalf("import: %+v %v", st, err)
	}
	rows, err := db.CarRowsForTest(ctx)
	if err != nil || len(rows) != 3 || !strings.Contains(rows[1], "g1/ca") {
		t.Fatalf("rows %q %v", rows, err)
	}
	if ok, err := db.HasCarGarageIndex(ctx); !ok || err != nil {
		t.Fatalf("cars_garage_idx: %v %v", ok, err)
	}
	err = db.ImportKnowingGarage(ctx, "gone", "ca",
		`{"kind":"car","id":"c3","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"gone"}`)
	if err == nil || !strings.Contains(err.Error(), "23503") {
		t.Fatalf("a car in a garage that is not stored: %v, want the foreign key's error", err)
	}
}

// TestImportFirstWrite: an import that is the store's first write (no
// write statement prepared yet, no index dropped first) does not wait on
// the connection its batch holds (SQLite's write pool has one).
func TestImportFirstWrite(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		db.ForgetWriteStatements()
		done := make(chan error, 1)
		go func() {
			_, err := db.ImportCarsWith(context.Background(), strings.NewReader(
				`{"kind":"car","id":"c1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010}`),
				store.ImportOptions{KeepIndexes: true})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the import's first batch is stuck")
		}
	})
}
