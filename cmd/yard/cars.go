package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/yard-api/yard/store"
)

// The car side of the command line: `yard import` and the demo garages
// and cars of `serve --demo`.

// runImport bulk-loads garages and cars from an NDJSON file (docs/cars.md):
//
//	yard import FILE [--data DIR] [--db URL] [--batch N]
//
// FILE "-" reads standard input.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := newFlagSet("import", stderr)
	sf.register(fs)
	batch := fs.Int("batch", store.DefaultImportBatch, "lines per transaction")
	// Accept the file before or after the flags.
	var file string
	if len(args) > 0 && (args[0] == "-" || len(args[0]) > 0 && args[0][0] != '-') {
		file, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 || file == "" {
		return usageError("usage: yard import FILE [--data DIR] [--db URL] [--batch N]")
	}
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	db, err := openStore(ctx, sf)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	st, err := db.ImportCars(ctx, in, *batch)
	took := time.Since(start)
	fmt.Fprintf(stdout, "imported %d garages and %d cars (%d lines) into %s in %s\n", st.Garages, st.Cars, st.Lines, db, took.Round(time.Millisecond))
	return err
}

// seedDemoCars adds demo garages and cars to a store that has none.
func seedDemoCars(ctx context.Context, db *store.DB, out io.Writer) error {
	seeded, err := db.SeedDemoCars(ctx)
	if err == nil && seeded {
		fmt.Fprintln(out, "demo: created 4 garages and 24 cars (try /cars?color=red and /garages)")
	}
	return err
}
