package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/yard-api/yard"
)

// The writes of cars and garages (administrators, docs/cars.md): merge
// patches, PUT that creates or replaces, and the preconditions of each.

// carWrite is the body of a car write; id may be sent back as read but
// must then match.
type carWrite struct {
	sent   `json:"-"`
	ID     *string `json:"id"`
	Color  *string `json:"color"`
	Type   *string `json:"type"`
	Doors  *int    `json:"doors"`
	Make   *string `json:"make"`
	Model  *string `json:"model"`
	Year   *int    `json:"year"`
	Garage *string `json:"garage"`
}

// update turns a body into a partial update (garage null takes the car
// out of its garage).
func (in carWrite) update() yard.CarUpdate {
	return yard.CarUpdate{Color: in.Color, Type: in.Type, Doors: in.Doors, Make: in.Make, Model: in.Model, Year: in.Year,
		Garage: in.orEmpty(in.Garage, "garage")}
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

// decodeWrite reads the body of a write of a kind ("car"): no null member
// but the allowed ones, every required field when full (POST, PUT), and
// an id, when the body has one, that is id, the resource's; a POST (id
// "") takes none, the server chooses it.
func decodeWrite[T writeBody](r *http.Request, kind, id string, full bool, allowed ...string) (T, error) {
	in, err := decode[T](r)
	if err == nil {
		err = in.refuseNulls(allowed...)
	}
	switch b := in.bodyID(); {
	case err != nil || b == nil:
	case id == "":
		err = yard.Invalid("The id of a new "+kind+" is chosen by the server (or by the URI of a PUT).", yard.FieldError{Field: "id", Message: "is chosen by the server"})
	case *b != id:
		err = yard.Invalid("The id in the body differs from the id in the URI.", yard.FieldError{Field: "id", Message: "must equal the id in the URI"})
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
	return required("The car is missing fields.", map[string]bool{"color": in.Color == nil, "type": in.Type == nil,
		"doors": in.Doors == nil, "make": in.Make == nil, "model": in.Model == nil, "year": in.Year == nil})
}

// required is the error of a body whose fields marked in missing are left
// out, each named in order (message says what the body is); nil when none
// is.
func required(message string, missing map[string]bool) error {
	var f []yard.FieldError
	for name, m := range missing {
		f = fieldIf(f, m, name, "is required")
	}
	return sortedInvalid(message, f)
}

func (s *Server) handleCreateCar(w http.ResponseWriter, r *http.Request) {
	in, err := decodeWrite[carWrite](r, "car", "", true, "garage")
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
	s.writeReplaced(w, r, true, yard.CarPath(c.ID), newCarView(c), c.UpdatedAt)
}

// handleWriteCar answers PUT (put: every field; the car is created when
// there is none) and PATCH (a JSON merge patch, RFC 7396: members present
// replace, "garage": null takes the car out of its garage) of a car.
func (s *Server) handleWriteCar(put bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("car_id")
		in, err := decodeWrite[carWrite](r, "car", id, put, "garage")
		if err == nil {
			err = s.carPreconditions(r, id, put)
		}
		c, created := &yard.Car{ID: id}, false
		if err == nil && put {
			in.update().Apply(c)
			created, err = s.db.cars.ReplaceCar(r.Context(), c) // sets c's times
		} else if err == nil {
			c, err = s.db.cars.UpdateCar(r.Context(), id, in.update())
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		s.writeReplaced(w, r, created, yard.CarPath(id), newCarView(c), c.UpdatedAt)
	}
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

// handleDelete answers the DELETE of a car or a garage, the resource
// whose id is the path's wildcard param: 204 once its preconditions hold
// (preconditions, as for a write) and del removed it from the store.
func (s *Server) handleDelete(param string, preconditions func(*http.Request, string, bool) error,
	del func(carStore, context.Context, string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue(param)
		err := preconditions(r, id, false)
		if err == nil {
			err = del(s.db.cars, r.Context(), id)
		}
		s.writeNoContent(w, r, err)
	}
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
	return required("The garage is missing fields.", map[string]bool{"name": in.Name == nil, "state": in.State == nil})
}

func (s *Server) handleCreateGarage(w http.ResponseWriter, r *http.Request) {
	in, err := decodeWrite[garageWrite](r, "garage", "", true)
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
	s.writeReplaced(w, r, true, yard.GaragePath(g.ID), newGarageView(g), time.Time{})
}

// handleWriteGarage answers PUT (put) and PATCH of a garage, as
// handleWriteCar does for a car.
func (s *Server) handleWriteGarage(put bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("garage_id")
		in, err := decodeWrite[garageWrite](r, "garage", id, put)
		if err == nil {
			err = s.garagePreconditions(r, id, put)
		}
		if err == nil {
			err = s.checkCarCount(r, id, in.CarCount, put)
		}
		g, created := &yard.Garage{ID: id}, false
		if err == nil && put {
			g.Name, g.State = *in.Name, *in.State
			created, err = s.db.cars.ReplaceGarage(r.Context(), g)
		} else if err == nil {
			g, err = s.db.cars.UpdateGarage(r.Context(), id, yard.GarageUpdate{Name: in.Name, State: in.State})
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		s.writeReplaced(w, r, created, yard.GaragePath(id), newGarageView(g), time.Time{})
	}
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

// writeReplaced answers a write of a whole resource (POST, PUT) or a
// PATCH: 201 with Location when it created the resource at path, else 200
// with the new representation (docs/api.md, HTTP), both with the
// validators a GET answers with (modified zero: no Last-Modified).
func (s *Server) writeReplaced(w http.ResponseWriter, r *http.Request, created bool, path string, view any, modified time.Time) {
	status := http.StatusOK
	if created {
		w.Header().Set("Location", s.url(path))
		status = http.StatusCreated
	}
	writeRepresentation(w, r, status, view, modified)
}

// writeNoContent answers a write without a body (a DELETE, a sign-out):
// 204, or the error of making it.
func (s *Server) writeNoContent(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
