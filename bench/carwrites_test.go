package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
)

// The carwrites group measures PUT /cars/{id} over a store loaded with
// the scripts/gencars data set (see cars_test.go): each request replaces a
// random one of the cars with random fields, as an administrator whose
// credentials are not checked (fixedPrincipal). It uses nothing but the
// store and the API, so scripts/carbench (BEFORE) measures a tree from
// before the search index with it too.
func carWritesGroup(b *bench) error {
	n, err := b.db.CountCarsUncached(b.ctx, yard.Query{})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("carwrites: the store holds no cars; load the scripts/gencars data set")
	}
	fmt.Fprintf(b.out, "## carwrites: PUT /cars/{id}, %d cars in the store\n\n", n)
	admin := fixedPrincipal{yard.Principal{UserID: "bench-admin", Name: "bench-admin", Roles: []string{yard.RoleAdmin, yard.RoleUser}}}
	url, stop := b.apiServer(&auth.Chain{Header: []auth.Scheme{admin}}, nil)
	defer stop()
	colors := []string{"red", "blue", "black", "white", "silver", "grey"}
	client := loadClient(b.concurrency)
	rngs := make([]*rand.Rand, b.concurrency)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(7, uint64(i)))
	}
	b.report(runLoad(b.ctx, "PUT /cars/{id} (random of all)", client, b.concurrency, b.duration, 200, func(w, i int) *http.Request {
		r := rngs[w]
		id := fmt.Sprintf("car-%07d", 1+r.IntN(n))
		garage := "null"
		if r.IntN(20) > 0 {
			garage = fmt.Sprintf(`"garage-%05d"`, 1+r.IntN(10000))
		}
		body := fmt.Sprintf(`{"color":%q,"type":"sedan","doors":%d,"make":"Ford","model":"For-%d","year":%d,"garage":%s}`,
			colors[r.IntN(len(colors))], 2+r.IntN(4), 1+r.IntN(10), 1995+r.IntN(31), garage)
		req, _ := http.NewRequest("PUT", url+"/cars/"+id, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer bench") // the chain asks its header schemes only then
		return req
	}))
	fmt.Fprintln(b.out)
	return nil
}
