package console_test

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// seedCars writes two garages and eight cars through the API as root.
func (e *env) seedCars(t *testing.T) (garageCA string) {
	t.Helper()
	garage := func(name, state string) string {
		res := e.Do(apitest.Request{Method: "POST", Path: "/garages", User: "root", Password: pw, Body: map[string]any{"name": name, "state": state}})
		if res.StatusCode != 201 {
			t.Fatalf("create garage: %d %s", res.StatusCode, res.Body)
		}
		return res.Map(t)["id"].(string)
	}
	ca, ny := garage("Bay", "CA"), garage("Hudson", "NY")
	for _, c := range []struct {
		make, color string
		doors, year int
		garage      any
	}{
		{"Ford", "red", 4, 2018, ca}, {"Ford", "blue", 2, 2012, ca}, {"Ford", "red", 2, 2020, ny},
		{"Honda", "red", 4, 2016, ny}, {"Honda", "white", 4, 2010, nil}, {"Toyota", "red", 4, 2019, ca},
		{"Toyota", "blue", 4, 2021, nil}, {"Fiat", "green", 2, 2008, ny},
	} {
		body := map[string]any{"make": c.make, "model": "M", "color": c.color, "type": "sedan", "doors": c.doors, "year": c.year, "garage": c.garage}
		if res := e.Do(apitest.Request{Method: "POST", Path: "/cars", User: "root", Password: pw, Body: body}); res.StatusCode != 201 {
			t.Fatalf("create car: %d %s", res.StatusCode, res.Body)
		}
	}
	return ca
}

var totalRE = regexp.MustCompile(`<h2 id="r-h">(\d+) cars</h2>`)

func total(t *testing.T, p page) string {
	t.Helper()
	m := totalRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no total on the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

func TestConsoleCars(t *testing.T) {
	t.Parallel()
	e := start(t, storetest.Open(t, store.SQLite))
	ca := e.seedCars(t)
	alice := e.signIn(t, "alice")

	p := alice.get("/console/cars")
	checkPage(t, "cars", p)
	if total(t, p) != "8" {
		t.Errorf("all cars: %s, want 8", total(t, p))
	}
	// The facets' counts, as links that narrow the list.
	link := regexp.MustCompile(`<a href="([^"]+)"><span class="box" aria-hidden="true"></span>ford <span class="count">3</span>`).FindStringSubmatch(p.body)
	if link == nil {
		t.Fatalf("no facet link for ford with 3:\n%s", p.body)
	}
	p = alice.get(html.UnescapeString(link[1]))
	if total(t, p) != "3" || !strings.Contains(p.body, `red <span class="count">2</span>`) {
		t.Errorf("after choosing ford: %s cars", total(t, p))
	}
	// Choosing a second field narrows again; choosing ford again removes it.
	p = alice.get("/console/cars?make=ford&color=red")
	if total(t, p) != "2" {
		t.Errorf("ford and red: %s, want 2", total(t, p))
	}
	if !strings.Contains(p.body, `<a href="/console/cars?color=red" class="on" aria-current="true">`) {
		t.Errorf("the chosen ford does not link to its removal:\n%s", p.body)
	}

	// A page of a longer list links to the next and last pages, keeping
	// the filters: the API's Link header names them with the facets'
	// commas in its URLs.
	p = alice.get("/console/cars?color=red&max=2")
	for _, want := range []string{`<a href="/console/cars?color=red&amp;offset=2&amp;max=2" rel="next" id="next-page">`, `<a href="/console/cars?color=red&amp;offset=2&amp;max=2" rel="last">`} {
		if total(t, p) != "4" || !strings.Contains(p.body, want) {
			t.Errorf("red cars two at a time: %s cars, want 4 and %s in:\n%s", total(t, p), want, p.body)
		}
	}

	// The query box, and the same query in every URL shape: each answers
	// the same total through the API.
	q := "make=ford,honda;q.year.gt=2012;garage.state=!ny"
	p = alice.get("/console/cars?grammar=" + url.QueryEscape(q))
	if total(t, p) != "1" {
		t.Fatalf("%s: %s cars, want 1", q, total(t, p))
	}
	shapes := regexp.MustCompile(`class="shape"><code>([^<]+)</code>`).FindAllStringSubmatch(p.body, -1)
	if len(shapes) != 6 {
		t.Fatalf("%d URL shapes, want 6 (four lists, /search/…, by-vendor):\n%s", len(shapes), p.body)
	}
	for _, s := range shapes {
		u := html.UnescapeString(s[1])
		res := e.Do(apitest.Request{Path: strings.TrimPrefix(u, e.URL)})
		if res.StatusCode != 200 || res.Map(t)["total"] != float64(1) {
			t.Errorf("%s: %d %s, want 200 and total 1", u, res.StatusCode, res.Body)
		}
	}
	// A bad query is the API's 400, shown.
	if p = alice.get("/console/cars?colour=red"); p.status != 400 || !strings.Contains(p.body, "colour") {
		t.Errorf("a bad query: got %d", p.status)
	}

	// Save the search; run it; a person may not list or delete it.
	p = alice.form("/console/cars?"+"color=red", url.Values{"grammar": {"color=red;doors=4"}, "name": {"red4"}})
	saved := regexp.MustCompile(`id="saved">Saved as <a href="/console/searches/([^"]+)">red4</a>`).FindStringSubmatch(p.body)
	if p.status != 200 || saved == nil {
		t.Fatalf("save: got %d\n%s", p.status, p.body)
	}
	run := alice.get("/console/searches/" + saved[1])
	if total(t, run) != "3" {
		t.Errorf("the saved search: %s cars, want 3", total(t, run))
	}
	if p = alice.get("/console/searches"); p.status != 403 {
		t.Errorf("a person's list of searches: %d, want 403", p.status)
	}
	tok := csrf(t, alice.get("/console/dogs").body)
	if p = alice.post("/console/searches/"+saved[1], url.Values{"op": {"delete"}, "csrf_token": {tok}}, nil); p.status != 403 {
		t.Errorf("a person's delete of a search: %d, want 403", p.status)
	}
	root := e.signIn(t, "root")
	if p = root.get("/console/searches"); p.status != 200 || !strings.Contains(p.body, "red4") {
		t.Errorf("the administrator's searches: %d", p.status)
	}
	if p = root.form("/console/searches/"+saved[1], url.Values{"op": {"delete"}}); p.status != 200 {
		t.Errorf("the administrator's delete: %d", p.status)
	}

	// A garage and its cars; a car.
	p = alice.get("/console/garages")
	checkPage(t, "garages", p)
	if !strings.Contains(p.body, "Hudson") {
		t.Errorf("garages: %s", p.body)
	}
	p = alice.get("/console/garages/" + ca)
	checkPage(t, "garage", p)
	if !strings.Contains(p.body, "3 cars here") {
		t.Errorf("the garage's cars:\n%s", p.body)
	}
	carLink := regexp.MustCompile(`href="(/console/cars/[^"]+)"`).FindStringSubmatch(p.body)
	p = alice.get(carLink[1])
	checkPage(t, "car", p)
	if !strings.Contains(p.body, `id="garage">Bay</a>`) {
		t.Errorf("the car:\n%s", p.body)
	}
	if p = alice.get("/console/cars/nosuch"); p.status != 404 {
		t.Errorf("a missing car: %d, want 404", p.status)
	}
}
