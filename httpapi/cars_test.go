package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/search"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

const carsFixture = `{"kind":"garage","id":"g-ca1","name":"Main Street","state":"CA"}
{"kind":"garage","id":"g-ca2","name":"Ocean Drive","state":"ca"}
{"kind":"garage","id":"g-ny","name":"Hudson","state":"NY"}
{"kind":"garage","id":"g-empty","name":"Empty Lot","state":"TX"}
{"kind":"car","id":"c01","color":"Red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2010,"garage":"g-ca1"}
{"kind":"car","id":"c02","color":"red","type":"coupe","doors":2,"make":"Ford","model":"Mustang","year":2018,"garage":"g-ca2"}
{"kind":"car","id":"c03","color":"blue","type":"sedan","doors":4,"make":"Toyota","model":"Corolla","year":2015,"garage":"g-ca1"}
{"kind":"car","id":"c04","color":"RED","type":"sedan","doors":4,"make":"Toyota","model":"Camry","year":2020,"garage":"g-ny"}
{"kind":"car","id":"c05","color":"green","type":"hatchback","doors":5,"make":"VW","model":"Golf, GTI","year":2012,"garage":null}
{"kind":"car","id":"c06","color":"red","type":"sedan","doors":4,"make":"Honda","model":"Civic","year":2005}
{"kind":"car","id":"c07","color":"black","type":"pickup","doors":2,"make":"Ford","model":"F-150","year":2021,"garage":"g-ny"}
{"kind":"car","id":"c08","color":"Blue","type":"coupe","doors":2,"make":"BMW","model":"M3","year":2019,"garage":"g-ca2"}
`

// carsEnv starts the API over the fixture with car lists answered by the
// search index, as yard serve does.
func carsEnv(t *testing.T, db *store.DB) *apitest.Env {
	return carsEnvOn(t, db, "index")
}

// carsEnvOn starts the API with car lists answered by path: "index" (the
// search index, built) or "sql" (the store).
func carsEnvOn(t *testing.T, db *store.DB, path string) *apitest.Env {
	t.Helper()
	if _, err := db.ImportCars(context.Background(), strings.NewReader(carsFixture), 0); err != nil {
		t.Fatal(err)
	}
	var opts []apitest.Option
	if path == "index" {
		ix := search.New(db, nil)
		if err := ix.Build(context.Background()); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, func(d *httpapi.Deps) { d.Cars = ix })
	}
	env := apitest.Start(t, db, opts...)
	env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
	env.CreateUser("alice", pw)
	return env
}

// ids returns the ids of the items of a page body, and its total.
func ids(t *testing.T, r *apitest.Response) (string, int) {
	t.Helper()
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		Total int `json:"total"`
	}
	r.JSON(t, &page)
	var out []string
	for _, it := range page.Items {
		out = append(out, it.ID)
	}
	return strings.Join(out, ","), page.Total
}

// TestCarURLShapesAgree runs equivalent searches through every URL shape
// and both search bodies, on both engines, and checks they give the same
// cars.
func TestCarURLShapesAgree(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"index", "sql"} {
		t.Run(path, func(t *testing.T) { testCarURLShapesAgree(t, path) })
	}
}

