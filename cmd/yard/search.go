package main

import (
	"context"

	"github.com/yard-api/yard/search"
)

// The car search index (docs/cars.md, "The search index"): built in the
// background at start, car lists answered by SQL until it is ready.
func init() { wirings = append(wirings, wireSearch) }

func wireSearch(_ context.Context, a *app) error {
	ix := search.New(a.db, a.logger)
	a.api.Cars = ix
	a.background = append(a.background, ix.Run)
	return nil
}
