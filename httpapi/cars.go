package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/tracing"
)

// carStore is what the car, garage and search endpoints need of the store
// (its SQL path answers car lists when no index is given); *store.DB is one.
type carStore interface {
	CreateCar(ctx context.Context, c *yard.Car) error
	CreateGarage(ctx context.Context, g *yard.Garage) error
	CreateSearch(ctx context.Context, s *yard.Search) error
	DeleteCar(ctx context.Context, id string) error
	DeleteGarage(ctx context.Context, id string) error
	DeleteSearch(ctx context.Context, id string) error
	FindCarByID(ctx context.Context, id string) (*yard.Car, error)
	FindGarageByID(ctx context.Context, id string) (*yard.Garage, error)
	FindGarages(ctx context.Context, page yard.Page) ([]*yard.Garage, int, error)
	FindSearchByID(ctx context.Context, id string) (*yard.Search, error)
	FindSearchByName(ctx context.Context, name string) (*yard.Search, error)
	FindSearches(ctx context.Context, page yard.Page) ([]*yard.Search, int, error)
	ListCars(ctx context.Context, q yard.Query, page yard.Page, facets []string) (*yard.CarList, error)
	ReplaceCar(ctx context.Context, c *yard.Car) (bool, error)
	ReplaceGarage(ctx context.Context, g *yard.Garage) (bool, error)
	UpdateCar(ctx context.Context, id string, upd yard.CarUpdate) (*yard.Car, error)
	UpdateGarage(ctx context.Context, id string, upd yard.GarageUpdate) (*yard.Garage, error)
}

// Cars, garages and searches (docs/cars.md). Every car list, whatever its
// URL shape, parses its raw query with yard.ParseCarListQuery into one
// yard.Query (and the facets asked for) and runs it through one
// yard.CarLister (the search index, or the store's SQL path): the shapes
// differ only in where the query comes from.

// carView is the representation of a car.
type carView struct {
	ID     string  `json:"id"`
	Color  string  `json:"color"`
	Type   string  `json:"type"`
	Doors  int     `json:"doors"`
	Make   string  `json:"make"`
	Model  string  `json:"model"`
	Year   int     `json:"year"`
	Garage *string `json:"garage"`
}

func newCarView(c *yard.Car) carView {
	v := carView{ID: c.ID, Color: c.Color, Type: c.Type, Doors: c.Doors, Make: c.Make, Model: c.Model, Year: c.Year}
	if c.Garage != "" {
		v.Garage = &c.Garage // c is the search's answer, not changed after
	}
	return v
}

// appendCarViews appends the views of cars to out.
func appendCarViews(out []carView, cars []*yard.Car) []carView {
	for _, c := range cars {
		out = append(out, newCarView(c))
	}
	return out
}

// listScratch is what answering one car list needs and lets go once the
// body is written: the cars' views and the body's bytes. They come from
// listScratches, since at busy rates they were a third of what a list
// allocated (docs/benchmark-journal.md, "Fewer allocations for a car list").
// A Write never keeps the bytes it is given (io.Writer), so both are free
// again when writeCars returns.
type listScratch struct {
	views []carView
	body  []byte
}

var listScratches = sync.Pool{New: func() any { return new(listScratch) }}

// maxScratchBody is the largest body whose buffer goes back to the pool:
// a rare page of hundreds of cars is not kept for the pages of twenty.
const maxScratchBody = 32 << 10

func (ls *listScratch) release() {
	clear(ls.views) // the views point into the answer's cars
	ls.views = ls.views[:0]
	if cap(ls.body) > maxScratchBody {
		ls.body = nil
	}
	ls.body = ls.body[:0]
	listScratches.Put(ls)
}

// garageView is the representation of a garage.
type garageView struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	CarCount int    `json:"carCount"`
}

func newGarageView(g *yard.Garage) garageView {
	return garageView{ID: g.ID, Name: g.Name, State: g.State, CarCount: g.CarCount}
}