func testCarURLShapesAgree(t *testing.T, path string) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := carsEnvOn(t, db, path)
		groups := []struct {
			want   string
			urls   []string
			bodies []string
		}{
			{"c04,c06", []string{
				"/cars?color=red&make=!ford", "/cars?color=red;make=!ford", "/cars/search?color=RED&vendor=!Ford",
				"/cars/search/all?q.color.eq=red&q.make.ne=ford", "/cars/search/by-parameters?color=red;q.vendor.ne=FORD",
				"/cars/search/by-vendor?vendor=!ford&color=red", "/search/color=red;make=!ford", "/search/q.color.eq=red&q.make.ne=Ford",
			}, []string{
				`{"$class":"car","$q":{"$eq":{"color":"red"},"$ne":{"make":"Ford"}}}`,
				`{"$q":{"$eq":{"color":"Red"},"$ne":{"vendor":"ford"}}}`,
			}},
			{"c01,c02,c03,c08", []string{
				"/cars?garage.state=CA", "/cars?q.garage.state.eq=ca", "/cars/search?garage.state=ca",
				"/search/garage.state=CA",
			}, []string{`{"garage":{"state":"CA"}}`, `{"$class":"car","$q":{"$eq":{"garage":{"state":"ca"}}}}`}},
			{"c01,c02", []string{
				"/cars?color=red&make=ford&garage.state=ca", "/cars/search?q.garage.state.eq=CA;color=RED;vendor=Ford",
			}, []string{`{"color":"red","make":"Ford","garage":{"state":"CA"}}`,
				`{"$class":"car","$q":{"$eq":{"color":"red","make":"ford","garage":{"state":"CA"}}}}`}},
			{"c04,c07", []string{
				"/cars?garage=g-ny", "/cars?q.garage.id.eq=g-ny", "/garages/g-ny/cars", "/garage/g-ny/cars", "/search/garage=g-ny",
			}, []string{`{"garage":"g-ny"}`, `{"$q":{"$eq":{"garage":{"id":"g-ny"}}}}`}},
			{"c05,c06", []string{"/cars?garage=null", "/cars/search/all?q.garage.eq=null"},
				[]string{`{"garage":null}`, `{"$q":{"$eq":{"garage":null}}}`}},
			{"c01,c02,c03,c04,c06,c08", []string{"/cars?color=red,blue", "/cars?color=red&color=blue", "/cars?color=blue;color=red"},
				[]string{`{"color":["red","blue"]}`}},
		}
		for _, g := range groups {
			for _, u := range g.urls {
				r := env.Do(apitest.Request{Path: u})
				if r.StatusCode != 200 {
					t.Fatalf("%s: %d %s", u, r.StatusCode, r.Body)
				}
				if got, total := ids(t, r); got != g.want || total != strings.Count(g.want, ",")+1 {
					t.Errorf("%s: got %s (total %d), want %s", u, got, total, g.want)
				}
			}
			for _, b := range g.bodies {
				r := env.Do(apitest.Request{Method: "POST", Path: "/searches", Body: b, User: "alice", Password: pw})
				if r.StatusCode != 201 {
					t.Fatalf("POST /searches %s: %d %s", b, r.StatusCode, r.Body)
				}
				loc := r.Header.Get("Location")
				if !strings.HasPrefix(loc, env.URL+"/searches/") {
					t.Fatalf("Location %q", loc)
				}
				r = env.Do(apitest.Request{Path: strings.TrimPrefix(loc, env.URL)})
				if got, _ := ids(t, r); got != g.want {
					t.Errorf("search %s: got %s, want %s", b, got, g.want)
				}
			}
		}
	})
}

