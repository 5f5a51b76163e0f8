package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestImportAndDemoCars(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	env := func(string) string { return "" }
	file := filepath.Join(t.TempDir(), "cars.ndjson")
	lines := `{"kind":"garage","id":"g1","name":"Main","state":"CA"}
{"kind":"car","id":"c1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}
{"kind":"car","id":"c2","color":"blue","type":"coupe","doors":2,"make":"BMW","model":"M3","year":2019}
`
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"import", file, "--data", data}, env, nil, &out, &errb); err != nil {
		t.Fatalf("import: %v %s", err, errb.String())
	}
	if !strings.Contains(out.String(), "imported 1 garage and 2 cars from 3 lines of ") {
		t.Fatalf("import output: %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"import", "-", "--data", data}, env, strings.NewReader(`{"kind":"car","color":"x"}`), &out, &errb); err == nil || !strings.HasPrefix(err.Error(), "stdin:1: car: ") {
		t.Fatalf("bad line: %v", err)
	}
	if err := run(context.Background(), []string{"import", "--data", data}, env, nil, &out, &errb); exitCode(err) != 2 {
		t.Fatalf("no file: %v", err)
	}
	// Cars exist, so --demo adds nothing, dogs neither; the imported cars
	// are served.
	s := startInProcess(t, "--data", data, "--demo")
	if strings.Contains(s.Out.String(), "demo: created") ||
		!strings.Contains(s.Out.String(), "demo: skipped the demo data: the store already holds 0 dogs, 1 garage and 2 cars") {
		t.Fatalf("demo seeded into a store that has cars, or did not say it skipped:\n%s", s.Out)
	}
	resp, page := call(t, "GET", s.URL+"/cars?color=red", "", "", nil)
	if resp.StatusCode != 200 || page["total"].(float64) != 1 {
		t.Fatalf("imported cars: %d %v", resp.StatusCode, page)
	}
	// The search index is built in the background; /readyz says when.
	waitCarIndex(t, s)
	// An import by another store handle (as by another process) is seen by
	// the next list, at once.
	more := filepath.Join(t.TempDir(), "more.ndjson")
	if err := os.WriteFile(more, []byte(`{"kind":"car","id":"c3","color":"Green","type":"van","doors":3,"make":"Kia","model":"Rio","year":2020,"garage":"g1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"import", more, "--data", data}, env, nil, &out, &errb); err != nil {
		t.Fatalf("import: %v %s", err, errb.String())
	}
	resp, page = call(t, "GET", s.URL+"/garages/g1/cars?color=green&facets=make", "", "", nil)
	if resp.StatusCode != 200 || page["total"].(float64) != 1 || fmt.Sprint(page["facets"]) != "map[make:map[kia:1]]" {
		t.Fatalf("a car imported after the index was built: %d %v", resp.StatusCode, page)
	}

	// An empty store gets the demo garages and cars.
	d := startInProcess(t, "--data", t.TempDir(), "--demo")
	if !strings.Contains(d.Out.String(), "demo: created 4 garages and 24 cars") {
		t.Fatalf("no demo cars:\n%s", d.Out)
	}
	resp, page = call(t, "GET", d.URL+"/g-sf/cars/car-01", "", "", nil)
	if resp.StatusCode != 200 || page["garage"] != "g-sf" {
		t.Fatalf("demo car in its garage: %d %v", resp.StatusCode, page)
	}
	resp, page = call(t, "GET", d.URL+"/cars?max=1000", "", "", nil)
	if resp.StatusCode != 200 || page["max"].(float64) != 100 || page["total"].(float64) != 24 {
		t.Fatalf("demo cars: %d %v", resp.StatusCode, page)
	}
}

// waitCarIndex waits until s answers car lists from its search index
// (/readyz says "carSearch":"index").
func waitCarIndex(t *testing.T, s *server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, ready := call(t, "GET", s.URL+"/readyz", "", "", nil)
		if ready["carSearch"] == "index" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the search index of %s is not built: /readyz %v", s.URL, ready)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
