package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/yard-api/yard"
)

// Searches (docs/cars.md, "Search bodies"): stored car queries, their results
// and the named searches of /search/{name}, answered by writeCars (cars.go).

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
	return searchView{ID: se.ID, Name: nonZero(se.Name), Class: yard.SearchClassCar, Query: se.Query.String(), CreatedBy: se.CreatedBy,
		CreatedAt: Timestamp(se.CreatedAt), Results: s.url("/searches/" + se.ID)}
}

// handleCreateSearch answers POST /searches in either body shape.
func (s *Server) handleCreateSearch(w http.ResponseWriter, r *http.Request) {
	// The search body has a parser of its own; decode checks it first.
	body, err := decode[jsontext.Value](r)
	var req yard.SearchRequest
	if err == nil {
		req, err = yard.ParseSearchBody(body)
	}
	var se *yard.Search
	if err == nil {
		se = &yard.Search{Name: req.Name, Query: req.Query, CreatedBy: yard.PrincipalFromContext(r.Context()).UserID}
		err = s.db.cars.CreateSearch(r.Context(), se)
	}
	if err != nil {
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
	s.writeNoContent(w, r, s.db.cars.DeleteSearch(r.Context(), r.PathValue("search_id")))
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
