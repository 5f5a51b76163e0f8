// Command paths writes seeded random request paths for scripts/bench-http,
// one a line, which scripts/benchhttp/paths.lua hands to wrk in order:
//
//	go run ./scripts/benchhttp/paths -workload pages -n 200000 -seed 1 > pages.txt
//
// Workloads:
//
//	car     GET /cars/{id}, random ids car-0000001 … of the scripts/gencars data set (-cars)
//	pages   random filtered pages (loadgen.RandomCarQuery, the mix of bench/'s carsearch group)
//	facets  the same random pages with facets=make,color,year
//	same    one fixed query string (-same), written once
//
// The values and the grammar are those of scripts/gencars and docs/cars.md.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/yard-api/yard/internal/loadgen"
)

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
			fmt.Fprintf(w, "/cars?%s\n", loadgen.RandomCarQuery(r))
		case "facets":
			fmt.Fprintf(w, "/cars?%s&facets=make,color,year\n", loadgen.RandomCarQuery(r))
		case "same":
			fmt.Fprintf(w, "/cars?%s\n", *same)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "paths:", err)
		os.Exit(1)
	}
}
