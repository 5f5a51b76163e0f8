package httpapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestCarWritesAreConditional: a write of a car or a garage with a
// precondition that does not hold is 412 and changes nothing (RFC 9110
// §13.1, §13.2.2); one that holds is applied, and its answer carries the
// validators a GET gives.
func TestCarWritesAreConditional(t *testing.T) {
	t.Parallel()
	env := carsEnv(t, storetest.Open(t, store.SQLite))
	admin := func(method, path string, h map[string]string, body any) apitest.Request {
		return apitest.Request{Method: method, Path: path, Headers: h, Body: body, User: "root", Password: pw}
	}
	get := func(path string) *apitest.Response {
		r := env.Do(apitest.Request{Path: path})
		if r.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, r.StatusCode, r.Body)
		}
		return r
	}
	car := get("/cars/c01")
	etag, modified := car.Header.Get("ETag"), car.Header.Get("Last-Modified")
	full := `{"color":"Red","type":"sedan","doors":4,"make":"Ford","model":"Focus","year":2011,"garage":"g-ca1"}`
	run(t, env, []scenario{
		{"PATCH, If-Match of another tag", admin("PATCH", "/cars/c01", map[string]string{"If-Match": `"nope"`}, `{"year":2009}`), 412, nil, []string{"/problems/precondition-failed", "car changed"}},
		{"PATCH, a weak tag never matches strongly", admin("PATCH", "/cars/c01", map[string]string{"If-Match": "W/" + etag}, `{"year":2009}`), 412, nil, nil},
		{"PUT, If-Unmodified-Since before the change", admin("PUT", "/cars/c01", map[string]string{"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}, full), 412, nil, nil},
		{"PUT, If-None-Match * on a car that exists", admin("PUT", "/cars/c01", map[string]string{"If-None-Match": "*"}, full), 412, nil, nil},
		{"DELETE, If-Match of another tag", admin("DELETE", "/cars/c01", map[string]string{"If-Match": `"nope"`}, nil), 412, nil, nil},
		{"PUT to a new id, If-Match", admin("PUT", "/cars/c99", map[string]string{"If-Match": "*"}, full), 412, nil, []string{"there is none"}},
		{"PATCH of no car, If-Match: 404 as without it", admin("PATCH", "/cars/c98", map[string]string{"If-Match": `"nope"`}, `{"year":2009}`), 404, nil, nil},
		{"an If-Unmodified-Since that is no date is ignored", admin("PATCH", "/cars/c02", map[string]string{"If-Unmodified-Since": "yesterday"}, `{"year":2018}`), 200, nil, nil},
	})
	if again := get("/cars/c01"); again.Header.Get("ETag") != etag || !strings.Contains(string(again.Body), `"year":2010`) {
		t.Fatalf("refused writes changed the car: %s", again.Body)
	}
	run(t, env, []scenario{
		{"PATCH, If-Match of the current tag", admin("PATCH", "/cars/c01", map[string]string{"If-Match": etag}, `{"year":2009}`), 200,
			map[string]string{"ETag": `^"[0-9a-f]{24}"$`, "Last-Modified": ""}, []string{`"year":2009`}},
		{"PUT, If-Unmodified-Since of the last GET", admin("PUT", "/cars/c01", map[string]string{"If-Unmodified-Since": modified, "If-Match": "*"}, full), 200, map[string]string{"ETag": ""}, []string{`"year":2011`}},
		{"PUT, If-None-Match * creates", admin("PUT", "/cars/c99", map[string]string{"If-None-Match": "*"}, full), 201, map[string]string{"ETag": "", "Location": "/cars/c99$"}, nil},
	})
	now := get("/cars/c01")
	if r := env.Do(admin("PATCH", "/cars/c01", map[string]string{"If-Match": etag}, `{"year":2012}`)); r.StatusCode != 412 {
		t.Fatalf("the tag before the last change: %d, want 412", r.StatusCode)
	}
	if r := env.Do(admin("DELETE", "/cars/c01", map[string]string{"If-Match": now.Header.Get("ETag")}, nil)); r.StatusCode != 204 {
		t.Fatalf("DELETE with the current tag: %d %s", r.StatusCode, r.Body)
	}

	// Garages: an ETag and no Last-Modified (their carCount moves with the
	// cars, which do not touch the garage's row).
	g := get("/garages/g-ca1")
	if g.Header.Get("Last-Modified") != "" || g.Header.Get("ETag") == "" {
		t.Fatalf("garage validators: ETag %q Last-Modified %q", g.Header.Get("ETag"), g.Header.Get("Last-Modified"))
	}
	gtag := g.Header.Get("ETag")
	run(t, env, []scenario{
		{"garage PATCH, If-Match of another tag", admin("PATCH", "/garages/g-ca1", map[string]string{"If-Match": `"nope"`}, `{"state":"ZY"}`), 412, nil, []string{"garage changed"}},
		{"garage DELETE, If-Match of another tag", admin("DELETE", "/garages/g-empty", map[string]string{"If-Match": `"nope"`}, nil), 412, nil, nil},
		{"garage PUT, If-None-Match *", admin("PUT", "/garages/g-ca1", map[string]string{"If-None-Match": "*"}, `{"name":"x","state":"CA"}`), 412, nil, nil},
		{"garage PUT, a carCount not its own", admin("PUT", "/garages/g-ca1", nil, `{"name":"Main Street","state":"CA","carCount":99}`), 409, nil, []string{"carCount is read-only", "(2 now)"}},
		{"garage PATCH, a carCount not its own", admin("PATCH", "/garages/g-ca1", nil, `{"carCount":0}`), 409, nil, nil},
		{"garage POST, a carCount", admin("POST", "/garages", nil, `{"name":"New","state":"WA","carCount":3}`), 409, nil, nil},
		{"garage PUT, its carCount sent back", admin("PUT", "/garages/g-ca1", map[string]string{"If-Match": gtag}, `{"name":"Main Street","state":"CA","carCount":2}`), 200,
			map[string]string{"ETag": "", "Last-Modified": "-"}, []string{`"carCount":2`}},
		{"a car out of it", admin("DELETE", "/cars/c99", nil, nil), 204, nil, nil},
		{"garage of one car: 409 in the singular", admin("DELETE", "/garages/g-ca1", nil, nil), 409, nil, []string{"holds 1 car;"}},
	})
}

// TestCarListEdges: the answers at the edges of paging and of the other
// lists' parameters.
func TestCarListEdges(t *testing.T) {
	t.Parallel()
	env := carsEnv(t, storetest.Open(t, store.SQLite))
	run(t, env, []scenario{
		{"max=0: no neighbours", apitest.Request{Path: "/cars?max=0"}, 200, map[string]string{"Link": `^<[^>]*offset=0&max=0>; rel="first", <[^>]*offset=0&max=0>; rel="last"$`}, []string{`"total":8`}},
		{"past the end: prev is the last page", apitest.Request{Path: "/cars?offset=100&max=5"}, 200, map[string]string{"Link": `offset=5&max=5>; rel="prev"`}, nil},
		{"path paging and query paging, each by name", apitest.Request{Path: "/search/color=red;max=1?offset=1"}, 200, nil, []string{`"offset":1`, `"max":1`}},
		{"the other way round", apitest.Request{Path: "/search/color=red;offset=1?max=2"}, 200, nil, []string{`"offset":1`, `"max":2`}},
		{"an encoded = is data", apitest.Request{Path: "/search/color%3Dred"}, 404, nil, []string{"percent-encoded"}},
		{"garages take only paging", apitest.Request{Path: "/garages?facets=make"}, 400, nil, []string{`"field":"facets","message":"unknown parameter"`}},
		{"public, wrong Basic: 401, not ignored", apitest.Request{Path: "/cars?color=red", User: "root", Password: "wrong"}, 401, map[string]string{"WWW-Authenticate": "Basic"}, nil},
		{"public, a malformed bearer token: 401", apitest.Request{Path: "/cars/c01", Headers: map[string]string{"Authorization": "Bearer abc"}}, 401, nil, nil},
		{"public, right Basic", apitest.Request{Path: "/garages/g-ny", User: "alice", Password: pw}, 200, nil, nil},
		{"public, a session cookie is not looked at", apitest.Request{Path: "/search/color=red", Headers: map[string]string{"Cookie": "sessionToken=stale"}}, 200, nil, nil},
		{"a body that ends early says where", apitest.Request{Method: "POST", Path: "/cars", Body: "{\"color\":\n\"red\",", User: "root", Password: pw}, 400, nil, []string{"line 2, column 7 (offset 16)"}},
	})
}

// TestDogWritesAreConditional: the preconditions of a dog's writes, v1 and
// v2, schedule changes included, and the validators of a PATCH's 204.
func TestDogWritesAreConditional(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, storetest.Open(t, store.SQLite))
	env.CreateUser("alice", pw)
	as := func(method, path string, h map[string]string, body any) apitest.Request {
		return apitest.Request{Method: method, Path: path, Headers: h, Body: body, User: "alice", Password: pw}
	}
	r := env.Do(as("POST", "/v1/dogs", nil, map[string]any{"name": "Rex", "email": "rex@example.org"}))
	if r.StatusCode != 201 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	dog := strings.TrimPrefix(r.Header.Get("Location"), env.URL)
	id := strings.TrimSuffix(strings.TrimPrefix(dog, "/v1/dogs/"), "/")
	tag := env.Do(as("GET", dog, nil, nil)).Header.Get("ETag")
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	future := time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
	run(t, env, []scenario{
		{"PUT, If-None-Match * on a dog that exists", as("PUT", dog, map[string]string{"If-None-Match": "*"}, map[string]any{"name": "X", "email": "x@example.org"}), 412, nil, nil},
		{"v2 PUT, If-None-Match *", as("PUT", "/v2/dogs/"+id, map[string]string{"If-None-Match": "*"}, map[string]any{"name": "X", "email": "x@example.org"}), 412, nil, nil},
		{"PATCH, If-None-Match of its tag (v1 refusals link the successor too)", as("PATCH", dog, map[string]string{"If-None-Match": tag}, map[string]any{"name": "X"}), 412,
			map[string]string{"Link": `/v2/dogs/` + id + `>; rel="successor-version"`}, nil},
		{"another's dog: 404 with the link", apitest.Request{Path: "/v1/dogs/nope/", User: "alice", Password: pw}, 404, map[string]string{"Link": `rel="successor-version"`}, nil},
		{"DELETE, If-None-Match *", as("DELETE", dog, map[string]string{"If-None-Match": "*"}, nil), 412, nil, nil},
		{"PUT to a new id with If-Match creates nothing", as("PUT", "/v1/dogs/im-absent-1/", map[string]string{"If-Match": `"abc"`}, map[string]any{"name": "A", "email": "a@example.org"}), 412, nil, nil},
		{"a new id is still free", as("GET", "/v1/dogs/im-absent-1/", nil, nil), 404, nil, nil},
		{"schedule PATCH, If-Match of another tag", as("PATCH", dog, map[string]string{"If-Match": `"bogus"`, "If-Unmodified-Since": future},
			map[string]any{"name": "Renamed", "barks": map[string]any{"next": soon, "frequency": 45}}), 412, nil, nil},
		{"nothing of it was written", as("GET", dog, nil, nil), 200, map[string]string{"ETag": "^" + regexp.QuoteMeta(tag) + "$"}, []string{`"name":"Rex"`}},
		{"PATCH, If-Match of its tag: 204 with the new validators", as("PATCH", dog, map[string]string{"If-Match": tag}, map[string]any{"name": "Spot"}), 204,
			map[string]string{"ETag": `^"[0-9a-f]{24}"$`, "Last-Modified": ""}, nil},
		{"an If-Unmodified-Since that is no date is ignored", as("PATCH", dog, map[string]string{"If-Unmodified-Since": "garbage"}, map[string]any{"name": "Spot"}), 204, nil, nil},
		{"a next with an offset is stored in UTC: 205", as("PATCH", dog, map[string]string{"If-Unmodified-Since": future},
			map[string]any{"barks": map[string]any{"next": time.Now().Add(time.Hour).In(time.FixedZone("", 2*3600)).Format(time.RFC3339), "frequency": 45}}), 205, nil, nil},
		{"a lower-case t and z are RFC 3339 too", as("PATCH", dog, map[string]string{"If-Unmodified-Since": time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)},
			map[string]any{"barks": map[string]any{"next": strings.ToLower(soon), "frequency": 50}}), 205, nil, nil},
	})
	// DELETE /bark-schedule against the validators of its GET.
	stag := env.Do(as("GET", dog+"bark-schedule", nil, nil)).Header.Get("ETag")
	run(t, env, []scenario{
		{"stop the schedule, If-Match of another tag", as("DELETE", dog+"bark-schedule", map[string]string{"If-Match": `"bogus"`}, nil), 412, nil, nil},
		{"stop the schedule, If-Match of its tag", as("DELETE", dog+"bark-schedule", map[string]string{"If-Match": stag}, nil), 204, nil, nil},
	})
	// The 204's tag is the one a GET gives.
	p := env.Do(as("PATCH", dog, nil, map[string]any{"email": "spot@example.org"}))
	if g := env.Do(as("GET", dog, nil, nil)); p.Header.Get("ETag") != g.Header.Get("ETag") || p.Header.Get("Last-Modified") != g.Header.Get("Last-Modified") {
		t.Fatalf("PATCH's validators %q %q, GET's %q %q", p.Header.Get("ETag"), p.Header.Get("Last-Modified"), g.Header.Get("ETag"), g.Header.Get("Last-Modified"))
	}
}
