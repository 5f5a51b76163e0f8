package yard_test

import (
	"testing"

	"github.com/yard-api/yard"
)

// TestReadQuery pins the one reader of a list's query (docs/api.md, "Query
// parameters of lists"): pages, defaults, limits, and the wording of every
// refusal.
func TestReadQuery(t *testing.T) {
	events := yard.Paging{DefaultMax: 100, Limit: 1000, NoOffset: true}
	tests := []struct {
		raw        string
		paging     yard.Paging
		page       yard.Page
		field, why string
		wantDetail string
	}{
		{raw: "", page: yard.Page{Offset: 0, Max: 20}},
		{raw: "offset=5&max=7", page: yard.Page{Offset: 5, Max: 7}},
		{raw: "offset=5;max=7", page: yard.Page{Offset: 5, Max: 7}},
		{raw: "&&max=0&", page: yard.Page{Offset: 0, Max: 0}},
		{raw: "max=500", page: yard.Page{Offset: 0, Max: 100}},
		{raw: "offset=99999999999999999999", page: yard.Page{Offset: yard.MaxCount, Max: 20}},
		{raw: "max=%35", page: yard.Page{Offset: 0, Max: 5}},
		{raw: "", paging: events, page: yard.Page{Max: 100}},
		{raw: "max=5000", paging: events, page: yard.Page{Max: 1000}},
		{raw: "offset=1", paging: events, field: "offset", why: "unknown parameter"},
		{raw: "MAX=abc", field: "MAX", why: "unknown parameter", wantDetail: `Bad query parameter "MAX": unknown parameter.`},
		{raw: "max=abc", field: "max", why: "must be a whole number, 0 or more"},
		{raw: "max=-1", field: "max", why: "must be a whole number, 0 or more"},
		{raw: "max=%2B5", field: "max", why: "must be a whole number, 0 or more"},
		{raw: "max= 5", field: "max", why: "must be a whole number, 0 or more"},
		{raw: "max=", field: "max", why: "must be a whole number, 0 or more"},
		{raw: "max=1&max=2", field: "max", why: "given more than once", wantDetail: `Bad query parameter "max": given more than once.`},
		{raw: "max=1;max=1", field: "max", why: "given more than once"},
		{raw: "offset=%zz", field: "offset", why: "the value is not correctly percent-encoded"},
		{raw: "zzz=1", field: "zzz", why: "unknown parameter"},
		{raw: "max", field: "max", why: "a pair needs the form name=value"},
		{raw: "%zz=1", field: "%zz", why: "the name is not correctly percent-encoded"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			page, err := yard.ReadQuery(tt.raw, tt.paging, nil)
			if tt.field == "" {
				if err != nil || page != tt.page {
					t.Fatalf("got %+v, %v, want %+v", page, err, tt.page)
				}
				return
			}
			e, ok := err.(*yard.Error)
			if !ok || e.Code != yard.EINVALID || len(e.Fields) != 1 || e.Fields[0] != (yard.FieldError{Field: tt.field, Message: tt.why}) {
				t.Fatalf("got %v, want invalid with %s: %s", err, tt.field, tt.why)
			}
			if tt.wantDetail != "" && e.Message != tt.wantDetail {
				t.Errorf("detail %q, want %q", e.Message, tt.wantDetail)
			}
		})
	}
}

// TestReadParams: a list's own parameters, each once, by exact name.
func TestReadParams(t *testing.T) {
	page, vals, err := yard.ReadParams("after=a%20b&types=x&max=3", yard.Paging{DefaultMax: 100, Limit: 1000, NoOffset: true}, "after", "types")
	if err != nil || page.Max != 3 || vals["after"] != "a b" || vals["types"] != "x" || len(vals) != 2 {
		t.Fatalf("got %+v %v %v", page, vals, err)
	}
	for raw, want := range map[string]yard.FieldError{
		"after=a&after=b": {Field: "after", Message: "given more than once"},
		"After=a":         {Field: "After", Message: "unknown parameter"},
		"types=%z":        {Field: "types", Message: "the value is not correctly percent-encoded"},
	} {
		_, _, err := yard.ReadParams(raw, yard.Paging{}, "after", "types")
		if e, ok := err.(*yard.Error); !ok || len(e.Fields) != 1 || e.Fields[0] != want {
			t.Errorf("%q: got %v, want %+v", raw, err, want)
		}
	}
}
