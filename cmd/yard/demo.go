package main

import (
	"context"
	"fmt"
	"io"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/store"
)

// seedDemo fills the empty parts of a store with demo data (serve
// --demo): people and dogs, then garages and cars. Each seeder says what
// it added.
func seedDemo(ctx context.Context, db *store.DB, out io.Writer) error {
	if err := seedDemoDogs(ctx, db, out); err != nil {
		return err
	}
	return seedDemoCars(ctx, db, out)
}

// seedDemoDogs adds two people with dogs when the store holds no dogs. The
// people's passwords are generated and printed; a person who exists is
// kept as is. A store with dogs gets none, and says so.
func seedDemoDogs(ctx context.Context, db *store.DB, out io.Writer) error {
	if _, n, err := db.FindDogs(ctx, yard.DogFilter{Limit: 1}); err != nil {
		return err
	} else if n > 0 {
		fmt.Fprintf(out, "demo: skipped the demo people and dogs: the store already holds %s (--demo only fills an empty store)\n", plural(n, "dog"))
		return nil
	}
	people := []struct {
		name, email, phone string
		dogs               []yard.Dog
	}{
		{"alice", "alice@example.org", "+14155550101", []yard.Dog{
			{Name: "Rex", Email: "rex@example.org", BarkEffect: yard.EffectRecord},
			{Name: "Fido", Email: "fido@example.org", BarkEffect: yard.EffectEmailCount},
		}},
		{"bob", "bob@example.org", "+14155550102", []yard.Dog{
			{Name: "Laika", Email: "laika@example.org", BarkEffect: yard.EffectEmail},
		}},
	}
	for _, p := range people {
		u, err := db.FindUserByName(ctx, p.name)
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			password := auth.GeneratePassword()
			u = &yard.User{Name: p.name, Email: p.email, Phone: p.phone, Roles: []string{yard.RoleUser}}
			if err := createUser(ctx, db, u, password); err != nil {
				return err
			}
			fmt.Fprintf(out, "demo: created person %q with password %s\n", p.name, password)
		} else if err != nil {
			return err
		} else {
			fmt.Fprintf(out, "demo: person %q already exists: kept, password unchanged\n", p.name)
		}
		for _, d := range p.dogs {
			d.Owner = u.ID
			if err := db.CreateDog(ctx, &d); err != nil {
				return err
			}
			fmt.Fprintf(out, "demo: created dog %q at /v1/dogs/%s/\n", d.Name, d.ID)
		}
	}
	return nil
}

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
