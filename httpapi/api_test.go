package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// *store.DB is the store cmd/yard gives the API (Deps.DB): it has every
// method the groups of endpoints ask for. httpapi itself does not import
// the store.
var _ httpapi.Store = (*store.DB)(nil)

const pw = "correct horse battery"

// scenario is one request and what the answer must be.
type scenario struct {
	name       string
	req        apitest.Request
	wantStatus int
	wantHeader map[string]string // value "" means present, "-" absent; else a regexp
	wantBody   []string          // substrings
}

func run(t *testing.T, env *apitest.Env, tests []scenario) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := env.Do(tc.req)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status: got %d, want %d; body %s", resp.StatusCode, tc.wantStatus, resp.Body)
			}
			for k, want := range tc.wantHeader {
				got := resp.Header.Get(k)
				switch {
				case want == "" && got == "":
					t.Errorf("header %s: missing", k)
				case want == "-" && got != "":
					t.Errorf("header %s: got %q, want none", k, got)
				case want != "" && want != "-" && !regexp.MustCompile(want).MatchString(got):
					t.Errorf("header %s: got %q, want match of %q", k, got, want)
				}
			}
			for _, sub := range tc.wantBody {
				if !strings.Contains(string(resp.Body), sub) {
					t.Errorf("body: got %s, want it to contain %q", resp.Body, sub)
				}
			}
			if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("error without a problem body: Content-Type %q", resp.Header.Get("Content-Type"))
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}
}

