package console

import (
	"cmp"
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
// query) with the filters of query, the facets and the page r asks for,
// and returns it with links for self (a console path) that keep the
// filters.
func (cl *call) readCars(r *http.Request, path, query string, pairs []pair, self string) (carList, result) {
	offset, max := paging(r)
	filter := "" // the filters and "&", or nothing
	if query != "" {
		filter = query + "&"
	}
	res := cl.do("GET", path+"?"+filter+"facets="+strings.Join(facetFields, ",")+"&offset="+strconv.Itoa(offset)+"&max="+strconv.Itoa(max), nil, nil)
	var body struct {
		items[car]
		Facets map[string]map[string]int `json:"facets"`
	}
	if !cl.accepted(res, &body) {
		return carList{}, res
	}
	list := carList{Cars: body.Items, Total: body.Total}
	list.Pager = newPager(self+"?"+filter, res, offset, max, body.Total)
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
		// Most counted first, "null" (in no garage) last.
		slices.SortFunc(fc.Values, func(a, b facetValue) int {
			return cmp.Or(boolCompare(a.Value == "null", b.Value == "null"), b.Count-a.Count, strings.Compare(a.Value, b.Value))
		})
		list.Facets = append(list.Facets, fc)
	}
	return list, res
}

// boolCompare orders false before true.
func boolCompare(a, b bool) int {
	if a == b {
		return 0
	}
	if a {
		return 1
	}
	return -1
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
	List   carList
	Query  string
	Shapes []shape
	Body   string // the query as a search body
	Saved  *search
}

// handleCars is the faceted car search: the facets' counts as links that
// narrow the list, a box for the query grammar, the same query in every
// URL shape and as a search body, and the form that saves it (POST
// /searches).
func (c *Console) handleCars(cl *call, w http.ResponseWriter, r *http.Request) {
	query, pairs := filters(r)
	page := carsPage{Query: query}
	if r.Method == http.MethodPost {
		query = strings.TrimSpace(r.PostForm.Get("grammar"))
		pairs = splitQuery(query)
		query = joinQuery(pairs, "&")
		page.Query = query
		var s search
		if cl.accepted(cl.do("POST", "/searches", searchBody(pairs, strings.TrimSpace(r.PostForm.Get("name"))), nil), &s) {
			page.Saved = &s
			cl.notice = "The search is saved."
		}
	}
	page.List, _ = cl.readCars(r, "/cars", query, pairs, Prefix+"cars")
	page.Shapes = shapes(c.cfg.BaseURL, query, pairs)
	b, _ := json.Marshal(searchBody(pairs, ""))
	page.Body = string(b)
	c.render(w, r, cl, cl.status, "cars", "Cars", page)
}

// handleCar is one car (GET /cars/{car_id}) and its garage.
func (c *Console) handleCar(cl *call, w http.ResponseWriter, r *http.Request) {
	var v struct {
		Car    car
		Garage *garage
	}
	if _, ok := c.read(w, r, cl, "/cars/"+seg(r.PathValue("car_id")), &v.Car, "car"); !ok {
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
	garages := readList[garage](cl, r, "/garages", Prefix+"garages?")
	c.render(w, r, cl, cl.status, "garages", "Garages", garages)
}

// handleGarage is a garage and its cars (GET /garages/{garage_id}, GET
// /garages/{garage_id}/cars with the page's filters and facets).
func (c *Console) handleGarage(cl *call, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("garage_id")
	var g garage
	if _, ok := c.read(w, r, cl, "/garages/"+seg(id), &g, "garage"); !ok {
		return
	}
	query, pairs := filters(r)
	list, _ := cl.readCars(r, "/garages/"+seg(id)+"/cars", query, pairs, Prefix+"garages/"+seg(id))
	c.render(w, r, cl, cl.status, "garage", g.Name, struct {
		Garage garage
		List   carList
		Query  string
	}{g, list, query})
}

// handleSearch runs a saved search (GET /searches/{search_id}); an
// administrator may delete it (DELETE /searches/{search_id}).
func (c *Console) handleSearch(cl *call, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("search_id")
	if r.Method == http.MethodPost && r.PostForm.Get("op") == "delete" {
		if res := cl.do("DELETE", "/searches/"+seg(id), nil, nil); res.ok() {
			c.deleted(w, r, cl, "search", "searches")
		} else {
			c.failPage(w, r, cl, res, "Search not deleted", "The search could not be deleted.")
		}
		return
	}
	query, pairs := filters(r)
	self := Prefix + "searches/" + seg(id)
	list, res := cl.readCars(r, "/searches/"+seg(id), query, pairs, self)
	if !res.ok() {
		c.failPage(w, r, cl, res, "Search not run", "The search could not be run.")
		return
	}
	c.render(w, r, cl, http.StatusOK, "search", "Search "+id, struct {
		ID   string
		Self string
		List carList
	}{id, self, list})
}

// handleSearches lists the saved searches (GET /searches; administrators
// only).
func (c *Console) handleSearches(cl *call, w http.ResponseWriter, r *http.Request) {
	searches := readList[search](cl, r, "/searches", Prefix+"searches?")
	c.render(w, r, cl, cl.status, "searches", "Saved searches", searches)
}
