package conform

import (
	"net/url"
	"strings"

	"github.com/yard-api/yard/internal/weblink"
)

// carSet is the garages and cars the kit made: four cars of one make
// (the kit's prefix), three of them in two garages.
type carSet struct {
	make, stateA, stateB string
	g1, g2               string   // garage ids
	cars                 []string // car ids: red sedan 4 doors in g1, blue coupe in g1, red suv in g2, green sedan alone
}

// cars creates the kit's garages and cars once.
func (t *T) cars() *carSet {
	if t.k.carSet != nil {
		return t.k.carSet
	}
	k := t.k
	cs := &carSet{make: k.prefix, stateA: k.prefix + "-a", stateB: k.prefix + "-b"}
	garage := func(name, state string) string {
		r := t.Expect(201, "POST", "/garages", basic(k.admin), jsonBody(map[string]any{"name": name, "state": state}))
		id := r.Str("id")
		t.Check(id != "", "the garage has no id")
		k.created("garage "+id, "DELETE", "/garages/"+url.PathEscape(id), []opt{basic(k.admin)})
		return id
	}
	cs.g1 = garage(k.prefix+"-g1", cs.stateA)
	cs.g2 = garage(k.prefix+"-g2", cs.stateB)
	for _, c := range []map[string]any{
		{"color": "red", "type": "sedan", "doors": 4, "model": "m1", "year": 2001, "garage": cs.g1},
		{"color": "blue", "type": "coupe", "doors": 2, "model": "m2", "year": 2002, "garage": cs.g1},
		{"color": "red", "type": "suv", "doors": 5, "model": "m1", "year": 2003, "garage": cs.g2},
		{"color": "green", "type": "sedan", "doors": 4, "model": "m3", "year": 2004, "garage": nil},
	} {
		c["make"] = cs.make
		r := t.Expect(201, "POST", "/cars", basic(k.admin), jsonBody(c))
		id := r.Str("id")
		t.Check(id != "", "the car has no id")
		t.Location(r, "")
		k.created("car "+id, "DELETE", "/cars/"+url.PathEscape(id), []opt{basic(k.admin)})
		cs.cars = append(cs.cars, id)
	}
	k.carSet = cs
	return cs
}

// total reads a page at target without credentials and returns its total,
// failing unless it is a page.
func (t *T) total(target string, opts ...opt) float64 {
	r := t.Expect(200, "GET", target, opts...)
	_, ok := r.JSON()["items"].([]any)
	t.Check(ok && r.Num("total") >= 0, "GET %s is not a page {items, total}", target)
	return r.Num("total")
}

// wantTotal fails unless the page at target has total want.
func (t *T) wantTotal(target string, want float64) {
	got := t.total(target)
	t.Check(got == want, "GET %s: total %v, want %v", target, got, want)
}

// totals is a check that the page at each of targets has total want;
// {make} in a target stands for the make of the kit's cars.
func totals(part, name string, level Level, doc, sends, expects string, want float64, targets ...string) Check {
	return def(part, name, level, doc, sends, expects, func(t *T) {
		for _, target := range targets {
			t.wantTotal(strings.ReplaceAll(target, "{make}", t.cars().make), want)
		}
	})
}

