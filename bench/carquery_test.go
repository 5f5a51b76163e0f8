package bench

// The mix of car queries the benchmarks send: the carsearch group in
// process, and scripts/bench-http from outside through the paths writer
// (paths_test.go), so that both send the same mix (docs/benchmarks.md).

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// The values of the scripts/gencars data set (a space in a make is sent
// as +).
var (
	carColors = []string{"red", "blue", "black", "white", "silver", "grey", "green", "yellow", "orange", "brown", "beige", "purple"}
	carTypes  = []string{"sedan", "coupe", "hatchback", "wagon", "suv", "pickup"}
	carMakes  = []string{"Toyota", "Ford", "Honda", "Chevrolet", "Nissan", "BMW", "Mercedes", "Audi", "Volkswagen", "Hyundai",
		"Kia", "Subaru", "Mazda", "Tesla", "Volvo", "Lexus", "Jeep", "Dodge", "Ram", "GMC", "Buick", "Cadillac", "Porsche",
		"Jaguar", "Land+Rover", "Mini", "Fiat", "Peugeot", "Renault", "Skoda"}
	carStates = []string{"AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY",
		"LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK",
		"OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"}
)

// randomCarQuery returns a random filtered page as users send them: a
// random combination of color (one value or two), make (sometimes
// excluded), type, q.year.ge, doors=!N and q.garage.state.eq; 80% first
// pages, 20% offsets up to 1,000; max=20. Nothing is repeated on purpose.
func randomCarQuery(r *rand.Rand) string {
	var pairs []string
	for len(pairs) == 0 {
		if r.IntN(2) == 0 {
			c := carColors[r.IntN(len(carColors))]
			if r.IntN(3) == 0 {
				c += "," + carColors[r.IntN(len(carColors))]
			}
			pairs = append(pairs, "color="+c)
		}
		if r.IntN(2) == 0 {
			neg := ""
			if r.IntN(3) == 0 {
				neg = "!"
			}
			pairs = append(pairs, "make="+neg+carMakes[r.IntN(len(carMakes))])
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "type="+carTypes[r.IntN(len(carTypes))])
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "q.year.ge="+strconv.Itoa(1995+r.IntN(31)))
		}
		if r.IntN(4) == 0 {
			pairs = append(pairs, "doors=!"+strconv.Itoa(2+r.IntN(4)))
		}
		if r.IntN(3) == 0 {
			pairs = append(pairs, "q.garage.state.eq="+carStates[r.IntN(len(carStates))])
		}
	}
	r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	if r.IntN(5) == 0 {
		pairs = append(pairs, "offset="+strconv.Itoa(1+r.IntN(1000)))
	}
	return strings.Join(append(pairs, "max=20"), "&")
}
