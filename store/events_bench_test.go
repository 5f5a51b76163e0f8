package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store/storetest"
)

// BenchmarkReadEventsOfPeople: a hub's read (events.Hub) of the events of
// the 100 people who hold streams, a few dozen events behind the newest,
// in a log where most events are somebody else's (docs/benchmarks.md,
// "Events and webhooks"). The position behind the newest is seeded random.
func BenchmarkReadEventsOfPeople(b *testing.B) {
	for _, engine := range storetest.Engines {
		b.Run(engine, func(b *testing.B) {
			db := storetest.Open(b, engine)
			ctx := context.Background()
			var people []string
			for i := range 101 {
				u := &yard.User{Name: fmt.Sprintf("p%d", i), Email: fmt.Sprintf("p%d@example.org", i), Roles: []string{yard.RoleUser}}
				if err := db.CreateUser(ctx, u, &yard.Credentials{PasswordHash: "x"}); err != nil {
					b.Fatal(err)
				}
				people = append(people, u.ID)
			}
			outsider, watched := people[100], people[:100]
			// 4,000 events: one in 20 of a watched person's, the rest the
			// outsider's, from 16 writers (group commit).
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := range 16 {
				wg.Go(func() {
					for i := range 250 {
						owner := outsider
						if i%20 == 0 {
							owner = watched[(w*250+i)%100]
						}
						if err := db.CreateDog(ctx, &yard.Dog{Name: "d", Email: "d@example.org", Owner: owner}); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			var ids []yard.EventID
			for after := (yard.EventID{}); ; {
				p, err := db.ReadEvents(ctx, yard.EventFilter{After: after, Limit: 1000})
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range p.Events {
					ids = append(ids, e.ID)
				}
				if len(p.Events) == 0 {
					break
				}
				after = p.Next
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				from := ids[len(ids)-1-rng.IntN(100)]
				if _, err := db.ReadEvents(ctx, yard.EventFilter{After: from, Owners: watched, Limit: 1000}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