func TestDogsAndPeople(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := apitest.Start(t, db)
		admin := env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
		alice := env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)

		// Alice creates a dog.
		resp := env.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw,
			Body: map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": "https://example.org/rex.git"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create dog: got %d %s", resp.StatusCode, resp.Body)
		}
		dog := resp.Map(t)
		id := dog["id"].(string)
		if loc := resp.Header.Get("Location"); loc != env.URL+"/v1/dogs/"+id+"/" {
			t.Fatalf("Location: got %q, want absolute dog URI", loc)
		}
		if dog["owner"] != alice.ID || dog["barkEffect"] != "record" || dog["barkCount"] != 0.0 {
			t.Fatalf("dog: got %v", dog)
		}
		dogURI := "/v1/dogs/" + id + "/"
		createdValidators(t, env, resp, dogURI)
		big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`

		run(t, env, []scenario{
			{"read own dog", apitest.Request{Path: dogURI, User: "alice", Password: pw}, 200,
				map[string]string{"ETag": `^".+"$`, "Last-Modified": "GMT$", "Link": `rel="successor-version"`}, []string{`"name":"Rex"`}},
			{"admin reads any dog", apitest.Request{Path: dogURI, User: "root", Password: pw}, 200, nil, []string{id}},
			{"slash-less form redirects with 308", apitest.Request{Path: "/v1/dogs/" + id + "?x=1", User: "alice", Password: pw}, 308,
				map[string]string{"Location": "^" + regexp.QuoteMeta(env.URL+dogURI+"?x=1") + "$"}, nil},
			{"slash-less PUT redirects too", apitest.Request{Method: "PUT", Path: "/v1/dogs/" + id, Body: "{}"}, 308, nil, nil},
			{"no credentials", apitest.Request{Path: dogURI}, 401, map[string]string{"WWW-Authenticate": `^Basic realm="yard"`}, []string{"/problems/unauthorized"}},
			{"wrong password", apitest.Request{Path: dogURI, User: "alice", Password: "nope"}, 401, nil, []string{"unauthorized"}},
			{"unknown user", apitest.Request{Path: dogURI, User: "mallory", Password: pw}, 401, nil, nil},
			{"unsupported scheme", apitest.Request{Path: dogURI, Headers: map[string]string{"Authorization": "Negotiate abc"}}, 401, nil, []string{"Negotiate"}},
			{"another user reads", apitest.Request{Path: dogURI, User: "bob", Password: pw}, 403, nil, []string{"/problems/forbidden"}},
			{"another user writes", apitest.Request{Method: "PATCH", Path: dogURI, User: "bob", Password: pw, Body: map[string]any{"name": "Mine"}}, 403, nil, nil},
			{"another user deletes", apitest.Request{Method: "DELETE", Path: dogURI, User: "bob", Password: pw}, 403, nil, nil},
			{"missing dog", apitest.Request{Path: "/v1/dogs/nope/", User: "alice", Password: pw}, 404, nil, []string{"/problems/not-found"}},
			{"wrong method", apitest.Request{Method: "POST", Path: dogURI, User: "alice", Password: pw, Body: "{}"}, 405,
				map[string]string{"Allow": "GET.*PUT|PUT.*GET"}, []string{"method-not-allowed"}},
			{"options", apitest.Request{Method: "OPTIONS", Path: "/v1/dogs"}, 204, map[string]string{"Allow": "POST"}, nil},
			{"unknown path", apitest.Request{Path: "/nowhere/at/all/here"}, 404, nil, []string{"not-found"}},
			{"body over 1 MiB", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: big}, 413, nil, []string{"too-large"}},
			{"malformed JSON", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: `{"name": "Rex",`}, 400, nil, []string{"malformed"}},
			{"syntax error says where", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: "{\n  \"name\" \"Rex\"}"}, 400, nil, []string{"line 2"}},
			{"unknown field", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "r@example.org", "colour": "red"}}, 400, nil, []string{`"field":"colour"`}},
			{"wrong type", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: `{"name": 5}`}, 400, nil, []string{`"field":"name"`}},
			{"bad email and effect", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "not an address", "barkEffect": "howl"}}, 400, nil, []string{`"field":"email"`, `"field":"barkEffect"`}},
			{"an empty effect is no effect", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "r@example.org", "barkEffect": ""}}, 400, nil, []string{`"field":"barkEffect"`}},
			{"nor in a PUT", apitest.Request{Method: "PUT", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "r@example.org", "barkEffect": ""}}, 400, nil, []string{`"field":"barkEffect"`}},
			{"hostile codeUrl", apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"codeUrl": "--upload-pack=touch /tmp/pwned"}}, 400, nil, []string{`"field":"codeUrl"`}},
			{"ext:: transport", apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"codeUrl": "ext::sh -c touch% /tmp/pwned"}}, 400, nil, []string{`codeUrl`}},
			{"non-JSON body", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: "name=Rex", Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, nil, nil},
			{"a JSON Patch is not a merge patch", apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: `[{"op":"replace","path":"/name","value":"x"}]`, Headers: map[string]string{"Content-Type": "application/json-patch+json"}}, 415,
				map[string]string{"Accept-Patch": "^application/merge-patch\\+json, application/json$"}, []string{"merge patch"}},
			{"nor another +json", apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"name": "Other"}, Headers: map[string]string{"Content-Type": "application/foo+json"}}, 415, nil, nil},
			{"a person's PATCH too", apitest.Request{Method: "PATCH", Path: "/v1/people/" + alice.ID, User: "alice", Password: pw, Body: map[string]any{"name": "x"}, Headers: map[string]string{"Content-Type": "application/json-patch+json"}}, 415, map[string]string{"Accept-Patch": "merge-patch"}, nil},
			{"giving a dog away needs admin", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "r@example.org", "owner": admin.ID}}, 403, nil, nil},
			{"read-only field on create", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "r@example.org", "barkCount": 5}}, 400, nil, []string{"barkCount"}},
			{"unknown owner", apitest.Request{Method: "POST", Path: "/v1/dogs", User: "root", Password: pw, Body: map[string]any{"name": "Rex", "email": "r@example.org", "owner": "ghost"}}, 400, nil, []string{`"field":"owner"`}},
			{"person reads self", apitest.Request{Path: "/v1/people/" + alice.ID, User: "alice", Password: pw}, 200, nil, []string{`"name":"alice"`}},
			{"person reads another", apitest.Request{Path: "/v1/people/" + admin.ID, User: "alice", Password: pw}, 403, nil, nil},
			{"people list is admin only", apitest.Request{Path: "/v1/people", User: "alice", Password: pw}, 403, nil, nil},
			{"bad paging", apitest.Request{Path: "/v1/dogs?max=-1", User: "alice", Password: pw}, 400, nil, []string{`"field":"max"`}},
			{"non-numeric offset", apitest.Request{Path: "/v1/dogs?offset=x", User: "alice", Password: pw}, 400, nil, []string{`"field":"offset"`}},
			{"repeated offset", apitest.Request{Path: "/v1/dogs?offset=1&offset=2", User: "alice", Password: pw}, 400, nil, []string{`"field":"offset"`, "more than once"}},
			{"signed max", apitest.Request{Path: "/v1/dogs?max=%2B5", User: "alice", Password: pw}, 400, nil, []string{`"field":"max"`}},
			{"eleven-digit max is cut", apitest.Request{Path: "/v1/dogs?max=12345678901", User: "alice", Password: pw}, 200, nil, []string{`"max":100`}},
			{"twenty-digit offset is past the end", apitest.Request{Path: "/v1/dogs?offset=99999999999999999999", User: "alice", Password: pw}, 200, nil, []string{`"items":[]`, `"offset":2147483647`}},
			{"empty max", apitest.Request{Path: "/v1/dogs?max=", User: "alice", Password: pw}, 400, nil, []string{`"field":"max"`}},
			{"large max is cut", apitest.Request{Path: "/v1/dogs?max=1000", User: "alice", Password: pw}, 200, nil, []string{`"max":100`}},
			{"request id echoed", apitest.Request{Path: "/healthz", Headers: map[string]string{"X-Request-Id": "abc-123"}}, 200, map[string]string{"X-Request-Id": "^abc-123$"}, nil},
			{"index", apitest.Request{Path: "/"}, 200, nil, []string{"/v1/dogs", "openapi"}},
			{"problem page", apitest.Request{Path: "/problems/validation"}, 200, nil, []string{"Invalid request"}},
			{"docs", apitest.Request{Path: "/docs"}, 200, nil, []string{"docs.js"}},
			{"docs asset", apitest.Request{Path: "/docs/docs.js"}, 200, nil, []string{"openapi.json"}},
			{"readyz", apitest.Request{Path: "/readyz"}, 200, nil, []string{db.Engine()}},
		})

		// Nothing of the refused writes changed the dog.
		resp = env.Do(apitest.Request{Path: dogURI, User: "alice", Password: pw})
		after := resp.Map(t)
		if after["codeUrl"] != "https://example.org/rex.git" || after["name"] != "Rex" {
			t.Fatalf("refused writes changed the dog: %v", after)
		}
		if _, n, _ := db.FindDogs(t.Context(), yard.DogFilter{}); n != 1 {
			t.Fatalf("refused creates stored dogs: %d dogs", n)
		}

		// Conditional GET.
		etag := resp.Header.Get("ETag")
		resp = env.Do(apitest.Request{Path: dogURI, User: "alice", Password: pw, Headers: map[string]string{"If-None-Match": etag}})
		if resp.StatusCode != 304 || len(resp.Body) != 0 {
			t.Fatalf("If-None-Match: got %d %q, want 304", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "HEAD", Path: dogURI, User: "alice", Password: pw})
		if resp.StatusCode != 200 || len(resp.Body) != 0 || resp.Header.Get("ETag") != etag {
			t.Fatalf("HEAD: got %d, body %q, etag %q", resp.StatusCode, resp.Body, resp.Header.Get("ETag"))
		}

		// PATCH and If-Match.
		resp = env.Do(apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"name": "Rexy", "barkEffect": "email"},
			Headers: map[string]string{"Content-Type": "application/merge-patch+json"}})
		if resp.StatusCode != 204 {
			t.Fatalf("PATCH: got %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"name": "Stale"},
			Headers: map[string]string{"If-Match": etag}})
		if resp.StatusCode != 412 {
			t.Fatalf("stale If-Match: got %d, want 412", resp.StatusCode)
		}

		// PUT replaces (200) and creates at a client-chosen id (201).
		resp = env.Do(apitest.Request{Method: "PUT", Path: dogURI, User: "alice", Password: pw,
			Body: map[string]any{"id": id, "name": "Rex II", "email": "rex2@example.org", "barkEffect": "email-count", "barkCount": 0}})
		if resp.StatusCode != 200 || resp.Map(t)["codeUrl"] != "" {
			t.Fatalf("PUT replace: got %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "PUT", Path: "/v1/dogs/my-dog/", User: "alice", Password: pw,
			Body: map[string]any{"name": "Mine", "email": "mine@example.org"}})
		if resp.StatusCode != 201 || resp.Header.Get("Location") != env.URL+"/v1/dogs/my-dog/" {
			t.Fatalf("PUT create: got %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "PUT", Path: "/v1/dogs/search/", User: "alice", Password: pw,
			Body: map[string]any{"name": "Mine", "email": "mine@example.org"}})
		if resp.StatusCode != 400 {
			t.Fatalf("PUT at a reserved id: got %d, want 400", resp.StatusCode)
		}

		// Paging: 25 more dogs, pages of 10.
		for i := range 25 {
			env.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw,
				Body: map[string]any{"name": fmt.Sprintf("Pup %d", i), "email": "pup@example.org"}})
		}
		resp = env.Do(apitest.Request{Path: "/v1/dogs?offset=10&max=10", User: "alice", Password: pw})
		page := resp.Map(t)
		if page["total"] != 27.0 || len(page["items"].([]any)) != 10 || page["offset"] != 10.0 || page["max"] != 10.0 {
			t.Fatalf("page: got total %v, %d items", page["total"], len(page["items"].([]any)))
		}
		link := resp.Header.Get("Link")
		for _, want := range []string{`offset=0&max=10>; rel="first"`, `offset=0&max=10>; rel="prev"`, `offset=20&max=10>; rel="next"`, `offset=20&max=10>; rel="last"`} {
			if !strings.Contains(link, want) {
				t.Errorf("Link: got %s, want %s", link, want)
			}
		}
		resp = env.Do(apitest.Request{Path: "/v1/dogs?max=1000", User: "alice", Password: pw})
		if resp.Map(t)["max"] != 100.0 {
			t.Fatalf("max=1000 not cut to 100: %s", resp.Body)
		}
		resp = env.Do(apitest.Request{Path: "/v1/dogs", User: "bob", Password: pw})
		if resp.Map(t)["total"] != 0.0 {
			t.Fatalf("bob sees alice's dogs: %s", resp.Body)
		}

		// DELETE.
		resp = env.Do(apitest.Request{Method: "DELETE", Path: "/v1/dogs/my-dog/", User: "alice", Password: pw})
		if resp.StatusCode != 204 {
			t.Fatalf("DELETE: got %d", resp.StatusCode)
		}

		// No credential in any log line.
		if logs := env.Logs(); strings.Contains(logs, pw) || strings.Contains(logs, "Basic ") {
			t.Fatalf("credentials in logs: %s", logs)
		}
	})
}

func TestPeopleAdmin(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env := apitest.Start(t, db)
	env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
	resp := env.Do(apitest.Request{Method: "POST", Path: "/v1/people", User: "root", Password: pw,
		Body: map[string]any{"name": "carol", "email": "carol@example.org", "phone": "+14155550123"}})
	if resp.StatusCode != 201 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create person: got %d %s", resp.StatusCode, resp.Body)
	}
	carol := resp.Map(t)
	generated, _ := carol["password"].(string)
	if len(generated) < 16 {
		t.Fatalf("no generated password in %v", carol)
	}
	id := carol["id"].(string)
	// Carol signs in with it, changes her password; the old one stops working
	// at once even though it was cached.
	if r := env.Do(apitest.Request{Path: "/v1/people/" + id, User: "carol", Password: generated}); r.StatusCode != 200 {
		t.Fatalf("sign in with generated password: %d", r.StatusCode)
	}
	r := env.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + id, User: "carol", Password: generated, Body: map[string]any{"password": "new password 123"}})
	if r.StatusCode != 200 {
		t.Fatalf("change password: %d %s", r.StatusCode, r.Body)
	}
	if r := env.Do(apitest.Request{Path: "/v1/people/" + id, User: "carol", Password: generated}); r.StatusCode != 401 {
		t.Fatalf("old password after change: got %d, want 401", r.StatusCode)
	}
	if r := env.Do(apitest.Request{Path: "/v1/people/" + id, User: "carol", Password: "new password 123"}); r.StatusCode != 200 {
		t.Fatalf("new password: got %d", r.StatusCode)
	}
	// A person cannot make themself admin.
	if r := env.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + id, User: "carol", Password: "new password 123", Body: map[string]any{"roles": []string{"admin"}}}); r.StatusCode != 403 {
		t.Fatalf("self-promotion: got %d, want 403", r.StatusCode)
	}
	// A PATCH holds If-Match to the person's ETag (RFC 9110 §13.1.1).
	if r := env.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + id, User: "root", Password: pw, Body: map[string]any{"phone": "+14155550199"},
		Headers: map[string]string{"If-Match": `"nope"`}}); r.StatusCode != 412 {
		t.Fatalf("a PATCH with a stale If-Match: got %d, want 412", r.StatusCode)
	}
	etag := env.Do(apitest.Request{Path: "/v1/people/" + id, User: "root", Password: pw}).Header.Get("ETag")
	if r := env.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + id, User: "root", Password: pw, Body: map[string]any{"phone": "+14155550199"},
		Headers: map[string]string{"If-Match": etag}}); r.StatusCode != 200 {
		t.Fatalf("a PATCH with the current If-Match: got %d, want 200", r.StatusCode)
	}
	// A disabled person is refused.
	if r := env.Do(apitest.Request{Method: "PATCH", Path: "/v1/people/" + id, User: "root", Password: pw, Body: map[string]any{"disabled": true}}); r.StatusCode != 200 {
		t.Fatalf("disable: got %d %s", r.StatusCode, r.Body)
	}
	if r := env.Do(apitest.Request{Path: "/v1/people/" + id, User: "carol", Password: "new password 123"}); r.StatusCode != 401 {
		t.Fatalf("disabled person: got %d, want 401", r.StatusCode)
	}
	if r := env.Do(apitest.Request{Method: "POST", Path: "/v1/people", User: "root", Password: pw, Body: map[string]any{"name": "carol"}}); r.StatusCode != 409 {
		t.Fatalf("duplicate person: got %d, want 409", r.StatusCode)
	}
	if r := env.Do(apitest.Request{Method: "DELETE", Path: "/v1/people/" + id, User: "root", Password: pw}); r.StatusCode != 204 {
		t.Fatalf("delete person: got %d", r.StatusCode)
	}
	// The representation's members: disabled may be given on create, roles
	// may not be empty there either, an id is the server's.
	run(t, env, []scenario{
		{"create disabled", apitest.Request{Method: "POST", Path: "/v1/people", User: "root", Password: pw, Body: map[string]any{"name": "erin", "disabled": true, "password": "erin password 1"}}, 201, nil, []string{`"disabled":true`}},
		{"a person created disabled cannot authenticate", apitest.Request{Path: "/v1/dogs", User: "erin", Password: "erin password 1"}, 401, nil, nil},
		{"no roles on create", apitest.Request{Method: "POST", Path: "/v1/people", User: "root", Password: pw, Body: map[string]any{"name": "dave", "roles": []string{}}}, 400, nil, []string{`"field":"roles"`}},
		{"an id on create", apitest.Request{Method: "POST", Path: "/v1/people", User: "root", Password: pw, Body: map[string]any{"name": "dave", "id": "x"}}, 400, nil, []string{`"field":"id"`, "read-only"}},
		{"roles left out: user", apitest.Request{Method: "POST", Path: "/v1/people", User: "root", Password: pw, Body: map[string]any{"name": "dave"}}, 201, nil, []string{`"roles":["user"]`}},
	})
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env := apitest.Start(t, db)
	ops := env.Do(apitest.Request{Path: "/openapi.json"}).Map(t)["paths"].(map[string]any)
	documented := map[string]bool{}
	for path, item := range ops {
		for method := range item.(map[string]any) {
			switch method {
			case "summary", "description", "parameters", "servers":
				continue // the path item's own fields (OpenAPI 3.1 §4.8.9)
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	registered := map[string]bool{}
	for _, rt := range env.API.Routes() {
		path := strings.TrimSuffix(rt.Pattern, "{$}")
		path = regexp.MustCompile(`\{([a-z_]+)\.\.\.\}`).ReplaceAllString(path, "{$1}")
		methods := []string{rt.Method}
		if rt.Method == "" {
			methods = []string{"GET", "PUT", "PATCH", "DELETE", "POST"}
		}
		for _, m := range methods {
			key := m + " " + path
			registered[key] = true
			if !documented[key] {
				t.Errorf("route %s is not in the OpenAPI document", key)
			}
		}
	}
	for key := range documented {
		if !registered[key] {
			t.Errorf("the OpenAPI document has %s, which is not a route", key)
		}
	}
}

func TestPlainHTTPCredentialsRefused(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env := apitest.Start(t, db)
	env.CreateUser("alice", pw)
	// The API handler itself refuses credentials that did not come over TLS.
	req, _ := http.NewRequest("GET", "/v1/dogs", nil)
	req.SetBasicAuth("alice", pw)
	rec := newRecorder()
	env.API.Handler().ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Fatalf("credentials over plain HTTP: got %d, want 401", rec.Code)
	}
}

// createdValidators checks that a 201 carries the ETag and Last-Modified
// that a GET of the new dog answers with (docs/api.md, "Dogs"): the ETag
// of the 201 makes the GET conditional.
func createdValidators(t *testing.T, env *apitest.Env, created *apitest.Response, path string) {
	t.Helper()
	etag, modified := created.Header.Get("ETag"), created.Header.Get("Last-Modified")
	if etag == "" || modified == "" {
		t.Fatalf("201 of %s: ETag %q, Last-Modified %q; want both", path, etag, modified)
	}
	got := env.Do(apitest.Request{Path: path, User: "alice", Password: pw})
	if got.Header.Get("ETag") != etag || got.Header.Get("Last-Modified") != modified {
		t.Fatalf("GET %s: ETag %q, Last-Modified %q; the 201 had %q, %q", path, got.Header.Get("ETag"), got.Header.Get("Last-Modified"), etag, modified)
	}
	got = env.Do(apitest.Request{Path: path, User: "alice", Password: pw, Headers: map[string]string{"If-None-Match": etag}})
	if got.StatusCode != 304 {
		t.Fatalf("GET %s with the 201's ETag: %d, want 304", path, got.StatusCode)
	}
}

func TestDogsV2(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := apitest.Start(t, db)
		alice := env.CreateUser("alice", pw)
		resp := env.Do(apitest.Request{Method: "POST", Path: "/v2/dogs", User: "alice", Password: pw,
			Body: map[string]any{"name": "Rex", "email": "rex@example.org", "owner": map[string]any{"id": alice.ID}}})
		if resp.StatusCode != 201 {
			t.Fatalf("v2 create: %d %s", resp.StatusCode, resp.Body)
		}
		v2 := resp.Map(t)
		id := v2["id"].(string)
		if resp.Header.Get("Location") != env.URL+"/v2/dogs/"+id {
			t.Fatalf("v2 Location: %q", resp.Header.Get("Location"))
		}
		createdValidators(t, env, resp, "/v2/dogs/"+id)
		resp = env.Do(apitest.Request{Method: "PUT", Path: "/v1/dogs/chosen-id/", User: "alice", Password: pw,
			Body: map[string]any{"name": "Max", "email": "max@example.org"}})
		if resp.StatusCode != 201 {
			t.Fatalf("PUT create: %d %s", resp.StatusCode, resp.Body)
		}
		createdValidators(t, env, resp, "/v1/dogs/chosen-id/")
		owner := v2["owner"].(map[string]any)
		if owner["id"] != alice.ID || owner["href"] != env.URL+"/v1/people/"+alice.ID {
			t.Fatalf("v2 owner: %v", owner)
		}
		// The same dog through v1, which links to its successor.
		resp = env.Do(apitest.Request{Method: "PATCH", Path: "/v1/dogs/" + id + "/", User: "alice", Password: pw, Body: map[string]any{"name": "Rexy"}})
		if resp.StatusCode != 204 || resp.Header.Get("Link") != "<"+env.URL+"/v2/dogs/"+id+`>; rel="successor-version"` {
			t.Fatalf("v1 PATCH: %d, Link %q", resp.StatusCode, resp.Header.Get("Link"))
		}
		resp = env.Do(apitest.Request{Path: "/v2/dogs/" + id, User: "alice", Password: pw})
		if resp.Map(t)["name"] != "Rexy" {
			t.Fatalf("v2 does not see the v1 write: %s", resp.Body)
		}
		if _, ok := resp.Map(t)["barks"]; ok {
			t.Fatal("v2 has a barks member")
		}
		resp = env.Do(apitest.Request{Method: "PUT", Path: "/v2/dogs/" + id, User: "alice", Password: pw,
			Body: map[string]any{"name": "Rex", "email": "rex@example.org", "owner": map[string]any{"href": "x"}}})
		if resp.StatusCode != 400 {
			t.Fatalf("v2 owner without id: %d", resp.StatusCode)
		}
		resp = env.Do(apitest.Request{Path: "/v2/dogs", User: "alice", Password: pw})
		if resp.Map(t)["total"] != 2.0 { // Rex and the dog created by PUT
			t.Fatalf("v2 list: %s", resp.Body)
		}
	})
}

func TestRateLimitAndMetrics(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	limiter := auth.NewLoginLimiter(3, nil)
	basic := auth.NewBasic(db, limiter, nil)
	env := apitest.Start(t, db, func(d *httpapi.Deps) {
		d.Auth = &auth.Chain{Header: []auth.Scheme{basic}}
	})
	env.CreateUser("alice", pw)
	for range 3 {
		if r := env.Do(apitest.Request{Path: "/v1/dogs", User: "alice", Password: "wrong"}); r.StatusCode != 401 {
			t.Fatalf("wrong password: %d", r.StatusCode)
		}
	}
	r := env.Do(apitest.Request{Path: "/v1/dogs", User: "alice", Password: pw})
	if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "/problems/rate-limited") {
		t.Fatalf("past the limit with the right password: got %d %q %s, want 429 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"), r.Body)
	}
	// Any token is a method (RFC 9110 §9.1); those the API does not know
	// are counted together, so a client cannot grow the metrics at will.
	for _, m := range []string{"BREW", "X-ONE", "X-TWO"} {
		if r := env.Do(apitest.Request{Method: m, Path: "/v1/dogs"}); r.StatusCode != 405 {
			t.Fatalf("%s /v1/dogs: %d, want 405", m, r.StatusCode)
		}
	}
	// A client-chosen path or method is cut in the log line.
	long := "/v1/" + strings.Repeat("é", 3000)
	if r := env.Do(apitest.Request{Method: "X" + strings.Repeat("Y", 200), Path: long}); r.StatusCode != 404 && r.StatusCode != 405 {
		t.Fatalf("a long path: %d, want 404 or 405", r.StatusCode)
	}
	for _, line := range strings.Split(env.Logs(), "\n") {
		if strings.Contains(line, `"msg":"request"`) && len(line) > 1500 {
			t.Fatalf("a request's log line of %d bytes: %.200s…", len(line), line)
		}
	}
	if logs := env.Logs(); !strings.Contains(logs, `é…","route"`) || !strings.Contains(logs, `"method":"X`+strings.Repeat("Y", 31)+`…"`) {
		t.Fatal("the long path and method are not cut in the log line")
	}
	// The metrics need a principal; this client is locked out by now, so
	// they are read from the server's own handler.
	if r := env.Do(apitest.Request{Path: "/metrics"}); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("metrics without credentials: %d, want 401 with a challenge", r.StatusCode)
	}
	rec := httptest.NewRecorder()
	env.API.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := struct{ Body []byte }{rec.Body.Bytes()}
	for _, want := range []string{
		`yard_http_requests_total{method="GET",route="GET /v1/dogs",status="401"} 3`,
		`yard_http_requests_total{method="GET",route="GET /v1/dogs",status="429"} 1`,
		`yard_http_request_duration_seconds_bucket{method="GET",route="GET /v1/dogs"`,
		`yard_http_requests_total{method="_OTHER",route="unmatched",status="405"} 3`,
	} {
		if !strings.Contains(string(m.Body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(m.Body), `method="BREW"`) {
		t.Error("an unknown method is a label of its own")
	}
}
