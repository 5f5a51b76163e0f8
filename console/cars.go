package console

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// car is a car as GET /cars/{car_id} shows it.
type car struct {
	ID     string  `json:"id"`
	Color  string  `json:"color"`
	Type   string  `json:"type"`
	Doors  int     `json:"doors"`
	Make   string  `json:"make"`
	Model  string  `json:"model"`
	Year   int     `json:"year"`
	Garage *string `json:"garage"`
}

// garage is a garage as GET /garages/{garage_id} shows it.
type garage struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	CarCount int    `json:"carCount"`
}

// search is a saved search as POST /searches and GET /searches show it.
type search struct {
	ID        string  `json:"id"`
	Name      *string `json:"name"`
	Query     string  `json:"query"`
	CreatedBy string  `json:"createdBy"`
	CreatedAt string  `json:"createdAt"`
}

// facetValue is one value of a facet: its count, whether the query asks
// for it, and the console link that adds or removes it.
type facetValue struct {
	Value    string
	Count    int
	Selected bool
	Link     string
}

// facet is the counts of one field.
type facet struct {
	Field  string
	Values []facetValue
}

// carList is a page of cars with its facets, as every car list shows it.
type carList struct {
	Cars   []car
	Facets []facet
	Pager  pager
	Total  int
}

// readCars asks the API for a car list at path (a list URL without
// query) with the filters of query, the facets and a page, and returns it
// with links for self (a console path) that keep the filters.
func (cl *call) readCars(path, query string, pairs []pair, self string, offset, max int) (carList, result) {
	q := query
	if q != "" {
		q += "&"
	}
	q += "facets=" + strings.Join(facetFields, ",") + "&offset=" + strconv.Itoa(offset) + "&max=" + strconv.Itoa(max)
	res := cl.do("GET", path+"?"+q, nil, nil)
	var body struct {
		Items  []car                     `json:"items"`
		Total  int                       `json:"total"`
		Facets map[string]map[string]int `json:"facets"`
	}
	if !res.decode(&body) {
		cl.problemOf(res)
		return carList{}, res
	}
	list := carList{Cars: body.Items, Total: body.Total}
	prefix := self + "?"
	if query != "" {
		prefix += query + "&"
	}
	list.Pager = newPager(prefix, res, offset, max, body.Total)
	for _, f := range facetFields {
		counts := body.Facets[f]
		fc := facet{Field: f}
		for v, n := range counts {
			link := self
			if nq := joinQuery(toggle(pairs, f, v), "&"); nq != "" {
				link += "?" + nq
			}
			fc.Values = append(fc.Values, facetValue{Value: v, Count: n, Selected: selected(pairs, f, v), Link: link})
		}
		slices.SortFunc(fc.Values, func(a, b facetValue) int {
			if (a.Value == "null") != (b.Value == "null") {
				if a.Value == "null" {
					return 1
				}
				return -1
			}
			if a.Count != b.Count {
				return b.Count - a.Count
			}
			return strings.Compare(a.Value, b.Value)
		})
		list.Facets = append(list.Facets, fc)
	}
	return list, res
}

// filters reads the car filters of a console page: the query box
// (grammar=…) when sent, else the page's own query pairs.
func filters(r *http.Request) (string, []pair) {
	raw := r.URL.RawQuery
	if g, ok := r.URL.Query()["grammar"]; ok {
		raw = strings.TrimSpace(g[0])
	}
	pairs := splitQuery(raw)
	return joinQuery(pairs, "&"), pairs
}

type carsPage struct {
	List    carList
	Query   string
	Shapes  []shape
	Body    string
	Saved   *search
	IsAdmin bool
}

// handleCars is the faceted car search: the facets' counts as links that
// narrow the list, a box for the query grammar, the same query in every
// URL shape and as a search body, and the form that saves it (POST
// /searches).
func (c *Console) handleCars(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "cars"
	query, pairs := filters(r)
	status := http.StatusOK
	page := carsPage{Query: query, IsAdmin: cl.user.IsAdmin()}
	if r.Method == http.MethodPost {
		query = strings.TrimSpace(r.PostForm.Get("grammar"))
		pairs = splitQuery(query)
		query = joinQuery(pairs, "&")
		page.Query = query
		var s search
		res := cl.do("POST", "/searches", searchBody(pairs, strings.TrimSpace(r.PostForm.Get("name"))), nil)
		if res.decode(&s) {
			page.Saved = &s
			cl.notice = "The search is saved."
		} else {
			cl.problemOf(res)
			status = res.Status
		}
	}
	offset, max := paging(r)
	list, res := cl.readCars("/cars", query, pairs, Prefix+"cars", offset, max)
	if !res.ok() && status == http.StatusOK {
		status = res.Status
	}
	page.List = list
	page.Shapes = shapes(c.cfg.BaseURL, query, pairs)
	b, _ := json.Marshal(searchBody(pairs, ""))
	page.Body = string(b)
	c.render(w, r, cl, status, "cars", "Cars", page)
}