// --- reads -----------------------------------------------------------------

// handleGetCar answers /car/{car_id} and /cars/{car_id}: the car, garaged
// or not.
func (s *Server) handleGetCar(w http.ResponseWriter, r *http.Request) {
	c, err := s.findCar(r.Context(), r.PathValue("car_id"))
	s.writeCar(w, r, c, err)
}

// carFinder is what answers a car by id besides the store: the search
// index (search.Index), which holds every car in memory and is brought up
// to the store before it answers.
type carFinder interface {
	FindCarByID(ctx context.Context, id string) (*yard.Car, error)
}

// findCar reads a car from the index when Deps.Cars has one, else from the
// store.
func (s *Server) findCar(ctx context.Context, id string) (*yard.Car, error) {
	if f, ok := s.deps.Cars.(carFinder); ok {
		return f.FindCarByID(ctx, id)
	}
	return s.db.cars.FindCarByID(ctx, id)
}

// writeCar answers a read of one car, or the error of finding it.
func (s *Server) writeCar(w http.ResponseWriter, r *http.Request, c *yard.Car, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeRepresentation(w, r, http.StatusOK, newCarView(c), c.UpdatedAt)
}

// handleGetGarage answers /garage/{garage_id} and /garages/{garage_id}.
func (s *Server) handleGetGarage(w http.ResponseWriter, r *http.Request) {
	g, err := s.db.cars.FindGarageByID(r.Context(), r.PathValue("garage_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	// No Last-Modified: carCount changes with the moves of cars, which do
	// not touch the garage's row, so a date would make If-Modified-Since
	// answer 304 for a changed count. The ETag covers the count.
	writeRepresentation(w, r, http.StatusOK, newGarageView(g), time.Time{})
}

// handleListGarages answers GET /garages.
func (s *Server) handleListGarages(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, s.db.cars.FindGarages, newGarageView)
}

// handleListCars answers /cars, /cars/search, /cars/search/all,
// /cars/search/by-parameters and /cars/search/by-vendor: the one grammar,
// read from the raw query.
func (s *Server) handleListCars(w http.ResponseWriter, r *http.Request) {
	q, page, facets, err := yard.ParseCarListQuery(s.grammarQuery(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeCars(w, r, q, page, facets)
}

// handleGarageCars answers /garage/{garage_id}/cars and
// /garages/{garage_id}/cars: the garage's cars, with the filters of the
// query applied too.
func (s *Server) handleGarageCars(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("garage_id")
	if _, err := s.db.cars.FindGarageByID(r.Context(), id); err != nil {
		s.error(w, r, err)
		return
	}
	q, page, facets, err := yard.ParseCarListQuery(s.grammarQuery(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeCars(w, r, inGarage(id).And(q), page, facets)
}

// inGarage is the query "the car is in garage id".
func inGarage(id string) yard.Query {
	return yard.Query{Filters: []yard.Filter{{Field: yard.FieldGarageID, In: []string{id}}}}
}

// writeCars answers a car list: the page, its total and the facets asked
// for ("facets" is in the body only then).
func (s *Server) writeCars(w http.ResponseWriter, r *http.Request, q yard.Query, page yard.Page, facets []string) {
	var lister yard.CarLister = s.db.cars
	if s.deps.Cars != nil {
		lister = s.deps.Cars
	}
	// A slot of the lists' gate from the search to the body's last byte,
	// given back before the body is written.
	client, err := admit(s.deps.Lists, r, "car searches")
	if err != nil {
		s.error(w, r, err)
		return
	}
	held := true
	defer func() {
		if held {
			s.deps.Lists.Release(client)
		}
	}()
	ctx, span := tracing.Start(r.Context(), "car search")
	if span.IsRecording() {
		span.SetAttributes(tracing.CarsAnsweredBy.String(s.carSearchPath()))
	}
	l, err := lister.ListCars(ctx, q, page, yard.FacetPaths(facets))
	span.End()
	if err != nil {
		s.error(w, r, err)
		return
	}
	// The body of writePage, written by hand (carjson.go): car lists
	// are the busiest route, and encoding/json's reflection cost five
	// times as much. Members in the map's (sorted) order, so the bytes are
	// the same.
	links := s.pageLinks(r, l.Total, page)
	if other := w.Header().Get("Link"); other != "" {
		links += ", " + other
	}
	w.Header().Set("Link", links)
	ls := listScratches.Get().(*listScratch)
	defer ls.release()
	if ls.views == nil { // an empty page's items are [], never null
		ls.views = make([]carView, 0, max(len(l.Cars), 20))
	}
	ls.views = appendCarViews(ls.views, l.Cars)
	body := carPage{Items: ls.views, Max: page.Max, Offset: page.Offset, Total: l.Total}
	size := 256 + 160*len(body.Items)
	if len(facets) > 0 {
		body.Facets = namedFacets(facets, l.Facets)
		size += 1024 // three fields of some 20 values: 750 bytes
	}
	if cap(ls.body) < size {
		ls.body = make([]byte, 0, size)
	}
	b, err := body.appendJSON(ls.body)
	ls.body = b
	if err != nil {
		s.error(w, r, err)
		return
	}
	held = false
	s.deps.Lists.Release(client)
	writeJSONBody(w, http.StatusOK, b)
}

// carPage is the body of a car list.
type carPage struct {
	Facets facetsView `json:"facets,omitempty"`
	Items  []carView  `json:"items"`
	Max    int        `json:"max"`
	Offset int        `json:"offset"`
	Total  int        `json:"total"`
}

// carSearchPath says which path answers car lists, for /readyz: "index"
// (the search index is built), "sql (index building)" or "sql".
func (s *Server) carSearchPath() string {
	if rd, ok := s.deps.Cars.(interface{ Ready() bool }); ok {
		if rd.Ready() {
			return "index"
		}
		return "sql (index building)"
	}
	return "sql"
}

// facetsView renders facets as {"field":{"value":count,...},...}, fields
// in the order asked for and values by count; the group of cars in no
// garage is "null".
type facetsView []yard.Facet

// namedFacets gives each facet field the name it was asked by (facets=
// vendor answers "vendor", facets=garage "garage"), from the counts of
// its path.
func namedFacets(names []string, counted []yard.Facet) facetsView {
	if slices.EqualFunc(names, counted, func(n string, c yard.Facet) bool { return n == c.Field }) {
		return counted // each asked by its path, as most are
	}
	f := make(facetsView, 0, len(names))
	for _, name := range names {
		path, _ := yard.CanonicalField(name)
		if i := slices.IndexFunc(counted, func(c yard.Facet) bool { return c.Field == path }); i >= 0 {
			f = append(f, yard.Facet{Field: name, Values: counted[i].Values})
		}
	}
	return f
}

// appendJSON appends the facets' JSON by hand, as encoding/json would write
// each string (carjson.go): a facet answer is some 40 strings, and going
// through the encoder for each cost a fifth of the allocations of a car
// list with facets.
func (f facetsView) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, fc := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, fc.Field)
		b = append(b, ":{"...)
		for j, v := range fc.Values {
			if j > 0 {
				b = append(b, ',')
			}
			key := v.Value
			if v.Null {
				key = "null"
			}
			b = appendJSONString(b, key)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(v.Count), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// handleGarageCar answers /{garage_id}/cars/{car_id}: the car if it is in
// that garage, else 404.
func (s *Server) handleGarageCar(w http.ResponseWriter, r *http.Request) {
	c, err := s.findCar(r.Context(), r.PathValue("car_id"))
	if err == nil && c.Garage != r.PathValue("garage_id") {
		err = yard.Errorf(yard.ENOTFOUND, "Car not found in this garage.")
	}
	s.writeCar(w, r, c, err)
}