func carChecks() []Check {
	const p, doc = "cars", "docs/cars.md#paths"
	const grammar = "docs/cars.md#the-query-grammar"
	return []Check{
		def(p, "create", Must, doc, "POST /garages and POST /cars as an administrator, GET each Location",
			"201 with an absolute Location that answers 200 with the same id", func(t *T) {
				cs := t.cars()
				r := t.Expect(200, "GET", "/cars/"+cs.cars[0])
				t.Check(r.Str("id") == cs.cars[0] && r.Str("garage") == cs.g1, "the car %s", r.Body)
			}),
		def(p, "car-shapes", Must, doc, "GET /car/{id}, /cars/{id} and /{garage_id}/cars/{id} without credentials",
			"200 with the same car from each", func(t *T) {
				cs := t.cars()
				for _, u := range []string{"/car/", "/cars/", "/" + cs.g1 + "/cars/"} {
					r := t.Expect(200, "GET", u+cs.cars[0])
					t.Check(r.Str("id") == cs.cars[0] && r.Str("color") == "red" && r.Str("make") == cs.make, "GET %s%s answered %s", u, cs.cars[0], r.Body)
				}
			}),
		def(p, "car-other-garage", Must, doc, "GET /{other garage}/cars/{car_id}",
			"404 problem: the car is not in that garage", func(t *T) {
				cs := t.cars()
				t.Problem(t.Do("GET", "/"+cs.g2+"/cars/"+cs.cars[0]), 404, "not-found")
			}),
		def(p, "garage-shapes", Must, doc, "GET /garage/{id} and /garages/{id}",
			"200 with the garage and carCount 2 from each", func(t *T) {
				cs := t.cars()
				for _, u := range []string{"/garage/", "/garages/"} {
					r := t.Expect(200, "GET", u+cs.g1)
					t.Check(r.Str("id") == cs.g1 && r.Num("carCount") == 2, "GET %s%s answered %s", u, cs.g1, r.Body)
				}
			}),
		def(p, "garage-cars", Must, doc, "GET /garage/{id}/cars and /garages/{id}/cars",
			"a page of the garage's 2 cars from each", func(t *T) {
				cs := t.cars()
				for _, u := range []string{"/garage/", "/garages/"} {
					r := t.Expect(200, "GET", u+cs.g1+"/cars")
					items, _ := r.JSON()["items"].([]any)
					t.Check(r.Num("total") == 2 && len(items) == 2, "GET %s%s/cars: total %v, %d items, want 2", u, cs.g1, r.JSON()["total"], len(items))
					for _, it := range items {
						c, _ := it.(map[string]any)
						t.Check(c["garage"] == cs.g1, "a car of garage %v in the list of %s", c["garage"], cs.g1)
					}
				}
			}),
		totals(p, "search-shapes", Must, grammar, "GET /cars, /cars/search, /cars/search/all, /cars/search/by-parameters ?make=M and /cars/search/by-vendor?vendor=M",
			"the same total, 4, from each", 4, "/cars?make={make}", "/cars/search?make={make}", "/cars/search/all?make={make}", "/cars/search/by-parameters?make={make}", "/cars/search/by-vendor?vendor={make}"),
		totals(p, "attributes", Must, grammar, "GET /cars?make=M&color=red&type=sedan&doors=4 and /cars/search?make=M&color=red&model=m1&year=2003",
			"total 1 each (different fields AND together)", 1, "/cars?make={make}&color=red&type=sedan&doors=4", "/cars/search?make={make}&color=red&model=m1&year=2003"),
		totals(p, "comma-or", Must, grammar, "GET /cars?make=M&color=red,blue",
			"total 3 (a comma separates values of one field: OR)", 3, "/cars?make={make}&color=red,blue"),
		totals(p, "exclude", Must, grammar, "GET /cars?make=M&color=!red",
			"total 2 (a leading ! excludes the value)", 2, "/cars?make={make}&color=!red"),
		totals(p, "semicolon", Must, grammar, "GET /cars?make=M;color=red",
			"total 2 (; separates pairs like &)", 2, "/cars?make={make};color=red"),
		totals(p, "filter-ops", Must, grammar, "GET /cars?make=M&q.color.eq=red, …&q.color.ne=red, …&q.year.gt=2002",
			"totals 2, 2 and 2", 2, "/cars?make={make}&q.color.eq=red", "/cars?make={make}&q.color.ne=red", "/cars?make={make}&q.year.gt=2002"),
		def(p, "garage-filters", Must, grammar, "GET /cars?q.garage.id.eq=G1, ?make=M&garage=null, ?make=M&q.garage.state.eq=S2",
			"totals 2, 1 and 1", func(t *T) {
				cs := t.cars()
				t.wantTotal("/cars?q.garage.id.eq="+cs.g1, 2)
				t.wantTotal("/cars?make="+cs.make+"&garage=null", 1)
				t.wantTotal("/cars?make="+cs.make+"&q.garage.state.eq="+cs.stateB, 1)
			}),
		totals(p, "ignore-case", Should, grammar, "GET /cars?make=M&color=RED",
			"total 2 (string matches ignore case)", 2, "/cars?make={make}&color=RED"),
		def(p, "unknown-field", Must, grammar, "GET /cars?zzz=1 and /cars?q.color.zz=red",
			"400 problems naming zzz and the operator's parameter", func(t *T) {
				t.Problem(t.Do("GET", "/cars?zzz=1"), 400, "validation", "zzz")
				t.Problem(t.Do("GET", "/cars?q.color.zz=red"), 400, "validation")
			}),
		def(p, "facets", Should, "docs/cars.md#facets", "GET /cars?make=M&facets=color",
			`"facets":{"color":{"red":2,"blue":1,"green":1}}`, func(t *T) {
				r := t.Expect(200, "GET", "/cars?make="+t.cars().make+"&facets=color")
				f, _ := r.JSON()["facets"].(map[string]any)
				c, _ := f["color"].(map[string]any)
				t.Check(c != nil && c["red"] == float64(2) && c["blue"] == float64(1) && c["green"] == float64(1), "facets %v, want color red 2, blue 1, green 1", r.JSON()["facets"])
			}),
		def(p, "paging", Must, "docs/api.md#http", "GET /cars?make=M&max=2, then the next link",
			"2 items of total 4, Link first/next/last; the next page has 2 items at offset 2 and a prev link", func(t *T) {
				cs := t.cars()
				r := t.Expect(200, "GET", "/cars?make="+cs.make+"&max=2")
				items, _ := r.JSON()["items"].([]any)
				t.Check(len(items) == 2 && r.Num("total") == 4, "%d items of total %v, want 2 of 4", len(items), r.JSON()["total"])
				for _, rel := range []string{"first", "next", "last"} {
					t.Check(weblink.Targets(r.Header)[rel] != "", "Link %q has no rel=%q", r.Header.Values("Link"), rel)
				}
				next := weblink.Targets(r.Header)["next"]
				n := t.Expect(200, "GET", next)
				items, _ = n.JSON()["items"].([]any)
				t.Check(len(items) == 2 && n.Num("offset") == 2, "the next page: %d items at offset %v, want 2 at 2", len(items), n.JSON()["offset"])
				t.Check(weblink.Targets(n.Header)["prev"] != "", "the second page has no prev link")
				t.Check(strings.Contains(next, cs.make), "the next link %q lost the filter", next)
			}),
		def(p, "max-cut", Must, "docs/api.md#http", "GET /cars?make=M&max=1000",
			"200 with max 100 (cut, not refused)", func(t *T) {
				r := t.Expect(200, "GET", "/cars?make="+t.cars().make+"&max=1000")
				t.Check(r.Num("max") == 100, "max %v, want 100", r.JSON()["max"])
			}),
		def(p, "bad-max", Must, "docs/api.md#http", "GET /cars?max=-1",
			"400 problem naming max", func(t *T) {
				t.Problem(t.Do("GET", "/cars?max=-1"), 400, "validation", "max")
			}),
		def(p, "admin-writes", Must, doc, "POST /cars as a person who is not an administrator",
			"403 problem", func(t *T) {
				r := t.Do("POST", "/cars", basic(t.owner()), jsonBody(map[string]any{"color": "red", "type": "t", "doors": 1, "make": t.k.prefix, "model": "x", "year": 2000}))
				t.createdAnyway(r, "car", "/cars/"+r.Str("id"), basic(t.k.admin))
				t.Problem(r, 403, "forbidden")
			}),
		def(p, "move", Must, doc, `PATCH /cars/{id} {"garage":G2} for the car in no garage, then the garage's list; PATCH back to null`,
			"200 with garage G2; G2 lists 2 cars; then 1 again", func(t *T) {
				cs := t.cars()
				r := t.Expect(200, "PATCH", "/cars/"+cs.cars[3], basic(t.k.admin), jsonBody(map[string]any{"garage": cs.g2}))
				t.Check(r.Str("garage") == cs.g2, "garage %v after the move", r.JSON()["garage"])
				t.wantTotal("/garages/"+cs.g2+"/cars", 2)
				t.Expect(200, "PATCH", "/cars/"+cs.cars[3], basic(t.k.admin), jsonBody(map[string]any{"garage": nil}))
				t.wantTotal("/garages/"+cs.g2+"/cars", 1)
			}),
		def(p, "garage-in-use", Must, doc, "DELETE /garages/{id} of a garage holding cars",
			"409 problem; the garage stays", func(t *T) {
				cs := t.cars()
				t.Problem(t.Do("DELETE", "/garages/"+cs.g1, basic(t.k.admin)), 409, "conflict")
				t.Expect(200, "GET", "/garages/"+cs.g1)
			}),
	}
}

