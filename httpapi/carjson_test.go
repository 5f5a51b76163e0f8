package httpapi

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/yard-api/yard"
)

// plainCar and plainPage are carView and carPage without their own
// encoders: what encoding/json writes for them by reflection.
type plainCar struct {
	ID     string  `json:"id"`
	Color  string  `json:"color"`
	Type   string  `json:"type"`
	Doors  int     `json:"doors"`
	Make   string  `json:"make"`
	Model  string  `json:"model"`
	Year   int     `json:"year"`
	Garage *string `json:"garage"`
}

type plainPage struct {
	Facets plainFacets `json:"facets,omitempty"`
	Items  []plainCar  `json:"items"`
	Max    int         `json:"max"`
	Offset int         `json:"offset"`
	Total  int         `json:"total"`
}

// plainFacets is facetsView written through encoding/json string by
// string, as it was before it was written by hand.
type plainFacets []yard.Facet

func (f plainFacets) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, fc := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := marshalJSON(fc.Field)
		b.Write(name)
		b.WriteString(":{")
		for j, v := range fc.Values {
			if j > 0 {
				b.WriteByte(',')
			}
			key := v.Value
			if v.Null {
				key = "null"
			}
			k, _ := marshalJSON(key)
			b.Write(k)
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(v.Count))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// randomText draws strings with what JSON must escape: quotes, back
// slashes, control characters, HTML characters (not escaped here), U+2028,
// multi-byte runes and invalid UTF-8.
func randomText(r *rand.Rand) string {
	pieces := []string{"a", "Red", " ", `"`, `\`, "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "<", ">", "&",
		"é", "日本", "\u2028", "\u2029", "😀", "\xff", "\xe2\x82", "\xed\xa0\x80", "/", "'"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestCarJSONMatchesEncodingJSON: the hand-written encoders give the bytes
// encoding/json gives (marshalJSON), for random cars and pages.
func TestCarJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 3000 {
		n := r.IntN(4)
		var cars []carView
		var plain []plainCar
		if i%50 != 0 {
			cars, plain = []carView{}, []plainCar{}
		}
		for range n {
			c := &yard.Car{ID: randomText(r), Color: randomText(r), Type: randomText(r), Doors: r.IntN(10) - 2,
				Make: randomText(r), Model: randomText(r), Year: r.IntN(3000) - 500}
			if r.IntN(3) > 0 {
				c.Garage = randomText(r)
			}
			v := newCarView(c)
			cars, plain = append(cars, v), append(plain, plainCar(v))
			want, err := marshalJSON(plainCar(v))
			if err != nil {
				t.Fatal(err)
			}
			if got := v.appendJSON(nil); string(got) != string(want) {
				t.Fatalf("car %+v:\n got %s\nwant %s", v, got, want)
			}
		}
		p := carPage{Items: cars, Max: r.IntN(101), Offset: r.IntN(1 << 20), Total: r.IntN(1 << 30)}
		if r.IntN(4) == 0 {
			for range 1 + r.IntN(3) {
				fc := yard.Facet{Field: randomText(r)}
				for range r.IntN(4) {
					fc.Values = append(fc.Values, yard.FacetValue{Value: randomText(r), Null: r.IntN(5) == 0, Count: r.IntN(1 << 20)})
				}
				p.Facets = append(p.Facets, fc)
			}
		}
		want, err := marshalJSON(plainPage{Facets: plainFacets(p.Facets), Items: plain, Max: p.Max, Offset: p.Offset, Total: p.Total})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.appendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("page:\n got %s\nwant %s (%v)", got, want, err)
		}
	}
}

// BenchmarkCarPageJSON: a 20-car page by hand and by encoding/json.
func BenchmarkCarPageJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var cars []carView
	for i := range 20 {
		g := "garage-00042"
		cars = append(cars, carView{ID: "car-000" + strings.Repeat("1", i%4), Color: "Red", Type: "sedan", Doors: 2 + r.IntN(3),
			Make: "Make7", Model: "Make7-3", Year: 1995 + r.IntN(30), Garage: &g})
	}
	p := carPage{Items: cars, Max: 20, Offset: 40, Total: 83211}
	b.Run("hand", func(b *testing.B) {
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			buf, _ = p.appendJSON(buf[:0])
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		plain := make([]plainCar, len(cars))
		for i, c := range cars {
			plain[i] = plainCar(c)
		}
		for b.Loop() {
			_, _ = marshalJSON(plainPage{Items: plain, Max: 20, Offset: 40, Total: 83211})
		}
	})
}
