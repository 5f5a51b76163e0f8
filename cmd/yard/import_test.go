package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
)

// TestImportMessages: errors as FILE:LINE in words, nothing reported as
// imported before it is, a note of what a failed import did write, the
// progress line when asked for, and a re-run of id-less lines that adds
// nothing.
func TestImportMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := func(string) string { return "" }
	data := t.TempDir()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	importFile := func(args ...string) (stdout, stderr string, err error) {
		var out, errb bytes.Buffer
		err = run(ctx, append([]string{"import"}, append(args, "--data", data)...), env, nil, &out, &errb)
		return out.String(), errb.String(), err
	}

	bad := write("bad.ndjson", `{"kind":"car","id":"c1","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":1700}`+"\n")
	out, errs, err := importFile(bad)
	if want := bad + `:1: car "c1": year must be a whole number from 1886 to 9999`; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if out != "" || errs != "" {
		t.Fatalf("a failed import that wrote nothing printed %q %q", out, errs)
	}
	notJSON := write("null.ndjson", "\n"+`{"kind":"garage","id":"g","name":"G","state":"CA"}`+"\nnoll\n")
	_, errs, err = importFile(notJSON, "--batch", "1")
	if want := notJSON + `:3: not JSON: unexpected 'o' at column 2`; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if !strings.Contains(errs, "lines 1-2 of "+notJSON+" were imported (1 garage and 0 cars) before the error") {
		t.Fatalf("no note of the batches written before the error: %q", errs)
	}

	cars := write("cars.ndjson", `{"kind":"garage","id":"g1","name":"Main","state":"CA"}
{"kind":"car","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}
{"kind":"car","color":"red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g1"}
`)
	for range 2 {
		out, errs, err = importFile(cars, "--progress", "on", "--batch", "2")
		if err != nil {
			t.Fatalf("import: %v %s", err, errs)
		}
		if !strings.HasPrefix(out, "imported 1 garage and 2 cars from 3 lines of "+cars+" into sqlite ") {
			t.Fatalf("summary %q", out)
		}
		if !strings.Contains(errs, "\rimporting "+cars+": 3 lines written, ") || !strings.Contains(errs, " MB read (100%)") || !strings.HasSuffix(errs, "\n") {
			t.Fatalf("progress %q", errs)
		}
	}
	db, err := store.Open(ctx, "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, n, err := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 1}); err != nil || n != 2 {
		t.Fatalf("%d cars after importing the file twice (%v), want 2", n, err)
	}
	if _, _, err := importFile(cars, "--progress", "sometimes"); exitCode(err) != 2 {
		t.Fatalf("bad --progress: %v", err)
	}
}

// TestImportProgressLine: the progress line's words, with and without a
// known size.
func TestImportProgressLine(t *testing.T) {
	p := &importProgress{name: "cars.ndjson", size: 143_000_000, read: new(atomic.Int64)}
	p.read.Store(51_200_000)
	p.lines.Store(150000)
	if got, want := p.line(5*time.Second), "importing cars.ndjson: 150000 lines written, 51.2 of 143.0 MB read (35%), 30000 lines/s"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	p.name, p.size = "stdin", -1
	if got, want := p.line(2*time.Second), "importing stdin: 150000 lines written, 51.2 MB read, 75000 lines/s"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestDemoSaysWhatItSkipped: --demo on a store that has dogs, garages and
// cars adds none and says so.
func TestDemoSaysWhatItSkipped(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	first := startInProcess(t, "--data", data, "--demo")
	if !strings.Contains(first.Out.String(), `demo: created person "alice"`) {
		t.Fatalf("first --demo:\n%s", first.Out)
	}
	first.stop(t)
	again := startInProcess(t, "--data", data, "--demo")
	out := again.Out.String()
	for _, want := range []string{
		"demo: skipped the demo data: the store already holds 3 dogs, 4 garages and 24 cars (--demo only fills a store with no dogs, garages or cars)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("second --demo does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "demo: created") {
		t.Errorf("second --demo created something:\n%s", out)
	}
}
