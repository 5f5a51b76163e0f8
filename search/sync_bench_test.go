package search_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/search"
	"github.com/yard-api/yard/store/storetest"
)

// BenchmarkSync measures what a car list pays to be up to date with the
// store (docs/cars.md, "The search index"): with nothing written since the
// last list ("idle"), and after one PUT of a random car ("after-write",
// the PUT included). 10,000 cars; seeded random writes.
//
//	go test ./search -run '^$' -bench Sync -benchtime 3s
func BenchmarkSync(b *testing.B) {
	for _, engine := range storetest.Engines {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, engine)
			r := rand.New(rand.NewPCG(5, 5))
			if _, err := db.ImportCars(ctx, strings.NewReader(importLines(r, 10_000, true)), 1000); err != nil {
				b.Fatal(err)
			}
			ix := search.New(db, nil)
			if err := ix.Build(ctx); err != nil {
				b.Fatal(err)
			}
			ids := make([]string, 0, 10_000)
			l, err := db.ListCars(ctx, yard.Query{}, yard.Page{Max: 10_000}, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range l.Cars {
				ids = append(ids, c.ID)
			}
			b.Run("idle", func(b *testing.B) {
				for b.Loop() {
					if err := ix.Sync(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("after-write", func(b *testing.B) {
				for b.Loop() {
					c := randomCar(r, garageIDs)
					c.ID = ids[r.IntN(len(ids))]
					if _, err := db.ReplaceCar(ctx, c); err != nil {
						b.Fatal(err)
					}
					if err := ix.Sync(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