func searchChecks() []Check {
	const p, doc = "searches", "docs/cars.md#search-bodies"
	// search creates a search and returns its Location.
	search := func(t *T, body map[string]any) string {
		r := t.Expect(201, "POST", "/searches", basic(t.owner()), jsonBody(body))
		loc := t.Location(r, "")
		t.Check(strings.HasPrefix(t.path(loc), "/searches/"), "Location %q is not under /searches/", loc)
		t.k.created("search "+loc, "DELETE", loc, []opt{basic(t.k.admin)})
		return loc
	}
	return []Check{
		def(p, "class-q", Must, doc, `POST /searches {"$class":"car","$q":{"$eq":{"make":M,"color":"red"}}}, GET the Location`,
			"201 with Location /searches/{id}; its results: total 2", func(t *T) {
				m := t.cars().make
				t.wantTotal(search(t, map[string]any{"$class": "car", "$q": map[string]any{"$eq": map[string]any{"make": m, "color": "red"}}}), 2)
			}),
		def(p, "ne", Must, doc, `POST /searches {"$class":"car","$q":{"$eq":{"make":M},"$ne":{"color":"red"}}}`,
			"results total 2", func(t *T) {
				m := t.cars().make
				t.wantTotal(search(t, map[string]any{"$class": "car", "$q": map[string]any{"$eq": map[string]any{"make": m}, "$ne": map[string]any{"color": "red"}}}), 2)
			}),
		def(p, "nested-garage", Must, doc, `POST /searches {"$class":"car","$q":{"$eq":{"make":M,"garage":{"state":S2}}}}`,
			"results total 1 (a nested object is a condition on the garage)", func(t *T) {
				cs := t.cars()
				t.wantTotal(search(t, map[string]any{"$class": "car", "$q": map[string]any{"$eq": map[string]any{"make": cs.make, "garage": map[string]any{"state": cs.stateB}}}}), 1)
			}),
		def(p, "flat", Must, doc, `POST /searches {"make":M,"color":"blue"}`,
			"results total 1", func(t *T) {
				t.wantTotal(search(t, map[string]any{"make": t.cars().make, "color": "blue"}), 1)
			}),
		def(p, "paging", Must, doc, "GET /searches/{id}?offset=1&max=1",
			"1 item at offset 1 of total 4", func(t *T) {
				loc := search(t, map[string]any{"make": t.cars().make})
				r := t.Expect(200, "GET", loc+"?offset=1&max=1")
				items, _ := r.JSON()["items"].([]any)
				t.Check(len(items) == 1 && r.Num("offset") == 1 && r.Num("total") == 4, "%d items at offset %v of %v, want 1 at 1 of 4", len(items), r.JSON()["offset"], r.JSON()["total"])
			}),
		def(p, "needs-credentials", Must, "docs/cars.md#paths", "POST /searches without credentials",
			"401", func(t *T) {
				t.Expect(401, "POST", "/searches", jsonBody(map[string]any{"make": "x"}))
			}),
		def(p, "admin-list", Must, "docs/cars.md#paths", "GET /searches as a person, then as an administrator",
			"403, then 200 with a page", func(t *T) {
				t.Problem(t.Do("GET", "/searches", basic(t.owner())), 403, "forbidden")
				r := t.Expect(200, "GET", "/searches", basic(t.k.admin))
				_, ok := r.JSON()["items"].([]any)
				t.Check(ok, "GET /searches is not a page")
			}),
		def(p, "delete", Must, "docs/cars.md#paths", "DELETE /searches/{id} as a person, then as an administrator, then GET",
			"403, 204, then 404", func(t *T) {
				loc := search(t, map[string]any{"make": t.cars().make})
				t.Problem(t.Do("DELETE", loc, basic(t.owner())), 403, "forbidden")
				t.Expect(204, "DELETE", loc, basic(t.k.admin))
				t.Expect(404, "GET", loc)
			}),
		def(p, "named", Must, "docs/cars.md#paths", `POST /searches {"make":M,"name":N}, GET /search/N`,
			"the results of the saved search: total 4", func(t *T) {
				name := t.k.prefix + "-saved"
				search(t, map[string]any{"make": t.cars().make, "name": name})
				t.wantTotal("/search/"+name, 4)
			}),
		totals(p, "query-segment", Must, "docs/cars.md#paths", "GET /search/make=M;color=red",
			"total 2: a segment that names no saved search is a query", 2, "/search/make={make};color=red"),
	}
}
