package httpapi_test

import (
	"strings"
	"testing"

	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestJSONNotHTMLEscaped: bodies write `&`, `<` and `>` as themselves,
// not as \u0026, \u003c, \u003e (JSON is not HTML).
func TestJSONNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := carsEnv(t, db)
		r := env.Do(apitest.Request{Method: "POST", Path: "/searches", User: "alice", Password: pw,
			Body: `{"$class":"car","$q":{"$eq":{"color":"red","make":"ford"}},"name":"red-fords"}`})
		if r.StatusCode != 201 || !strings.Contains(string(r.Body), `"query":"color=red&make=ford"`) {
			t.Fatalf("saved search: %d %s, want the query with a plain &", r.StatusCode, r.Body)
		}
		for _, path := range []string{"/searches/" + r.Map(t)["id"].(string), "/searches"} {
			r := env.Do(apitest.Request{Path: path, User: "root", Password: pw})
			if r.StatusCode != 200 || strings.Contains(string(r.Body), `\u00`) {
				t.Fatalf("GET %s: %d %s, want no \\u00XX escapes", path, r.StatusCode, r.Body)
			}
		}
		r = env.Do(apitest.Request{Method: "PUT", Path: "/cars/amp", User: "root", Password: pw,
			Body: map[string]any{"color": "red", "type": "van", "doors": 3, "make": "A&B", "model": "<Mk II>", "year": 2001}})
		if r.StatusCode != 201 {
			t.Fatalf("put: %d %s", r.StatusCode, r.Body)
		}
		r = env.Do(apitest.Request{Path: "/cars/amp"})
		if r.StatusCode != 200 || !strings.Contains(string(r.Body), `"make":"A&B","model":"<Mk II>"`) {
			t.Fatalf("car: %d %s, want & < > as is", r.StatusCode, r.Body)
		}
		r = env.Do(apitest.Request{Method: "POST", Path: "/searches", User: "alice", Password: pw, Body: `{"$q":{"$eq":{"<b>":"x"}}}`})
		if r.StatusCode != 400 || !strings.Contains(string(r.Body), `"field":"$q.$eq.<b>"`) {
			t.Fatalf("problem: %d %s, want <b> as is", r.StatusCode, r.Body)
		}
	})
}

// TestLinkKeepsSeparators: a page's Link header keeps the query's pairs
// and separators as sent (docs/cars.md, Paths), escaping only what a URI
// may not hold; offset and max are added with the query's first separator.
func TestLinkKeepsSeparators(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := carsEnv(t, db)
		for _, tt := range []struct{ path, want string }{
			{"/cars?color=red;max=2", `/cars?color=red;offset=2;max=2>; rel="next"`},
			{"/cars?color=red&max=2", `/cars?color=red&offset=2&max=2>; rel="next"`},
			{"/cars?color=red;offset=1&make=ford;max=1", `/cars?color=red&make=ford;offset=0;max=1>; rel="prev"`},
			{"/cars?max=1;offset=0;;color=red,blue", `/cars?color=red,blue;offset=1;max=1>; rel="next"`},
			{"/cars?max=3", `/cars?offset=3&max=3>; rel="next"`},
			// What a URI may not hold is escaped, so '>' cannot end the link.
			{`/cars?color=a>b"c|d&max=1`, `/cars?color=a%3Eb%22c%7Cd&offset=0&max=1>; rel="first"`},
		} {
			r := env.Do(apitest.Request{Path: tt.path})
			if link := r.Header.Get("Link"); r.StatusCode != 200 || !strings.Contains(link, tt.want) {
				t.Errorf("GET %s: %d, Link %q, want it to hold %q", tt.path, r.StatusCode, link, tt.want)
			}
		}
	})
}
