package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

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
// allocated (docs/benchmarks.md, "Fewer allocations for a car list").
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

// searchView is the representation of a stored search. query is the
// canonical form of its criteria in the car query grammar.
type searchView struct {
	ID        string  `json:"id"`
	Name      *string `json:"name"`
	Class     string  `json:"$class"`
	Query     string  `json:"query"`
	CreatedBy string  `json:"createdBy"`
	CreatedAt string  `json:"createdAt"`
	Results   string  `json:"results"`
}

func (s *Server) newSearchView(se *yard.Search) searchView {
	v := searchView{ID: se.ID, Class: yard.SearchClassCar, Query: se.Query.String(), CreatedBy: se.CreatedBy,
		CreatedAt: Timestamp(se.CreatedAt), Results: s.url("/searches/" + se.ID)}
	if se.Name != "" {
		n := se.Name
		v.Name = &n
	}
	return v
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
	writeRepresentation(w, r, newCarView(c), c.UpdatedAt)
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
	writeRepresentation(w, r, newGarageView(g), time.Time{})
}

// handleListGarages answers GET /garages.
func (s *Server) handleListGarages(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, s.db.cars.FindGarages, newGarageView)
}

// writePagedList answers a list that takes only offset and max: find reads
// the page, view renders each item.
func writePagedList[T, V any](s *Server, w http.ResponseWriter, r *http.Request,
	find func(context.Context, yard.Page) ([]T, int, error), view func(T) V) {
	page, err := s.pageOf(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	items, total, err := find(r.Context(), page)
	if err != nil {
		s.error(w, r, err)
		return
	}
	views := make([]V, len(items))
	for i, it := range items {
		views[i] = view(it)
	}
	s.writePage(w, r, views, total, page)
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
	l, err := lister.ListCars(ctx, q, page, facets)
	span.End()
	if err != nil {
		s.error(w, r, err)
		return
	}
	// The body of writePageWith, written by hand (carjson.go): car lists
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
		body.Facets = facetsView(l.Facets)
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

// MarshalJSON writes the members in order (a Go map would sort them).
func (f facetsView) MarshalJSON() ([]byte, error) { return f.appendJSON(nil), nil }

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

// --- searches ----------------------------------------------------------------

// handleCreateSearch answers POST /searches in either body shape.
func (s *Server) handleCreateSearch(w http.ResponseWriter, r *http.Request) {
	// The search body has a parser of its own; decode checks it first.
	body, err := decode[jsontext.Value](r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	req, err := yard.ParseSearchBody(body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	se := &yard.Search{Name: req.Name, Query: req.Query, CreatedBy: yard.PrincipalFromContext(r.Context()).UserID}
	if err := s.db.cars.CreateSearch(r.Context(), se); err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Location", s.url("/searches/"+se.ID))
	writeJSON(w, http.StatusCreated, s.newSearchView(se))
}

// handleListSearches answers GET /searches (administrators).
func (s *Server) handleListSearches(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, s.db.cars.FindSearches, s.newSearchView)
}

// handleSearchResults answers GET /searches/{search_id}: the current page
// of its results (the query runs again). Filters in the request's query
// narrow the results further.
func (s *Server) handleSearchResults(w http.ResponseWriter, r *http.Request) {
	se, err := s.db.cars.FindSearchByID(r.Context(), r.PathValue("search_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	extra, page, facets, err := yard.ParseCarListQuery(s.grammarQuery(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeCars(w, r, se.Query.And(extra), page, facets)
}

// handleDeleteSearch answers DELETE /searches/{search_id} (administrators).
func (s *Server) handleDeleteSearch(w http.ResponseWriter, r *http.Request) {
	s.writeDeleted(w, r, s.db.cars.DeleteSearch(r.Context(), r.PathValue("search_id")))
}

// writeDeleted answers a DELETE: 204, or the error of deleting.
func (s *Server) writeDeleted(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleNamedSearch answers GET /search/{name}: the saved search of that
// name, or, when the segment holds '=', a query in the grammar
// (/search/color=red;doors=4). Names never hold '=' (yard.ValidSearchName).
// Filters and paging in the request's query apply too.
func (s *Server) handleNamedSearch(w http.ResponseWriter, r *http.Request) {
	segment := strings.TrimPrefix(r.URL.EscapedPath(), "/search/")
	raw := s.grammarQuery(r)
	extra, page, facets, err := yard.ParseCarListQuery(raw)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if !strings.Contains(segment, "=") {
		se, err := s.db.cars.FindSearchByName(r.Context(), r.PathValue("name"))
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			why := "it has no '='"
			if strings.Contains(strings.ToLower(segment), "%3d") {
				why = "its '=' is percent-encoded (%3D), which makes it data; write '=' as it is for a query"
			}
			err = yard.Errorf(yard.ENOTFOUND, "No saved search is named %q, and the segment is not a query (%s).", r.PathValue("name"), why)
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		s.writeCars(w, r, se.Query.And(extra), page, facets)
		return
	}
	q, inPath, pathFacets, err := yard.ParseCarListQuery(segment)
	if err != nil {
		s.error(w, r, err)
		return
	}
	// Paging may sit in the path too; each of offset and max is taken
	// from the query string when it is there, else from the path.
	if !hasParam(raw, "offset") {
		page.Offset = inPath.Offset
	}
	if !hasParam(raw, "max") {
		page.Max = inPath.Max
	}
	for _, f := range facets { // facets may sit in either
		if !slices.Contains(pathFacets, f) {
			pathFacets = append(pathFacets, f)
		}
	}
	s.writeCars(w, r, q.And(extra), page, pathFacets)
}

// hasParam reports whether a raw query holds the parameter name (names
// are case-sensitive, docs/api.md).
func hasParam(raw, name string) bool {
	return anyPair(raw, func(pair string) bool {
		n, _, _ := strings.Cut(pair, "=")
		if u, err := url.QueryUnescape(n); err == nil {
			n = u
		}
		return n == name
	})
}

// --- writes (administrators) -------------------------------------------------

// optString is a JSON field that may be absent, null or a string.
type optString struct {
	Set   bool
	Null  bool
	Value string
}

// UnmarshalJSON records that the member was present, and whether it was null.
func (o *optString) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// carWrite is the body of a car write; id may be sent back as read but
// must then match.
type carWrite struct {
	sent   `json:"-"`
	ID     *string   `json:"id"`
	Color  *string   `json:"color"`
	Type   *string   `json:"type"`
	Doors  *int      `json:"doors"`
	Make   *string   `json:"make"`
	Model  *string   `json:"model"`
	Year   *int      `json:"year"`
	Garage optString `json:"garage"`
}

// update turns a body into a partial update (garage null takes the car
// out of its garage).
func (in carWrite) update() yard.CarUpdate {
	u := yard.CarUpdate{Color: in.Color, Type: in.Type, Doors: in.Doors, Make: in.Make, Model: in.Model, Year: in.Year}
	if in.Garage.Set {
		g := in.Garage.Value
		u.Garage = &g
	}
	return u
}

// writeBody is the body of a car or garage write.
type writeBody interface {
	// bodyID is the id the body carries, nil when it has none.
	bodyID() *string
	// full checks that every required field is present (POST, PUT).
	full() error
	// refuseNulls refuses null members but the allowed ones (sent).
	refuseNulls(allowed ...string) error
}

// decodeCreate reads the body of a POST that makes a kind ("car"): no id
// (the server chooses it), every required field, no null member but the
// allowed ones.
func decodeCreate[T writeBody](r *http.Request, kind string, allowed ...string) (T, error) {
	in, err := decode[T](r)
	if err == nil {
		err = in.refuseNulls(allowed...)
	}
	if err == nil && in.bodyID() != nil {
		err = yard.Invalid("The id of a new "+kind+" is chosen by the server (or by the URI of a PUT).", yard.FieldError{Field: "id", Message: "is chosen by the server"})
	}
	if err == nil {
		err = in.full()
	}
	return in, err
}

// decodeAt reads the body of a PUT (full) or a PATCH of the resource whose
// id is id: the body's id, when it has one, must be id.
func decodeAt[T writeBody](r *http.Request, id string, full bool, allowed ...string) (T, error) {
	in, err := decode[T](r)
	if err == nil {
		err = in.refuseNulls(allowed...)
	}
	if err == nil {
		err = checkBodyID(in.bodyID(), id)
	}
	if err == nil && full {
		err = in.full()
	}
	return in, err
}

func (in carWrite) bodyID() *string    { return in.ID }
func (in garageWrite) bodyID() *string { return in.ID }

// full checks that every required field is present (POST, PUT).
func (in carWrite) full() error {
	var f []yard.FieldError
	for name, missing := range map[string]bool{"color": in.Color == nil, "type": in.Type == nil, "doors": in.Doors == nil,
		"make": in.Make == nil, "model": in.Model == nil, "year": in.Year == nil} {
		if missing {
			f = append(f, yard.FieldError{Field: name, Message: "is required"})
		}
	}
	if len(f) > 0 {
		sortFields(f)
		return yard.Invalid("The car is missing fields.", f...)
	}
	return nil
}

func sortFields(f []yard.FieldError) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].Field < f[j-1].Field; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

func (s *Server) handleCreateCar(w http.ResponseWriter, r *http.Request) {
	in, err := decodeCreate[carWrite](r, "car", "garage")
	if err != nil {
		s.error(w, r, err)
		return
	}
	c := &yard.Car{}
	in.update().Apply(c)
	if err := s.db.cars.CreateCar(r.Context(), c); err != nil {
		s.error(w, r, err)
		return
	}
	s.writeReplaced(w, true, "/cars/"+c.ID, newCarView(c), c.UpdatedAt)
}

// checkBodyID refuses a body id that differs from the path's.
func checkBodyID(body *string, path string) error {
	if body != nil && *body != path {
		return yard.Invalid("The id in the body differs from the id in the URI.", yard.FieldError{Field: "id", Message: "must equal the id in the URI"})
	}
	return nil
}

func (s *Server) handlePutCar(w http.ResponseWriter, r *http.Request) {
	c := &yard.Car{ID: r.PathValue("car_id")}
	in, err := decodeAt[carWrite](r, c.ID, true, "garage")
	if err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.carPreconditions(r, c.ID, true); err != nil {
		s.error(w, r, err)
		return
	}
	in.update().Apply(c)
	created, err := s.db.cars.ReplaceCar(r.Context(), c) // sets c's times
	s.writePut(w, r, created, err, "/cars/"+c.ID, newCarView(c), c.UpdatedAt)
}

// carPreconditions evaluates a car write's preconditions when it has any
// (storedPreconditions).
func (s *Server) carPreconditions(r *http.Request, id string, put bool) error {
	return storedPreconditions(r, id, put, "car", s.db.cars.FindCarByID, func(c *yard.Car) (string, time.Time) {
		return etagOf(newCarView(c)), c.UpdatedAt
	})
}

// garagePreconditions is carPreconditions for a garage, which has no
// Last-Modified (see handleGetGarage).
func (s *Server) garagePreconditions(r *http.Request, id string, put bool) error {
	return storedPreconditions(r, id, put, "garage", s.db.cars.FindGarageByID, func(g *yard.Garage) (string, time.Time) {
		return etagOf(newGarageView(g)), time.Time{}
	})
}

// storedPreconditions reads the resource id with find, only when the
// request has preconditions, and evaluates them against the validators
// its GET answers with (writePreconditions). A resource that does not
// exist answers as the write would without them (RFC 9110 §13.2.1): 404,
// except for a PUT, which creates it and so evaluates them.
func storedPreconditions[T any](r *http.Request, id string, put bool, noun string,
	find func(context.Context, string) (T, error), validators func(T) (string, time.Time)) error {
	if !conditional(r) {
		return nil
	}
	v, err := find(r.Context(), id)
	switch {
	case yard.ErrorCode(err) == yard.ENOTFOUND && put:
		return writePreconditions(r, "", time.Time{}, noun)
	case err != nil:
		return err
	}
	etag, modified := validators(v)
	return writePreconditions(r, etag, modified, noun)
}

// handlePatchCar applies a JSON merge patch (RFC 7396) to a car: members
// present replace, "garage": null takes the car out of its garage.
func (s *Server) handlePatchCar(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("car_id")
	in, err := decodeAt[carWrite](r, id, false, "garage")
	if err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.carPreconditions(r, id, false); err != nil {
		s.error(w, r, err)
		return
	}
	c, err := s.db.cars.UpdateCar(r.Context(), id, in.update())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeUpdated(w, newCarView(c), c.UpdatedAt)
}

func (s *Server) handleDeleteCar(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("car_id")
	if err := s.carPreconditions(r, id, false); err != nil {
		s.error(w, r, err)
		return
	}
	s.writeDeleted(w, r, s.db.cars.DeleteCar(r.Context(), id))
}

// garageWrite is the body of a garage write. carCount is read-only: it
// may be sent back as read; another value is 409 (checkCarCount).
type garageWrite struct {
	sent     `json:"-"`
	ID       *string `json:"id"`
	Name     *string `json:"name"`
	State    *string `json:"state"`
	CarCount *int    `json:"carCount"`
}

func (in garageWrite) full() error {
	var f []yard.FieldError
	if in.Name == nil {
		f = append(f, yard.FieldError{Field: "name", Message: "is required"})
	}
	if in.State == nil {
		f = append(f, yard.FieldError{Field: "state", Message: "is required"})
	}
	if len(f) > 0 {
		return yard.Invalid("The garage is missing fields.", f...)
	}
	return nil
}

func (s *Server) handleCreateGarage(w http.ResponseWriter, r *http.Request) {
	in, err := decodeCreate[garageWrite](r, "garage")
	if err != nil {
		s.error(w, r, err)
		return
	}
	if in.CarCount != nil && *in.CarCount != 0 {
		s.error(w, r, carCountConflict(0))
		return
	}
	g := &yard.Garage{Name: *in.Name, State: *in.State}
	if err := s.db.cars.CreateGarage(r.Context(), g); err != nil {
		s.error(w, r, err)
		return
	}
	s.writeReplaced(w, true, "/garages/"+g.ID, newGarageView(g), time.Time{})
}

func (s *Server) handlePutGarage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("garage_id")
	in, err := decodeAt[garageWrite](r, id, true)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.garagePreconditions(r, id, true); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.checkCarCount(r, id, in.CarCount, true); err != nil {
		s.error(w, r, err)
		return
	}
	g := &yard.Garage{ID: id, Name: *in.Name, State: *in.State}
	created, err := s.db.cars.ReplaceGarage(r.Context(), g)
	s.writePut(w, r, created, err, "/garages/"+g.ID, newGarageView(g), time.Time{})
}

func (s *Server) handlePatchGarage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("garage_id")
	in, err := decodeAt[garageWrite](r, id, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.garagePreconditions(r, id, false); err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.checkCarCount(r, id, in.CarCount, false); err != nil {
		s.error(w, r, err)
		return
	}
	g, err := s.db.cars.UpdateGarage(r.Context(), id, yard.GarageUpdate{Name: in.Name, State: in.State})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeUpdated(w, newGarageView(g), time.Time{})
}

func (s *Server) handleDeleteGarage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("garage_id")
	if err := s.garagePreconditions(r, id, false); err != nil {
		s.error(w, r, err)
		return
	}
	s.writeDeleted(w, r, s.db.cars.DeleteGarage(r.Context(), id))
}

// checkCarCount refuses a carCount in a garage's body that is not the
// garage's (0 for one a PUT creates): it is read-only, counted from the
// cars (409, as for the read-only members of orders).
func (s *Server) checkCarCount(r *http.Request, id string, sent *int, put bool) error {
	if sent == nil {
		return nil
	}
	g, err := s.db.cars.FindGarageByID(r.Context(), id)
	switch {
	case yard.ErrorCode(err) == yard.ENOTFOUND && put:
		g, err = &yard.Garage{}, nil
	case err != nil:
		return err
	}
	if *sent != g.CarCount {
		return carCountConflict(g.CarCount)
	}
	return nil
}

func carCountConflict(n int) error {
	return yard.Errorf(yard.ECONFLICT, "carCount is read-only: it counts the garage's cars (%d now); move cars to change it.", n)
}

// writePut answers a PUT (writeReplaced), or the error of replacing.
func (s *Server) writePut(w http.ResponseWriter, r *http.Request, created bool, err error, path string, view any, modified time.Time) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeReplaced(w, created, path, view, modified)
}

// writeReplaced answers a PUT: 201 with Location when it created the
// resource at path, else 200 with the new representation (docs/api.md,
// HTTP), both with the validators a GET answers with (modified zero: no
// Last-Modified).
func (s *Server) writeReplaced(w http.ResponseWriter, created bool, path string, view any, modified time.Time) {
	if created {
		w.Header().Set("Location", s.url(path))
		writeCreated(w, view, modified)
		return
	}
	writeUpdated(w, view, modified)
}
