package store

import (
	"context"
	"fmt"

	"github.com/yard-api/yard"
)

// SeedDemoCars fills a store that holds no garages and no cars with a few
// of each (serve --demo), so a new user has something to search. It does
// nothing when there are garages or cars already, and reports whether it
// wrote. Each garage and car has its created event, as any write has.
func (db *DB) SeedDemoCars(ctx context.Context) (bool, error) {
	n, err := scanValue[int](db.read.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM garages) + (SELECT COUNT(*) FROM cars)`))
	if err != nil || n > 0 {
		return false, err
	}
	garages := []*yard.Garage{
		{ID: "g-sf", Name: "Mission Street Garage", State: "CA"},
		{ID: "g-la", Name: "Sunset Parking", State: "CA"},
		{ID: "g-nyc", Name: "Hudson Yards Garage", State: "NY"},
		{ID: "g-austin", Name: "Congress Avenue Garage", State: "TX"},
	}
	colors := []string{"red", "blue", "black", "white", "silver", "green"}
	kinds := []struct {
		make, model, typ string
		doors            int
	}{
		{"Toyota", "Corolla", "sedan", 4}, {"Ford", "Mustang", "coupe", 2}, {"Honda", "Civic", "hatchback", 5},
		{"Tesla", "Model 3", "sedan", 4}, {"Volkswagen", "Golf", "hatchback", 3}, {"Ford", "F-150", "pickup", 4},
		{"Subaru", "Outback", "wagon", 5}, {"BMW", "M3", "sedan", 4}, {"Mazda", "MX-5", "convertible", 2},
	}
	err = db.withCarTx(ctx, func(tx *Tx, v int64) error {
		for _, g := range garages {
			if err := insertGarage(ctx, tx, g, v); err != nil {
				return err
			}
		}
		// 24 cars: 20 spread over the garages, 4 in no garage.
		for i := 0; i < 24; i++ {
			k := kinds[i%len(kinds)]
			c := &yard.Car{
				ID:    fmt.Sprintf("car-%02d", i+1),
				Color: colors[(i*5)%len(colors)],
				Type:  k.typ, Doors: k.doors, Make: k.make, Model: k.model,
				Year: 2008 + (i*7)%17,
			}
			if i < 20 {
				c.Garage = garages[i%len(garages)].ID
			}
			if err := writeCar(ctx, tx, c, v, true); err != nil {
				return err
			}
		}
		return nil
	})
	return err == nil, err
}