// handleCar is one car (GET /cars/{car_id}) and its garage.
func (c *Console) handleCar(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "cars"
	var v struct {
		Car    car
		Garage *garage
	}
	res := cl.do("GET", "/cars/"+seg(r.PathValue("car_id")), nil, nil)
	if !res.decode(&v.Car) {
		cl.problemOf(res)
		c.render(w, r, cl, res.Status, "error", "Car not shown", errorPage{Detail: "The car could not be read."})
		return
	}
	if v.Car.Garage != nil {
		var g garage
		if cl.do("GET", "/garages/"+seg(*v.Car.Garage), nil, nil).decode(&g) {
			v.Garage = &g
		}
	}
	c.render(w, r, cl, http.StatusOK, "car", v.Car.Make+" "+v.Car.Model, v)
}

// handleGarages lists the garages a page at a time (GET /garages).
func (c *Console) handleGarages(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "garages"
	status := http.StatusOK
	garages, pg := readList[garage](cl, r, "/garages", Prefix+"garages?", &status)
	c.render(w, r, cl, status, "garages", "Garages", struct {
		Garages []garage
		Pager   pager
	}{garages, pg})
}

// handleGarage is a garage and its cars (GET /garages/{garage_id}, GET
// /garages/{garage_id}/cars with the page's filters and facets).
func (c *Console) handleGarage(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "garages"
	id := r.PathValue("garage_id")
	var g garage
	res := cl.do("GET", "/garages/"+seg(id), nil, nil)
	if !res.decode(&g) {
		cl.problemOf(res)
		c.render(w, r, cl, res.Status, "error", "Garage not shown", errorPage{Detail: "The garage could not be read."})
		return
	}
	query, pairs := filters(r)
	offset, max := paging(r)
	list, lres := cl.readCars("/garages/"+seg(id)+"/cars", query, pairs, Prefix+"garages/"+seg(id), offset, max)
	status := http.StatusOK
	if !lres.ok() {
		status = lres.Status
	}
	c.render(w, r, cl, status, "garage", g.Name, struct {
		Garage garage
		List   carList
		Query  string
	}{g, list, query})
}

// handleSearch runs a saved search (GET /searches/{search_id}); an
// administrator may delete it (DELETE /searches/{search_id}).
func (c *Console) handleSearch(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "cars"
	id := r.PathValue("search_id")
	if r.Method == http.MethodPost && r.PostForm.Get("op") == "delete" {
		res := cl.do("DELETE", "/searches/"+seg(id), nil, nil)
		if res.ok() {
			c.render(w, r, cl, http.StatusOK, "message", "Search deleted",
				message{Text: "The search is deleted.", Link: Prefix + "searches", LinkLabel: "Back to the searches"})
			return
		}
		cl.problemOf(res)
		c.render(w, r, cl, res.Status, "error", "Search not deleted", errorPage{Detail: "The search could not be deleted."})
		return
	}
	query, pairs := filters(r)
	offset, max := paging(r)
	self := Prefix + "searches/" + seg(id)
	list, res := cl.readCars("/searches/"+seg(id), query, pairs, self, offset, max)
	if !res.ok() {
		c.render(w, r, cl, res.Status, "error", "Search not run", errorPage{Detail: "The search could not be run."})
		return
	}
	c.render(w, r, cl, http.StatusOK, "search", "Search "+id, struct {
		ID      string
		Self    string
		List    carList
		IsAdmin bool
	}{id, self, list, cl.user.IsAdmin()})
}

// handleSearches lists the saved searches (GET /searches; administrators
// only).
func (c *Console) handleSearches(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "searches"
	status := http.StatusOK
	searches, pg := readList[search](cl, r, "/searches", Prefix+"searches?", &status)
	c.render(w, r, cl, status, "searches", "Saved searches", struct {
		Searches []search
		Pager    pager
	}{searches, pg})
}