func TestCarPaths(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := carsEnv(t, db)
		link := `<https://127\.0\.0\.1:\d+/cars\?color=red&offset=0&max=2>; rel="first", <[^>]+offset=2&max=2>; rel="next", <[^>]+offset=2&max=2>; rel="last"`
		run(t, env, []scenario{
			{"car", apitest.Request{Path: "/cars/c01"}, 200, map[string]string{"ETag": ""}, []string{`"id":"c01"`, `"color":"Red"`, `"garage":"g-ca1"`, `"doors":4`, `"year":2010`}},
			{"car singular", apitest.Request{Path: "/car/c05"}, 200, nil, []string{`"id":"c05"`, `"garage":null`}},
			{"car not found", apitest.Request{Path: "/cars/nope"}, 404, nil, []string{"not-found"}},
			{"car in its garage", apitest.Request{Path: "/g-ca1/cars/c01"}, 200, nil, []string{`"id":"c01"`}},
			{"car in another garage", apitest.Request{Path: "/g-ny/cars/c01"}, 404, nil, nil},
			{"ungaraged car under a garage", apitest.Request{Path: "/g-ny/cars/c05"}, 404, nil, nil},
			{"garage car POST", apitest.Request{Method: "POST", Path: "/g-ca1/cars/c01", Body: "{}"}, 405, map[string]string{"Allow": "GET"}, nil},
			{"garage car OPTIONS", apitest.Request{Method: "OPTIONS", Path: "/g-ca1/cars/c01"}, 204, map[string]string{"Allow": "GET, HEAD, OPTIONS"}, nil},
			{"garage car HEAD", apitest.Request{Method: "HEAD", Path: "/g-ca1/cars/c01"}, 200, nil, nil},
			{"other three segments still 404", apitest.Request{Path: "/nothing/here/at-all"}, 404, nil, nil},
			{"dog path keeps its redirect", apitest.Request{Path: "/v1/dogs/x"}, 308, nil, nil},
			{"the search path is not a car: DELETE", apitest.Request{Method: "DELETE", Path: "/cars/search"}, 405, map[string]string{"Allow": "^GET, HEAD, OPTIONS$"}, []string{"method-not-allowed"}},
			{"the search path is not a car: PUT", apitest.Request{Method: "PUT", Path: "/cars/search", Body: "{}"}, 405, map[string]string{"Allow": "^GET, HEAD, OPTIONS$"}, nil},
			{"the search path is not a car: OPTIONS", apitest.Request{Method: "OPTIONS", Path: "/cars/search"}, 204, map[string]string{"Allow": "^GET, HEAD, OPTIONS$"}, nil},
			{"a car's methods", apitest.Request{Method: "OPTIONS", Path: "/cars/c01"}, 204, map[string]string{"Allow": "^DELETE, GET, HEAD, PATCH, PUT, OPTIONS$"}, nil},
			{"people keep their 405", apitest.Request{Method: "PUT", Path: "/v1/people/x", Body: "{}"}, 405, map[string]string{"Allow": "PATCH"}, nil},
			{"garage", apitest.Request{Path: "/garages/g-ca1"}, 200, nil, []string{`"carCount":2`, `"state":"CA"`, `"name":"Main Street"`}},
			{"garage singular", apitest.Request{Path: "/garage/g-empty"}, 200, nil, []string{`"carCount":0`}},
			{"garage not found", apitest.Request{Path: "/garages/nope"}, 404, nil, nil},
			{"garage cars of unknown garage", apitest.Request{Path: "/garages/nope/cars"}, 404, nil, nil},
			{"garage cars filtered", apitest.Request{Path: "/garages/g-ca1/cars?color=blue"}, 200, nil, []string{`"id":"c03"`, `"total":1`}},
			{"garages", apitest.Request{Path: "/garages?max=2"}, 200, map[string]string{"Link": "next"}, []string{`"total":4`}},
			{"page with links", apitest.Request{Path: "/cars?color=red&max=2"}, 200, map[string]string{"Link": link}, []string{`"total":4`, `"max":2`, `"offset":0`}},
			{"unaligned offset: next keeps the step, last is on the grid from 0", apitest.Request{Path: "/cars?color=red&max=2&offset=1"}, 200,
				map[string]string{"Link": `offset=0&max=2>; rel="first", <[^>]+offset=0&max=2>; rel="prev", <[^>]+offset=3&max=2>; rel="next", <[^>]+offset=2&max=2>; rel="last"$`}, []string{`"total":4`, `"offset":1`}},
			{"max cut to 100", apitest.Request{Path: "/cars?max=1000"}, 200, nil, []string{`"max":100`, `"total":8`}},
			{"offset past the end", apitest.Request{Path: "/cars?offset=50"}, 200, nil, []string{`"items":[]`, `"total":8`}},
			{"unknown field", apitest.Request{Path: "/cars?colour=red"}, 400, nil, []string{`"field":"colour","message":"unknown parameter"`, "validation"}},
			{"bad number", apitest.Request{Path: "/cars?doors=four"}, 400, nil, []string{`"field":"doors","message":"\"four\" is not a whole number"`}},
			{"bad operator", apitest.Request{Path: "/cars?q.color.gt=red"}, 400, nil, []string{`"field":"q.color.gt"`, "numbers only"}},
			{"negative max", apitest.Request{Path: "/cars?max=-1"}, 400, nil, []string{`"field":"max"`}},
			{"bad offset", apitest.Request{Path: "/cars?offset=x"}, 400, nil, []string{`"field":"offset"`}},
			{"bad query in the path", apitest.Request{Path: "/search/colour=red"}, 400, nil, []string{`colour=red`}},
			{"no such saved search", apitest.Request{Path: "/search/nonesuch"}, 404, nil, []string{"nonesuch"}},
			{"query in the path with paging", apitest.Request{Path: "/search/color=red;max=1"}, 200, nil, []string{`"max":1`, `"total":4`}},
			{"garages list takes no filters", apitest.Request{Path: "/garages?color=red"}, 400, nil, nil},
			{"comma inside a value", apitest.Request{Path: "/cars?model=golf%2C+gti"}, 200, nil, []string{`"id":"c05"`, `"total":1`}},
			{"literal comma splits", apitest.Request{Path: "/cars?model=golf,+gti"}, 200, nil, []string{`"total":0`}},
			{"range", apitest.Request{Path: "/cars?q.year.ge=2019;q.doors.lt=4"}, 200, nil, []string{`"total":2`, `"c07"`, `"c08"`}},
			{"garage name", apitest.Request{Path: "/cars?garage.name=hudson"}, 200, nil, []string{`"total":2`}},
			{"head", apitest.Request{Method: "HEAD", Path: "/cars/c01"}, 200, nil, nil},
		})
	})
}

