package yard

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Car is a car, alone or kept in a garage (docs/cars.md).
type Car struct {
	ID     string
	Color  string
	Type   string
	Doors  int
	Make   string
	Model  string
	Year   int
	Garage string // garage id, "" when the car is in no garage

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Garage holds cars. CarCount is computed when it is read.
type Garage struct {
	ID        string
	Name      string
	State     string
	CarCount  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CarUpdate holds the fields of a partial car update; nil leaves a field
// unchanged. Garage set to a pointer to "" takes the car out of its garage.
type CarUpdate struct {
	Color  *string
	Type   *string
	Doors  *int
	Make   *string
	Model  *string
	Year   *int
	Garage *string
}

// Apply changes c by upd.
func (upd CarUpdate) Apply(c *Car) {
	setIf(&c.Color, upd.Color)
	setIf(&c.Type, upd.Type)
	setIf(&c.Doors, upd.Doors)
	setIf(&c.Make, upd.Make)
	setIf(&c.Model, upd.Model)
	setIf(&c.Year, upd.Year)
	setIf(&c.Garage, upd.Garage)
}

// setIf sets *dst to *v when v is not nil.
func setIf[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// GarageUpdate holds the fields of a partial garage update.
type GarageUpdate struct {
	Name  *string
	State *string
}

// Limits of car and garage fields.
const (
	MaxCarText = 64 // color, type, make, model, garage name and state
	MinCarYear = 1886
	MaxCarYear = 9999
	MaxDoors   = 16
)

// Validate checks the fields of a car. It does not check that the garage
// exists (the store does, answering EINVALID naming "garage").
func (c *Car) Validate() error {
	fields := textErrors([2]string{"color", c.Color}, [2]string{"type", c.Type},
		[2]string{"make", c.Make}, [2]string{"model", c.Model})
	if c.Doors < 0 || c.Doors > MaxDoors {
		fields = append(fields, FieldError{Field: "doors", Message: "must be a whole number from 0 to 16"})
	}
	if c.Year < MinCarYear || c.Year > MaxCarYear {
		fields = append(fields, FieldError{Field: "year", Message: "must be a whole number from 1886 to 9999"})
	}
	if c.ID != "" && !ValidClientID(c.ID) {
		fields = append(fields, FieldError{Field: "id", Message: "must be 1-64 letters, digits, '-', '_' or '.', and not a reserved word"})
	}
	if c.Garage != "" && !ValidClientID(c.Garage) {
		fields = append(fields, FieldError{Field: "garage", Message: "is not a garage id"})
	}
	return invalidFields("The car is not valid.", fields)
}

// Validate checks the fields of a garage.
func (g *Garage) Validate() error {
	fields := textErrors([2]string{"name", g.Name}, [2]string{"state", g.State})
	if g.ID != "" && !ValidClientID(g.ID) {
		fields = append(fields, FieldError{Field: "id", Message: "must be 1-64 letters, digits, '-', '_' or '.', and not a reserved word"})
	} else if strings.EqualFold(g.ID, "null") {
		// garage=null means "in no garage" in every car query.
		fields = append(fields, FieldError{Field: "id", Message: "must not be null, which car queries read as no garage"})
	}
	return invalidFields("The garage is not valid.", fields)
}

// textErrors returns the errors of the text fields given as (name, value)
// pairs, in their order (checkText).
func textErrors(fields ...[2]string) []FieldError {
	var out []FieldError
	for _, f := range fields {
		if msg := checkText(f[1]); msg != "" {
			out = append(out, FieldError{Field: f[0], Message: msg})
		}
	}
	return out
}

// checkText returns why v is not an acceptable car text field, or "".
func checkText(v string) string {
	switch {
	case strings.TrimSpace(v) == "":
		return "is required"
	case !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxCarText:
		return "must be at most 64 characters of UTF-8 text"
	case HasControl(v):
		return "must not hold control characters"
	}
	return ""
}

// Search is a stored car search (spec: Search as a first-class resource).
// Its criteria are kept as a Query; Name, when set, makes it reachable at
// /search/{name}.
type Search struct {
	ID        string
	Name      string
	Query     Query
	CreatedBy string // user id
	CreatedAt time.Time
}

// CarList is the answer to a car list: one page of the matching cars in
// id order, the number of all matching cars and the facets asked for.
type CarList struct {
	Cars   []*Car
	Total  int
	Facets []Facet // in the order asked for
}

// Facet counts the matching cars per value of one query field.
type Facet struct {
	Field  string // a canonical query path (QueryFields)
	Values []FacetValue
}

// FacetValue is the number of matching cars holding one value. Value is
// the value's matching form: lower case for text, decimal for numbers,
// the exact id for garage.id. Null is the group of cars in no garage.
type FacetValue struct {
	Value string
	Null  bool
	Count int
}

// MaxFacetValues bounds the values reported per facet field.
const MaxFacetValues = 100

// SortFacet orders the values of f by count, most first, ties by value in
// byte order with null last, and keeps the first MaxFacetValues. Groups
// of no car are dropped.
func SortFacet(f *Facet) {
	f.Values = slices.DeleteFunc(f.Values, func(v FacetValue) bool { return v.Count <= 0 })
	slices.SortFunc(f.Values, func(a, b FacetValue) int {
		switch {
		case a.Count != b.Count:
			return cmp.Compare(b.Count, a.Count)
		case a.Null && !b.Null:
			return 1
		case b.Null && !a.Null:
			return -1
		}
		return strings.Compare(a.Value, b.Value)
	})
	if len(f.Values) > MaxFacetValues {
		f.Values = f.Values[:MaxFacetValues]
	}
}

// CarLister answers car lists: the page of cars matching q in id order
// (ids compared byte by byte), the exact total and, for each field named
// in facets (canonical paths), the counts per value. The store answers by
// SQL; the search index (package search) from memory, falling back on the
// store until it is built. Both give the same answer to every query.
type CarLister interface {
	ListCars(ctx context.Context, q Query, page Page, facets []string) (*CarList, error)
}
