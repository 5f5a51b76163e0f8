package bench

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// writePaths writes seeded random request paths for scripts/bench-http to
// standard output, one a line, which scripts/benchhttp/paths.lua hands to wrk
// in order. It is a program of this test binary (tools, YARDBENCH_TOOL=paths):
//
//	go test -c -o /tmp/bench.test ./bench
//	YARDBENCH_TOOL=paths /tmp/bench.test -workload pages -n 200000 -seed 1 > pages.txt
//
// Workloads:
//
//	car     GET /cars/{id}, random ids car-0000001 … of the scripts/gencars data set (-cars)
//	pages   random filtered pages (randomCarQuery, the mix of the carsearch group)
//	facets  the same random pages with facets=make,color,year
//	same    one fixed query string (-same), written once
//
// The values and the grammar are those of scripts/gencars and docs/cars.md.
func writePaths(args []string) {
	fs := flag.NewFlagSet("paths", flag.ExitOnError)
	workload := fs.String("workload", "pages", "car, pages, facets or same")
	n := fs.Int("n", 200000, "number of paths")
	seed := fs.Uint64("seed", 1, "random seed")
	cars := fs.Int("cars", 1000000, "car: ids are drawn from car-0000001 to this")
	same := fs.String("same", "color=red&doors=4&make=!Ford&max=20", "same: the query string of the one page")
	_ = fs.Parse(args)
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
			fmt.Fprintf(w, "/cars?%s\n", randomCarQuery(r))
		case "facets":
			fmt.Fprintf(w, "/cars?%s&facets=make,color,year\n", randomCarQuery(r))
		case "same":
			fmt.Fprintf(w, "/cars?%s\n", *same)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "paths:", err)
		os.Exit(1)
	}
}

// TestPathsTool runs this binary as the paths writer, as scripts/bench-http
// does, and checks that a seed gives the same paths every time.
func TestPathsTool(t *testing.T) {
	paths := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "YARDBENCH_TOOL=paths")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("paths %v: %v", args, err)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	for _, tc := range []struct{ workload, prefix string }{
		{"car", "/cars/car-"},
		{"pages", "/cars?"},
		{"facets", "/cars?"},
		{"same", "/cars?color=red&doors=4&make=!Ford&max=20"},
	} {
		got := paths("-workload", tc.workload, "-n", "50", "-seed", "7", "-cars", "20000")
		want := 50
		if tc.workload == "same" {
			want = 1
		}
		if len(got) != want {
			t.Fatalf("%s: got %d paths, want %d", tc.workload, len(got), want)
		}
		for _, p := range got {
			if !strings.HasPrefix(p, tc.prefix) || (tc.workload == "facets") != strings.HasSuffix(p, "&facets=make,color,year") {
				t.Fatalf("%s: got path %q", tc.workload, p)
			}
		}
		if again := paths("-workload", tc.workload, "-n", "50", "-seed", "7", "-cars", "20000"); !slices.Equal(got, again) {
			t.Errorf("%s: seed 7 gave different paths the second time", tc.workload)
		}
	}
}
