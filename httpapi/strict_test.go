package httpapi_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestStrictInput: every sloppy body is refused with its status and a
// problem naming the member, and nothing is stored (docs/api.md, "Strict
// input").
func TestStrictInput(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := apitest.Start(t, db)
		root := env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
		alice := env.CreateUser("alice", pw)
		ctx := context.Background()

		resp := env.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw,
			Body: map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": "https://example.org/rex.git"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create dog: got %d %s", resp.StatusCode, resp.Body)
		}
		dogID := resp.Map(t)["id"].(string)
		dogURI := "/v1/dogs/" + dogID + "/"
		resp = env.Do(apitest.Request{Method: "POST", Path: "/garages", User: "root", Password: pw, Body: map[string]any{"name": "Main", "state": "CA"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create garage: got %d %s", resp.StatusCode, resp.Body)
		}
		garageID := resp.Map(t)["id"].(string)
		resp = env.Do(apitest.Request{Method: "POST", Path: "/cars", User: "root", Password: pw,
			Body: map[string]any{"color": "red", "type": "sedan", "doors": 4, "make": "Ford", "model": "T", "year": 1920, "garage": garageID}})
		if resp.StatusCode != 201 {
			t.Fatalf("create car: got %d %s", resp.StatusCode, resp.Body)
		}
		carID := resp.Map(t)["id"].(string)

		as := func(user string, r apitest.Request) apitest.Request {
			r.User, r.Password = user, pw
			return r
		}
		post := func(body string) apitest.Request {
			return as("alice", apitest.Request{Method: "POST", Path: "/v1/dogs", Body: body})
		}
		patch := func(path, body string) apitest.Request {
			return as("root", apitest.Request{Method: "PATCH", Path: path, Body: body})
		}
		latin1 := post(`{"name":"Rex","email":"rex@example.org"}`)
		latin1.Headers = map[string]string{"Content-Type": "application/json; charset=latin1"}
		utf8cs := post(`{"name":"Utf","email":"utf@example.org"}`)
		utf8cs.Headers = map[string]string{"Content-Type": "application/json; charset=UTF-8"}
		field := func(name string) string { return `"field":"` + name + `"` }

		run(t, env, []scenario{
			{"a merge patch of null", patch("/cars/"+carID, `null`), 400, nil, []string{field("(document)"), "not null"}},
			{"a garage patch of null", patch("/garages/"+garageID, ` null `), 400, nil, []string{field("(document)")}},
			{"a dog body of null", post(`null`), 400, nil, []string{field("(document)")}},
			{"duplicate member", post(`{"name":"a","email":"a@example.org","name":"b"}`), 400, nil, []string{field("name"), "validation"}},
			{"duplicate member in a nested object", patch("/v2/dogs/"+dogID, `{"owner":{"id":"x","id":"y"}}`), 400, nil, []string{"owner"}},
			{"members differing only in case", post(`{"name":"a","email":"a@example.org","Name":"b"}`), 400, nil, []string{field("Name")}},
			{"member in the wrong case", post(`{"Name":"a","email":"a@example.org"}`), 400, nil, []string{field("Name")}},
			{"invalid UTF-8", post("{\"name\":\"R\xffx\",\"email\":\"a@example.org\"}"), 400, nil, []string{"malformed", "UTF-8"}},
			{"lone surrogate escape", post(`{"name":"R\ud800x","email":"a@example.org"}`), 400, nil, []string{"malformed"}},
			{"latin1 charset", latin1, 415, nil, []string{"unsupported-media-type"}},
			{"NUL in a dog name", post(`{"name":"R\u0000x","email":"a@example.org"}`), 400, nil, []string{field("name")}},
			{"CR LF in a dog name", post(`{"name":"Rex\r\nX-Evil: 1","email":"a@example.org"}`), 400, nil, []string{field("name")}},
			{"tab in a dog name", post(`{"name":"R\tx","email":"a@example.org"}`), 400, nil, []string{field("name")}},
			{"DEL in a dog name", post(`{"name":"R\u007fx","email":"a@example.org"}`), 400, nil, []string{field("name")}},
			{"C1 in a dog name", post(`{"name":"R\u0085x","email":"a@example.org"}`), 400, nil, []string{field("name")}},
			{"control character in a dog's e-mail", post(`{"name":"Rex","email":"\"a\u0001\"@example.org"}`), 400, nil, []string{field("email")}},
			{"control character in a PATCH of a dog", patch(dogURI, `{"name":"R\nx"}`), 400, nil, []string{field("name")}},
			{"control character in a v2 dog name", patch("/v2/dogs/"+dogID, `{"name":"R\u0000x"}`), 400, nil, []string{field("name")}},
			{"control character in a person's phone", patch("/v1/people/"+alice.ID, `{"phone":"+14155550100\n"}`), 400, nil, []string{field("phone")}},
			{"control character in a person's e-mail", patch("/v1/people/"+alice.ID, `{"email":"al\u0000ice@example.org"}`), 400, nil, []string{field("email")}},
			{"control character in a garage name", patch("/garages/"+garageID, `{"name":"Ma\u0085in"}`), 400, nil, []string{field("name")}},
			{"control character in a search name", as("alice", apitest.Request{Method: "POST", Path: "/searches", Body: `{"color":"red","name":"re\nds"}`}), 400, nil, []string{field("name")}},
			{"duplicate member in a search", as("alice", apitest.Request{Method: "POST", Path: "/searches", Body: `{"color":"red","Color":"blue"}`}), 400, nil, []string{field("Color")}},
			{"null name in a merge patch (v1)", patch(dogURI, `{"name":null}`), 400, nil, []string{field("name")}},
			{"null email in a merge patch (v1)", patch(dogURI, `{"email":null,"name":"Max"}`), 400, nil, []string{field("email")}},
			{"null barkEffect in a merge patch (v2)", patch("/v2/dogs/"+dogID, `{"barkEffect":null}`), 400, nil, []string{field("barkEffect")}},
			{"null name in a merge patch (v2)", patch("/v2/dogs/"+dogID, `{"name":null}`), 400, nil, []string{field("name")}},
			{"null owner in a merge patch (v2)", patch("/v2/dogs/"+dogID, `{"owner":null}`), 400, nil, []string{field("owner")}},
			{"null name of a person", patch("/v1/people/"+alice.ID, `{"name":null}`), 400, nil, []string{field("name")}},
			{"null roles of a person", patch("/v1/people/"+alice.ID, `{"roles":null}`), 400, nil, []string{field("roles")}},
			{"null color of a car", patch("/cars/"+carID, `{"color":null}`), 400, nil, []string{field("color")}},
			{"null name of a garage", patch("/garages/"+garageID, `{"name":null}`), 400, nil, []string{field("name")}},
			{"charset UTF-8 is fine", utf8cs, 201, nil, nil},
		})

		// Nothing of the refused requests was stored.
		d, err := db.FindDogByID(ctx, dogID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "Rex" || d.Email != "rex@example.org" || d.BarkEffect != "record" || d.Owner != alice.ID {
			t.Errorf("dog changed: %+v", d)
		}
		dogs, _, err := db.FindDogs(ctx, yard.DogFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(dogs) != 2 {
			t.Errorf("dogs stored: got %d, want 2 (Rex and Utf)", len(dogs))
		}
		u, err := db.FindUserByID(ctx, alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Name != "alice" || u.Phone != "+14155550100" || u.Email != "alice@example.org" {
			t.Errorf("person changed: %+v", u)
		}
		g, err := db.FindGarageByID(ctx, garageID)
		if err != nil {
			t.Fatal(err)
		}
		if g.Name != "Main" {
			t.Errorf("garage changed: %+v", g)
		}
		c, err := db.FindCarByID(ctx, carID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Color != "red" {
			t.Errorf("car changed: %+v", c)
		}
		if _, err := db.FindSearchByName(ctx, "re\nds"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("search stored: %v", err)
		}

		// In a merge patch, null removes an optional member.
		resp = env.Do(patch(dogURI, `{"codeUrl":null}`))
		if resp.StatusCode != 204 && resp.StatusCode != 205 {
			t.Fatalf("codeUrl null: got %d %s", resp.StatusCode, resp.Body)
		}
		if d, _ := db.FindDogByID(ctx, dogID); d.CodeURL != "" {
			t.Errorf("codeUrl null: got %q, want removed", d.CodeURL)
		}
		resp = env.Do(patch("/v1/people/"+alice.ID, `{"phone":null}`))
		if resp.StatusCode != 200 {
			t.Fatalf("phone null: got %d %s", resp.StatusCode, resp.Body)
		}
		if u, _ := db.FindUserByID(ctx, alice.ID); u.Phone != "" {
			t.Errorf("phone null: got %q, want removed", u.Phone)
		}
		_ = root
	})
}

// TestRedirectsAbsolute: the mux's own path cleaning (dot segments, double
// slashes) answers 308 with an absolute Location under the base URL.
func TestRedirectsAbsolute(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := apitest.Start(t, db)
		abs := func(path string) map[string]string {
			return map[string]string{"Location": "^" + regexp.QuoteMeta(env.URL+path) + "$"}
		}
		run(t, env, []scenario{
			{"dot segment", apitest.Request{Path: "/v1/dogs/./"}, 308, abs("/v1/dogs/"), nil},
			{"dot-dot segment", apitest.Request{Path: "/cars/.."}, 308, abs("/"), nil},
			{"double slash", apitest.Request{Path: "/v1//dogs"}, 308, abs("/v1/dogs"), nil},
			{"leading double slash", apitest.Request{Path: "//healthz"}, 308, abs("/healthz"), nil},
			{"query kept", apitest.Request{Path: "/v1/./dogs?max=2"}, 308, abs("/v1/dogs?max=2"), nil},
			// Escapes stay as sent, never escaped again (%2D is not %252D).
			{"escape in a cleaned path", apitest.Request{Path: "/garages/./g%2Dsf"}, 308, abs("/garages/g%2Dsf"), nil},
			{"escaped space in a search segment", apitest.Request{Path: "//search/make=Land%20Rover"}, 308, abs("/search/make=Land%20Rover"), nil},
			// The slash-less dog: its id stays one path segment.
			{"dog id with an escaped ?", apitest.Request{Path: "/v1/dogs/a%3Fb"}, 308, abs("/v1/dogs/a%3Fb/"), nil},
			{"dog id with an escaped / and space", apitest.Request{Path: "/v1/dogs/a%2Fb%20c?x=%22"}, 308, abs("/v1/dogs/a%2Fb%20c/?x=%22"), nil},
			{"dog id with an escaped CR", apitest.Request{Path: "/v1/dogs/a%0Db"}, 308, abs("/v1/dogs/a%0Db/"), nil},
		})
	})
}