func TestCarWritesAndSearchAdmin(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := carsEnv(t, db)
		car := map[string]any{"color": "White", "type": "van", "doors": 5, "make": "Ford", "model": "Transit", "year": 2017, "garage": "g-empty"}
		run(t, env, []scenario{
			{"create needs credentials", apitest.Request{Method: "POST", Path: "/cars", Body: car}, 401, map[string]string{"WWW-Authenticate": ""}, nil},
			{"create needs admin", apitest.Request{Method: "POST", Path: "/cars", Body: car, User: "alice", Password: pw}, 403, nil, nil},
			{"create", apitest.Request{Method: "POST", Path: "/cars", Body: car, User: "root", Password: pw}, 201, map[string]string{"Location": `/cars/[0-9a-f-]{36}$`}, []string{`"color":"White"`, `"garage":"g-empty"`}},
			{"create missing fields", apitest.Request{Method: "POST", Path: "/cars", Body: map[string]any{"color": "x"}, User: "root", Password: pw}, 400, nil, []string{`"field":"doors"`, `"field":"year"`}},
			{"create unknown garage", apitest.Request{Method: "POST", Path: "/cars", Body: map[string]any{"color": "White", "type": "van", "doors": 5, "make": "Ford", "model": "Transit", "year": 2017, "garage": "nope"}, User: "root", Password: pw}, 400, nil, []string{`"field":"garage"`}},
			{"create unknown field", apitest.Request{Method: "POST", Path: "/cars", Body: `{"colour":"red"}`, User: "root", Password: pw}, 400, nil, []string{"colour"}},
			{"create with id", apitest.Request{Method: "POST", Path: "/cars", Body: map[string]any{"id": "x", "color": "x"}, User: "root", Password: pw}, 400, nil, []string{`"field":"id"`}},
			{"put new", apitest.Request{Method: "PUT", Path: "/cars/my-car", Body: car, User: "root", Password: pw}, 201, map[string]string{"Location": "/cars/my-car$"}, []string{`"id":"my-car"`}},
			{"put replace", apitest.Request{Method: "PUT", Path: "/cars/my-car", Body: map[string]any{"color": "Grey", "type": "van", "doors": 5, "make": "Ford", "model": "Transit", "year": 2017}, User: "root", Password: pw}, 200, nil, []string{`"color":"Grey"`, `"garage":null`}},
			{"put reserved id", apitest.Request{Method: "PUT", Path: "/cars/by-vendor", Body: car, User: "root", Password: pw}, 400, nil, []string{`"field":"id"`}},
			{"a garage named by the id null", apitest.Request{Method: "PUT", Path: "/garages/NULL", Body: map[string]any{"name": "n", "state": "CA"}, User: "root", Password: pw}, 400, nil, []string{`"field":"id"`, "no garage"}},
			{"patch moves", apitest.Request{Method: "PATCH", Path: "/cars/my-car", Body: map[string]any{"garage": "g-ny"}, User: "root", Password: pw}, 200, nil, []string{`"garage":"g-ny"`, `"color":"Grey"`}},
			{"moved car in its garage", apitest.Request{Path: "/g-ny/cars/my-car"}, 200, nil, nil},
			{"patch out of garage", apitest.Request{Method: "PATCH", Path: "/cars/my-car", Body: `{"garage":null}`, User: "root", Password: pw, Headers: map[string]string{"Content-Type": "application/merge-patch+json"}}, 200, nil, []string{`"garage":null`}},
			{"patch bad year", apitest.Request{Method: "PATCH", Path: "/cars/my-car", Body: `{"year":1200}`, User: "root", Password: pw}, 400, nil, []string{`"field":"year"`}},
			{"patch null color", apitest.Request{Method: "PATCH", Path: "/cars/my-car", Body: `{"color":null}`, User: "root", Password: pw}, 400, nil, []string{`"field":"color"`}},
			{"patch null garage name", apitest.Request{Method: "PATCH", Path: "/garages/g-ny", Body: `{"name":null}`, User: "root", Password: pw}, 400, nil, []string{`"field":"name"`}},
			{"patch missing", apitest.Request{Method: "PATCH", Path: "/cars/nope", Body: `{"year":2000}`, User: "root", Password: pw}, 404, nil, nil},
			{"delete full garage", apitest.Request{Method: "DELETE", Path: "/garages/g-empty", User: "root", Password: pw}, 409, nil, []string{"conflict"}},
			{"delete car", apitest.Request{Method: "DELETE", Path: "/cars/my-car", User: "root", Password: pw}, 204, nil, nil},
			{"create garage", apitest.Request{Method: "POST", Path: "/garages", Body: map[string]any{"name": "New", "state": "WA"}, User: "root", Password: pw}, 201, map[string]string{"Location": "/garages/"}, []string{`"carCount":0`}},
			{"put garage", apitest.Request{Method: "PUT", Path: "/garages/g-wa", Body: map[string]any{"name": "Pike", "state": "WA"}, User: "root", Password: pw}, 201, nil, nil},
			{"patch garage", apitest.Request{Method: "PATCH", Path: "/garages/g-ny", Body: map[string]any{"state": "NJ"}, User: "root", Password: pw}, 200, nil, []string{`"state":"NJ"`, `"carCount":2`}},
			{"state change carried to cars", apitest.Request{Path: "/cars?garage.state=nj"}, 200, nil, []string{`"total":2`}},
			{"garage write needs admin", apitest.Request{Method: "DELETE", Path: "/garages/g-wa", User: "alice", Password: pw}, 403, nil, nil},
			{"delete empty garage", apitest.Request{Method: "DELETE", Path: "/garages/g-wa", User: "root", Password: pw}, 204, nil, nil},
			{"search needs credentials", apitest.Request{Method: "POST", Path: "/searches", Body: `{"color":"red"}`}, 401, nil, nil},
			{"named search", apitest.Request{Method: "POST", Path: "/searches", Body: `{"$class":"car","$q":{"$eq":{"color":"red"}},"name":"reds"}`, User: "alice", Password: pw}, 201, nil, []string{`"name":"reds"`, `"query":"color=red"`, `"$class":"car"`}},
			{"duplicate name", apitest.Request{Method: "POST", Path: "/searches", Body: `{"color":"blue","name":"REDS"}`, User: "alice", Password: pw}, 409, nil, nil},
			{"bad search field", apitest.Request{Method: "POST", Path: "/searches", Body: `{"$q":{"$eq":{"colour":"red"}}}`, User: "alice", Password: pw}, 400, nil, []string{`"field":"$q.$eq.colour"`}},
			{"bad search json", apitest.Request{Method: "POST", Path: "/searches", Body: `{"color":`, User: "alice", Password: pw}, 400, nil, nil},
			{"saved search by name", apitest.Request{Path: "/search/reds?max=3"}, 200, map[string]string{"Link": "next"}, []string{`"total":4`, `"max":3`}},
			{"saved search narrowed", apitest.Request{Path: "/search/reds?garage=null"}, 200, nil, []string{`"total":1`, `"c06"`}},
			{"list searches needs admin", apitest.Request{Path: "/searches", User: "alice", Password: pw}, 403, nil, nil},
			{"list searches", apitest.Request{Path: "/searches", User: "root", Password: pw}, 200, nil, []string{`"name":"reds"`, `"total":1`}},
			{"delete search needs admin", apitest.Request{Method: "DELETE", Path: "/searches/x", User: "alice", Password: pw}, 403, nil, nil},
			{"delete unknown search", apitest.Request{Method: "DELETE", Path: "/searches/x", User: "root", Password: pw}, 404, nil, nil},
			{"search results unknown", apitest.Request{Path: "/searches/x"}, 404, nil, nil},
		})
		// Results run again: a new red car shows up in the saved search.
		r := env.Do(apitest.Request{Method: "POST", Path: "/cars", User: "root", Password: pw,
			Body: map[string]any{"color": "red", "type": "suv", "doors": 5, "make": "Kia", "model": "Sorento", "year": 2023}})
		if r.StatusCode != 201 {
			t.Fatalf("create: %d %s", r.StatusCode, r.Body)
		}
		if _, total := ids(t, env.Do(apitest.Request{Path: "/search/reds"})); total != 5 {
			t.Fatalf("saved search after a new red car: total %d, want 5", total)
		}
		list := env.Do(apitest.Request{Path: "/searches", User: "root", Password: pw}).Map(t)
		id := list["items"].([]any)[0].(map[string]any)["id"].(string)
		if r := env.Do(apitest.Request{Method: "DELETE", Path: "/searches/" + id, User: "root", Password: pw}); r.StatusCode != http.StatusNoContent {
			t.Fatalf("delete search: %d", r.StatusCode)
		}
		if r := env.Do(apitest.Request{Path: fmt.Sprintf("/searches/%s", id)}); r.StatusCode != 404 {
			t.Fatalf("deleted search: %d", r.StatusCode)
		}
	})
}

