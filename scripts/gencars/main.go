// Command gencars writes a deterministic NDJSON data set of garages and
// cars for `yard import`, for benchmarks:
//
//	go run ./scripts/gencars -cars 1000000 -garages 10000 -o data/cars.ndjson
//
// -o names the output file (standard output without it). data/ and
// *.ndjson in the repository root are in .gitignore, so the 143 MB file
// never shows up as untracked.
//
// Garages come first (ids garage-00001...), spread over the 50 US states;
// then cars (ids car-0000001...): 12 colours, 6 body types, 30 makes of 10
// models each, 2-5 doors, years 1995-2025, 5% in no garage.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
)

var (
	states = []string{"AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
		"LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK",
		"OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"}
	colors = []string{"red", "blue", "black", "white", "silver", "grey", "green", "yellow", "orange", "brown", "beige", "purple"}
	types  = []string{"sedan", "coupe", "hatchback", "wagon", "suv", "pickup"}
	makes  = []string{"Toyota", "Ford", "Honda", "Chevrolet", "Nissan", "BMW", "Mercedes", "Audi", "Volkswagen", "Hyundai",
		"Kia", "Subaru", "Mazda", "Tesla", "Volvo", "Lexus", "Jeep", "Dodge", "Ram", "GMC", "Buick", "Cadillac", "Porsche",
		"Jaguar", "Land Rover", "Mini", "Fiat", "Peugeot", "Renault", "Skoda"}
	streets = []string{"Main", "Oak", "Pine", "Maple", "Cedar", "Elm", "Washington", "Lake", "Hill", "Park"}
)

func main() {
	nCars := flag.Int("cars", 1000000, "number of cars")
	nGarages := flag.Int("garages", 10000, "number of garages")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "", "output file, e.g. data/cars.ndjson (standard output when empty)")
	flag.Parse()
	if err := writeFile(*out, *nCars, *nGarages, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gencars:", err)
		os.Exit(1)
	}
}

// writeFile writes the data set to path, or to standard output when path
// is empty, creating the file's directory.
func writeFile(path string, nCars, nGarages int, seed uint64) error {
	if path == "" {
		return generate(os.Stdout, nCars, nGarages, seed)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(generate(f, nCars, nGarages, seed), f.Close())
}

// generate writes the data set: the garages, then the cars.
func generate(out io.Writer, nCars, nGarages int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 42))
	w := bufio.NewWriterSize(out, 1<<20)
	for i := 1; i <= nGarages; i++ {
		fmt.Fprintf(w, `{"kind":"garage","id":"garage-%05d","name":"%s Street Garage %d","state":"%s"}`+"\n",
			i, streets[rng.IntN(len(streets))], i, states[rng.IntN(len(states))])
	}
	buf := make([]byte, 0, 256)
	for i := 1; i <= nCars; i++ {
		m := rng.IntN(len(makes))
		// The arguments are evaluated left to right: the random draws
		// keep their order, and so the data set its bytes.
		buf = fmt.Appendf(buf[:0], `{"kind":"car","id":"car-%07d","color":"%s","type":"%s","doors":%d,"make":"%s","model":"%s-%d","year":%d`,
			i, colors[rng.IntN(len(colors))], types[rng.IntN(len(types))], 2+rng.IntN(4),
			makes[m], makes[m][:3], 1+rng.IntN(10), 1995+rng.IntN(31))
		if rng.IntN(100) < 5 || nGarages == 0 {
			buf = append(buf, `,"garage":null}`...)
		} else {
			buf = fmt.Appendf(buf, `,"garage":"garage-%05d"}`, 1+rng.IntN(nGarages))
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
	return w.Flush()
}
