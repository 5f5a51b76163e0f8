package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/store"
)

// seedDemo fills a store that holds no dogs, garages or cars with demo
// data (serve --demo): people and dogs, then garages and cars, and says
// what it added or why it added nothing.
func seedDemo(ctx context.Context, db *store.DB, out io.Writer) error {
	// A store that holds any dog, garage or car gets nothing: the demo
	// fills an empty one (people may exist), all or none.
	_, dogs, err1 := db.FindDogs(ctx, yard.DogFilter{Limit: 1})
	_, garages, err2 := db.FindGarages(ctx, yard.Page{Max: 1})
	_, cars, err3 := db.FindCars(ctx, yard.Query{}, yard.Page{Max: 1})
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if dogs+garages+cars > 0 {
		fmt.Fprintf(out, "demo: skipped the demo data: the store already holds %s, %s and %s (--demo only fills a store with no dogs, garages or cars)\n",
			plural(dogs, "dog"), plural(garages, "garage"), plural(cars, "car"))
		return nil
	}
	if err := seedDemoDogs(ctx, db, out); err != nil {
		return err
	}
	if _, err := db.SeedDemoCars(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "demo: created 4 garages and 24 cars (try /cars?color=red and /garages)")
	return nil
}

// seedDemoDogs adds two people with dogs. The people's passwords are
// generated and printed; a person who exists is kept as is.
func seedDemoDogs(ctx context.Context, db *store.DB, out io.Writer) error {
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
