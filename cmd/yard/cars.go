package main

import (
	"context"
	"fmt"
	"io"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
)

// The car side of the command line: `yard import` and the demo garages
// and cars of `serve --demo`.

// seedDemoCars adds demo garages and cars to a store that has none, and
// otherwise says that it added none.
func seedDemoCars(ctx context.Context, db *store.DB, out io.Writer) error {
	seeded, err := db.SeedDemoCars(ctx)
	if err != nil {
		return err
	}
	if seeded {
		fmt.Fprintln(out, "demo: created 4 garages and 24 cars (try /cars?color=red and /garages)")
		return nil
	}
	_, garages, err := db.FindGarages(ctx, yard.Page{Max: 1})
	if err != nil {
		return err
	}
	_, cars, err := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 1})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: skipped the demo garages and cars: the store already holds %s and %s (--demo only fills an empty store)\n",
		plural(garages, "garage"), plural(cars, "car"))
	return nil
}
