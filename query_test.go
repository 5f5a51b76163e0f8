package yard_test

import (
	"strings"
	"testing"

	"github.com/yard-api/yard"
)

func TestParseCarQuery(t *testing.T) {
	tests := []struct {
		name, raw string
		want      string // canonical form
		page      yard.Page
	}{
		{"empty", "", "", yard.Page{Max: 20}},
		{"one field", "color=red", "color=red", yard.Page{Max: 20}},
		{"case ignored", "Color=RED", "color=red", yard.Page{Max: 20}},
		{"comma is or", "color=red,blue", "color=blue,red", yard.Page{Max: 20}},
		{"repeat adds", "color=red&color=blue", "color=blue,red", yard.Page{Max: 20}},
		{"semicolons", "color=red;doors=4;max=5", "color=red&doors=4", yard.Page{Max: 5}},
		{"mixed separators", "color=red;doors=4&year=2010", "color=red&doors=4&year=2010", yard.Page{Max: 20}},
		{"negation", "color=!red", "color=!red", yard.Page{Max: 20}},
		{"in and not in", "make=ford,!toyota", "make=ford,!toyota", yard.Page{Max: 20}},
		{"encoded comma is a value", "model=a%2Cb,c", "model=a%2Cb,c", yard.Page{Max: 20}},
		{"encoded bang is a value", "model=%21x", "model=%21x", yard.Page{Max: 20}},
		{"plus is space", "make=land+rover", "make=land%20rover", yard.Page{Max: 20}},
		{"vendor is make", "vendor=Ford", "make=ford", yard.Page{Max: 20}},
		{"q eq", "q.color.eq=red", "color=red", yard.Page{Max: 20}},
		{"q ne", "q.color.ne=red", "color=!red", yard.Page{Max: 20}},
		{"q ne with bang", "q.color.ne=!red", "color=red", yard.Page{Max: 20}},
		{"q garage id", "q.garage.id.eq=g1", "garage.id=g1", yard.Page{Max: 20}},
		{"garage alias", "garage=g1", "garage.id=g1", yard.Page{Max: 20}},
		{"garage null", "garage=null", "garage.id=null", yard.Page{Max: 20}},
		{"garage not null", "garage=!null", "garage.id=!null", yard.Page{Max: 20}},
		{"garage state", "garage.state=CA,ny", "garage.state=ca,ny", yard.Page{Max: 20}},
		{"garage name", "q.garage.name.eq=Main+St", "garage.name=main%20st", yard.Page{Max: 20}},
		{"numbers normalised", "doors=04", "doors=4", yard.Page{Max: 20}},
		{"ranges keep the strongest", "q.year.gt=2000&q.year.gt=2005&q.year.le=2020", "q.year.gt=2005&q.year.le=2020", yard.Page{Max: 20}},
		{"range and eq", "q.doors.ge=2&doors=4", "doors=4&q.doors.ge=2", yard.Page{Max: 20}},
		// More fields than the builder holds without growing, then values
		// for the first fields again.
		{"many fields", "color=red&type=suv&doors=4&make=ford&model=f-150&year=2010&garage.name=north&garage.state=ca&color=blue&q.year.ge=2001&make=!kia&garage=g1",
			"color=blue,red&doors=4&garage.id=g1&garage.name=north&garage.state=ca&make=ford,!kia&model=f-150&type=suv&year=2010&q.year.ge=2001", yard.Page{Max: 20}},
		{"max cut", "max=1000", "", yard.Page{Max: 100}},
		{"offset", "offset=40&max=10", "", yard.Page{Offset: 40, Max: 10}},
		{"max zero", "max=0", "", yard.Page{Max: 0}},
		{"empty pairs skipped", "&&color=red;;", "color=red", yard.Page{Max: 20}},
		{"uppercase op", "q.year.GT=2000", "q.year.gt=2000", yard.Page{Max: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, page, err := yard.ParseCarQuery(tt.raw)
			if err != nil {
				t.Fatalf("ParseCarQuery(%q): %v", tt.raw, err)
			}
			if got := q.String(); got != tt.want {
				t.Errorf("ParseCarQuery(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			if page != tt.page {
				t.Errorf("page = %+v, want %+v", page, tt.page)
			}
			// The canonical form parses to the same query.
			again, _, err := yard.ParseCarQuery(q.String())
			if err != nil || !again.Equal(q) {
				t.Errorf("round trip of %q: got %q, %v", q.String(), again.String(), err)
			}
		})
	}
}

func TestParseCarQueryErrors(t *testing.T) {
	tests := []struct {
		raw, field, inMessage string
	}{
		{"colour=red", "colour", `"colour": unknown parameter`},
		{"color", "color", "name=value"},
		{"color=", "color", "empty value"},
		{"color=red,", "color", "empty value"},
		{"color=!", "color", "empty value"},
		{"doors=four", "doors", `"four" is not a whole number`},
		{"year=2000&q.year.gt=abc", "q.year.gt", "whole number"},
		{"q.color.lt=red", "q.color.lt", "numbers only"},
		{"q.color.like=red", "q.color.like", "unknown operator"},
		{"q.color=red", "q.color", "q.<path>.<op>"},
		{"q.garage.owner.eq=x", "q.garage.owner.eq", "unknown parameter"},
		{"q.year.gt=1,2", "q.year.gt", "one value"},
		{"q.year.gt=!1", "q.year.gt", "'!'"},
		{"doors=null", "doors", "whole number"},
		{"max=-1", "max", "whole number"},
		{"max=ten", "max", "whole number"},
		{"offset=-5", "offset", "whole number"},
		{"offset=1&offset=2", "offset", "more than once"},
		{"color=%zz", "color", "percent-encoded"},
		{"id=x", "id", "unknown parameter"},
		{"MAX=5", "MAX", "unknown parameter"},
		{"Offset=5", "Offset", "unknown parameter"},
		{"max=1;max=2", "max", "given more than once"},
		{"facets=make", "facets", "unknown parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			_, _, err := yard.ParseCarQuery(tt.raw)
			if yard.ErrorCode(err) != yard.EINVALID {
				t.Fatalf("ParseCarQuery(%q) error = %v, want invalid", tt.raw, err)
			}
			e := err.(*yard.Error)
			if len(e.Fields) != 1 || e.Fields[0].Field != tt.field {
				t.Errorf("fields = %+v, want one naming %q", e.Fields, tt.field)
			}
			if !strings.Contains(e.Message, tt.inMessage) {
				t.Errorf("message %q does not contain %q", e.Message, tt.inMessage)
			}
		})
	}
}