// TestCarFacets asks every car list shape for facets, on both paths and
// both engines: the counts per value, by count, null for cars in no
// garage; an unknown field is 400 naming facets.
func TestCarFacets(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"index", "sql"} {
		t.Run(path, func(t *testing.T) {
			storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
				env := carsEnvOn(t, db, path)
				r := env.Do(apitest.Request{Method: "POST", Path: "/searches", Body: `{"color":"red"}`, User: "alice", Password: pw})
				if r.StatusCode != 201 {
					t.Fatalf("POST /searches: %d %s", r.StatusCode, r.Body)
				}
				saved := strings.TrimPrefix(r.Header.Get("Location"), env.URL)
				// Red cars: c01 (g-ca1, Ford), c02 (g-ca2, Ford), c04 (g-ny,
				// Toyota), c06 (no garage, Honda).
				red := `"facets":{"make":{"ford":2,"honda":1,"toyota":1},"garage.state":{"ca":2,"ny":1,"null":1}}`
				run(t, env, []scenario{
					{"cars", apitest.Request{Path: "/cars?color=red&facets=make,garage.state&max=1"}, 200, nil, []string{red, `"total":4`}},
					{"an alias answers by its own name", apitest.Request{Path: "/cars?color=red&facets=VENDOR,garage.state"}, 200, nil, []string{`"facets":{"vendor":{"ford":2,"honda":1,"toyota":1},"garage.state":{"ca":2,"ny":1,"null":1}}`}},
					{"repeated fields name each once, an alias apart", apitest.Request{Path: "/cars?color=red&facets=make&facets=make,vendor"}, 200, nil, []string{`"facets":{"make":{"ford":2,"honda":1,"toyota":1},"vendor":{"ford":2,"honda":1,"toyota":1}}`}},
					{"search path shape", apitest.Request{Path: "/search/color=red;facets=make,garage.state"}, 200, nil, []string{red}},
					{"saved search", apitest.Request{Path: saved + "?facets=make,garage.state"}, 200, nil, []string{red}},
					{"every car", apitest.Request{Path: "/cars?facets=color,doors,garage"}, 200, nil, []string{
						`"facets":{"color":{"red":4,"blue":2,"black":1,"green":1},"doors":{"4":4,"2":3,"5":1},"garage":{"g-ca1":2,"g-ca2":2,"g-ny":2,"null":2}}`}},
					{"garage's cars", apitest.Request{Path: "/garages/g-ny/cars?facets=garage.name,year"}, 200, nil, []string{
						`"facets":{"garage.name":{"hudson":2},"year":{"2020":1,"2021":1}}`}},
					{"no match", apitest.Request{Path: "/cars?color=purple&facets=make"}, 200, nil, []string{`"facets":{"make":{}}`}},
					{"no facets asked, none given", apitest.Request{Path: "/cars?color=red"}, 200, nil, nil},
					{"unknown field", apitest.Request{Path: "/cars?facets=make,colour"}, 400, nil, []string{`"field":"facets"`, "colour"}},
					{"empty field", apitest.Request{Path: "/cars?facets="}, 400, nil, []string{`"field":"facets"`}},
					{"not a car list", apitest.Request{Path: "/garages?facets=make"}, 400, nil, nil},
				})
				if r := env.Do(apitest.Request{Path: "/cars?color=red"}); strings.Contains(string(r.Body), "facets") {
					t.Fatalf("facets not asked for, but in the body: %s", r.Body)
				}
				want := map[string]string{"index": `"carSearch":"index"`, "sql": `"carSearch":"sql"`}[path]
				if r := env.Do(apitest.Request{Path: "/readyz"}); !strings.Contains(string(r.Body), want) {
					t.Fatalf("/readyz: %s, want %s", r.Body, want)
				}
			})
		})
	}
}
