// Command paths writes seeded random request paths for scripts/bench-http,
// one a line, which scripts/benchhttp/paths.lua hands to wrk in order:
//
//	go run ./scripts/benchhttp/paths -workload pages -n 200000 -seed 1 > pages.txt
//
// Workloads:
//
//	car     GET /cars/{id}, random ids car-0000001 … of the scripts/gencars data set (-cars)
//	pages   random filtered pages, as randomCarQuery in cmd/yardbench/carsearch.go
//	facets  the same random pages with facets=make,color,year
//	same    one fixed query string (-same), written once
//
// The values and the grammar are those of scripts/gencars and docs/cars.md;
// randomQuery is a copy of cmd/yardbench's randomCarQuery (a package main,
// which cannot be imported), so the two workloads draw the same kind of mix.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// The values of the scripts/gencars data set (a space in a make is sent as +).
var (
	colors = []string{"red", "blue", "black", "white", "silver", "grey", "green", "yellow", "orange", "brown", "beige", "purple"}
	types  = []string{"sedan", "coupe", "hatchback", "wagon", "suv", "pickup"}
	makes  = []string{"Toyota", "Ford", "Honda", "Chevrolet", "Nissan", "BMW", "Mercedes", "Audi", "Volkswagen", "Hyundai",
		"Kia", "Subaru", "Mazda", "Tesla", "Volvo", "Lexus", "Jeep", "Dodge", "Ram", "GMC", "Buick", "Cadillac", "Porsche",
		"Jaguar", "Land+Rover", "Mini", "Fiat", "Peugeot", "Renault", "Skoda"}
	states = []string{"AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
		"LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK",
		"OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"}
)

// randomQuery returns a random filtered page as users send them: a random
// combination of color (one value or two), make (a third of the time
// excluded with !), type, q.year.ge, doors=!N and q.garage.state.eq; 80%
// first pages, 20% offsets up to 1,000; max=20.
func randomQuery(r *rand.Rand) string {
	var pairs []string
	for len(pairs) == 0 {
		if r.IntN(2) == 0 {
			c := colors[r.IntN(len(colors))]
			if r.IntN(3) == 0 {
				c += "," + colors[r.IntN(len(colors))]
			}
			pairs = append(pairs, "color="+c)
		}
		if r.IntN(2) == 0 {
			neg := ""
			if r.IntN(3) == 0 {
				neg = "!"
			}
			pairs = append(pairs, "make="+neg+makes[r.IntN(len(makes))])
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "type="+types[r.IntN(len(types))])
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "q.year.ge="+strconv.Itoa(1995+r.IntN(31)))
		}
		if r.IntN(4) == 0 {
			pairs = append(pairs, "doors=!"+strconv.Itoa(2+r.IntN(4)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "q.garage.state.eq="+states[r.IntN(len(states))])
		}
	}
	r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	if r.IntN(5) == 0 {
		pairs = append(pairs, "offset="+strconv.Itoa(1+r.IntN(1000)))
	}
	return strings.Join(append(pairs, "max=20"), "&")
}

func main() {
	workload := flag.String("workload", "pages", "car, pages, facets or same")
	n := flag.Int("n", 200000, "number of paths")
	seed := flag.Uint64("seed", 1, "random seed")
	cars := flag.Int("cars", 1000000, "car: ids are drawn from car-0000001 to this")
	same := flag.String("same", "color=red&doors=4&make=!Ford&max=20", "same: the query string of the one page")
	flag.Parse()
	if *n < 1 || *cars < 1 {
		fmt.Fprintln(os.Stderr, "paths: -n and -cars must be at least 1")
		os.Exit(2)
	}
	// Each workload has its own stream of the seed, so pages and facets
	// draw different queries and adding a workload changes no other.
	var stream uint64
	switch *workload {
	case "car":
		stream = 1
	case "pages":
		stream = 2
	case "facets":
		stream = 3
	case "same":
		*n = 1
	default:
		fmt.Fprintf(os.Stderr, "paths: unknown workload %q (car, pages, facets, same)\n", *workload)
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(*seed, stream))
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	for range *n {
		switch *workload {
		case "car":
			fmt.Fprintf(w, "/cars/car-%07d\n", 1+r.IntN(*cars))
		case "pages":
			fmt.Fprintf(w, "/cars?%s\n", randomQuery(r))
		case "facets":
			fmt.Fprintf(w, "/cars?%s&facets=make,color,year\n", randomQuery(r))
		case "same":
			fmt.Fprintf(w, "/cars?%s\n", *same)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "paths:", err)
		os.Exit(1)
	}
}