func TestParseCarQueryTooManyValues(t *testing.T) {
	raw := "color=" + strings.Repeat("x,", yard.MaxQueryValues) + "y"
	if _, _, err := yard.ParseCarQuery(raw); yard.ErrorCode(err) != yard.EINVALID {
		t.Fatalf("got %v, want invalid", err)
	}
}

func TestQueryAnd(t *testing.T) {
	a, _, _ := yard.ParseCarQuery("garage.id=g1")
	b, _, _ := yard.ParseCarQuery("color=red&garage.id=g2")
	q := a.And(b)
	if len(q.Filters) != 3 || q.Filters[0].Field != "color" || q.Filters[1].Field != "garage.id" || q.Filters[2].Field != "garage.id" {
		t.Fatalf("And = %+v, want color and both garage filters", q.Filters)
	}
}

func TestParseSearchBody(t *testing.T) {
	tests := []struct {
		name, body string
		wantName   string
		want       string
	}{
		{"dollar form", `{"$class":"car","$q":{"$eq":{"color":"Red","garage":{"state":"CA"}},"$ne":{"make":"Ford"}},"name":"reds"}`,
			"reds", "color=red&garage.state=ca&make=!ford"},
		{"flat form", `{"color":"red","make":"Ford","model":"Mustang","garage":{"state":"CA"}}`,
			"", "color=red&garage.state=ca&make=ford&model=mustang"},
		{"arrays are any of", `{"color":["red","blue"],"doors":[2,"4"]}`, "", "color=blue,red&doors=2,4"},
		{"garage null", `{"$q":{"$eq":{"garage":null}}}`, "", "garage.id=null"},
		{"garage not null", `{"$q":{"$ne":{"garage":null}}}`, "", "garage.id=!null"},
		{"garage id string", `{"garage":"g1"}`, "", "garage.id=g1"},
		{"dotted garage path", `{"$q":{"$eq":{"garage.name":"Main"}}}`, "", "garage.name=main"},
		{"numeric ops", `{"$q":{"$gt":{"year":2010},"$le":{"doors":4}}}`, "", "q.doors.le=4&q.year.gt=2010"},
		{"plain key in q is eq", `{"$q":{"vendor":"BMW"}}`, "", "make=bmw"},
		{"class any case", `{"$class":"Car","$q":{}}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := yard.ParseSearchBody([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseSearchBody: %v", err)
			}
			if req.Name != tt.wantName || req.Query.String() != tt.want {
				t.Errorf("got name %q query %q, want %q %q", req.Name, req.Query.String(), tt.wantName, tt.want)
			}
		})
	}
}

func TestParseSearchBodyErrors(t *testing.T) {
	tests := []struct {
		body, field string
		code        string
	}{
		{`{"$class":"dog","$q":{}}`, "$class", yard.EINVALID},
		{`{"$class":"car"}`, "$q", yard.EINVALID},
		{`{"$q":{"$like":{"color":"red"}}}`, "$q.$like", yard.EINVALID},
		{`{"$q":{"$eq":{"colour":"red"}}}`, "$q.$eq.colour", yard.EINVALID},
		{`{"$q":{"$eq":{"garage":{"city":"x"}}}}`, "$q.$eq.garage.city", yard.EINVALID},
		{`{"$q":{"$lt":{"color":"red"}}}`, "$q.$lt.color", yard.EINVALID},
		{`{"$q":{"$eq":{"doors":"four"}}}`, "$q.$eq.doors", yard.EINVALID},
		{`{"color":null}`, "color", yard.EINVALID},
		{`{"color":3}`, "color", yard.EINVALID},
		{`{"color":[]}`, "color", yard.EINVALID},
		{`{"colour":"red"}`, "colour", yard.EINVALID},
		{`{"$q":{},"extra":1}`, "extra", yard.EINVALID},
		{`{"name":"has space","color":"red"}`, "name", yard.EINVALID},
		{`{"name":"search","color":"red"}`, "name", yard.EINVALID},
		{`{"garage":"null"}`, "garage", yard.EINVALID},
		{`{"color":"red"`, "", yard.EMALFORMED},
		{`[1]`, "(document)", yard.EINVALID},
		{`null`, "(document)", yard.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			_, err := yard.ParseSearchBody([]byte(tt.body))
			if yard.ErrorCode(err) != tt.code {
				t.Fatalf("error = %v, want code %s", err, tt.code)
			}
			if tt.field == "" {
				return
			}
			e := err.(*yard.Error)
			if len(e.Fields) != 1 || e.Fields[0].Field != tt.field {
				t.Errorf("fields = %+v, want %q", e.Fields, tt.field)
			}
		})
	}
}

// TestEquivalentForms checks that every way of writing one search gives
// the same Query value (the store test checks they give the same cars).
func TestEquivalentForms(t *testing.T) {
	groups := [][]string{
		{
			"color=red&garage.state=CA&make=!Ford",
			"color=RED;garage.state=ca;make=!ford",
			"q.color.eq=red&q.garage.state.eq=CA&q.make.ne=Ford",
			"q.vendor.ne=ford;color=red;q.garage.state.eq=ca",
			`{"$class":"car","$q":{"$eq":{"color":"red","garage":{"state":"CA"}},"$ne":{"make":"Ford"}}}`,
			`{"$q":{"$eq":{"color":"red","garage.state":"CA"},"$ne":{"vendor":"FORD"}}}`,
		},
		{
			"color=red,blue",
			"color=red&color=blue",
			"q.color.eq=blue;q.color.eq=red",
			`{"color":["red","blue"]}`,
			`{"$q":{"$eq":{"color":["Blue","Red"]}}}`,
		},
		{
			"garage=null",
			"q.garage.id.eq=null",
			`{"$q":{"$eq":{"garage":null}}}`,
			`{"garage":null}`,
		},
	}
	for _, g := range groups {
		var first string
		for i, form := range g {
			var q yard.Query
			var err error
			if strings.HasPrefix(form, "{") {
				var req yard.SearchRequest
				req, err = yard.ParseSearchBody([]byte(form))
				q = req.Query
			} else {
				q, _, err = yard.ParseCarQuery(form)
			}
			if err != nil {
				t.Fatalf("%s: %v", form, err)
			}
			if i == 0 {
				first = q.String()
			} else if q.String() != first {
				t.Errorf("%s gives %q, want %q (as %s)", form, q.String(), first, g[0])
			}
		}
	}
}

// TestCanonicalField: names resolve as the grammar reads them, aliases and
// case included; a name that is no queryable path is refused.
func TestCanonicalField(t *testing.T) {
	for name, want := range map[string]string{"make": "make", "Vendor": "make", "GARAGE": "garage.id", "garage.State": "garage.state", "doors": "doors"} {
		if got, ok := yard.CanonicalField(name); !ok || got != want {
			t.Errorf("CanonicalField(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"owner", "q.make.eq", ""} {
		if got, ok := yard.CanonicalField(name); ok {
			t.Errorf("CanonicalField(%q) = %q, true; want false", name, got)
		}
	}
}
