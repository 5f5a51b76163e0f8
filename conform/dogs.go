package conform

import (
	"strings"

	"github.com/yard-api/yard/internal/weblink"
)

func dogChecks() []Check {
	const p, doc = "dogs", "docs/api.md#dogs"
	return []Check{
		def(p, "create", Must, doc, `POST /v1/dogs {"name","email"} as a person`,
			"201, an absolute Location /v1/dogs/{id}/, the dog with owner = the person, barkCount 0, barkEffect record",
			func(t *T) {
				body := map[string]any{"name": t.k.prefix + "-create", "email": t.k.prefix + "@example.com"}
				r := t.Expect(201, "POST", "/v1/dogs", basic(t.owner()), jsonBody(body))
				id := r.Str("id")
				t.Check(id != "", "the created dog has no id")
				loc := t.Location(r, "/v1/dogs/"+id+"/")
				t.k.created("dog "+loc, "DELETE", loc, []opt{basic(t.k.admin)})
				t.Check(r.Str("owner") == t.owner().id, "owner %q, want the creator %q", r.Str("owner"), t.owner().id)
				t.Check(r.Num("barkCount") == 0, "barkCount %v, want 0", r.JSON()["barkCount"])
				t.Check(r.Str("barkEffect") == "record", "barkEffect %q, want the default record", r.Str("barkEffect"))
				t.Check(r.Str("email") == body["email"], "email %q, want %q", r.Str("email"), body["email"])
			}),
		def(p, "get", Must, doc, "GET /v1/dogs/{id}/ as its owner",
			"200, the dog, with ETag and Last-Modified", func(t *T) {
				dog := t.dog()
				r := t.Expect(200, "GET", dog, basic(t.owner()))
				t.Check(dog == t.k.abs("/v1/dogs/"+r.Str("id")+"/"), "the dog at %s has id %q", dog, r.Str("id"))
				t.Check(r.Header.Get("ETag") != "", "no ETag")
				t.Check(r.Header.Get("Last-Modified") != "", "no Last-Modified")
			}),
		def(p, "conditional-get", Should, "docs/api.md#http", "GET the dog again with If-None-Match: <its ETag>",
			"304 Not Modified", func(t *T) {
				dog := t.dog()
				r := t.Expect(200, "GET", dog, basic(t.owner()))
				t.Expect(304, "GET", dog, basic(t.owner()), header("If-None-Match", r.Header.Get("ETag")))
			}),
		def(p, "slash-redirect", Must, doc, "GET /v1/dogs/{id} (no trailing slash)",
			"308 to the absolute /v1/dogs/{id}/", func(t *T) {
				dog := t.dog()
				r := t.Expect(308, "GET", strings.TrimSuffix(dog, "/"), basic(t.owner()))
				t.Location(r, t.path(dog))
			}),
		def(p, "forbidden", Must, doc, "GET and PATCH another person's dog",
			"403 problem (…/problems/forbidden) for both", func(t *T) {
				dog := t.dog()
				t.Problem(t.Do("GET", dog, basic(t.other())), 403, "forbidden")
				t.Problem(t.Do("PATCH", dog, basic(t.other()), jsonBody(map[string]any{"name": "x"})), 403, "forbidden")
			}),
		def(p, "list", Must, "docs/api.md#http", "GET /v1/dogs?max=1 as a person, before and after creating two dogs",
			`200, a page {"items","offset","max","total"} of the person's dogs (total grows by 2), Link with first, next and last`, func(t *T) {
				before := t.Expect(200, "GET", "/v1/dogs?max=0", basic(t.owner()))
				t.newDog()
				t.newDog()
				r := t.Expect(200, "GET", "/v1/dogs?max=1", basic(t.owner()))
				items, _ := r.JSON()["items"].([]any)
				t.Check(len(items) == 1, "%d items, want 1 (max=1)", len(items))
				if d, ok := items[0].(map[string]any); ok {
					t.Check(d["owner"] == t.owner().id, "an item of owner %v in the person's list", d["owner"])
				}
				t.Check(r.Num("total") == before.Num("total")+2, "total %v, want %v", r.JSON()["total"], before.Num("total")+2)
				t.Check(r.Num("max") == 1 && r.Num("offset") == 0, "offset %v max %v, want 0 and 1", r.JSON()["offset"], r.JSON()["max"])
				for _, rel := range []string{"first", "next", "last"} {
					t.Check(weblink.Targets(r.Header)[rel] != "", "Link %q has no rel=%q", r.Header.Values("Link"), rel)
				}
			}),
		def(p, "patch", Must, doc, `PATCH /v1/dogs/{id}/ {"name"} (a merge patch), then GET`,
			"204, and the new name in the dog", func(t *T) {
				dog := t.newDog()
				name := t.k.prefix + "-renamed"
				t.Expect(204, "PATCH", dog, basic(t.owner()), rawBody("application/merge-patch+json", []byte(`{"name":"`+name+`"}`)))
				r := t.Do("GET", dog, basic(t.owner()))
				t.Check(r.Str("name") == name, "name %q after the PATCH, want %q", r.Str("name"), name)
			}),
		def(p, "put", Must, doc, `PUT /v1/dogs/{id}/ with the writable fields`,
			"200 with the new representation", func(t *T) {
				dog := t.newDog()
				name := t.k.prefix + "-put"
				r := t.Expect(200, "PUT", dog, basic(t.owner()), jsonBody(map[string]any{"name": name, "email": "put@example.com", "owner": t.owner().id, "barkEffect": "email"}))
				t.Check(r.Str("name") == name && r.Str("barkEffect") == "email", "the PUT answered name %q barkEffect %q", r.Str("name"), r.Str("barkEffect"))
			}),
		def(p, "put-create", Should, doc, "PUT /v1/dogs/{new id}/ where nothing is",
			"201 with Location of the new dog", func(t *T) {
				id := t.k.prefix + "-put-" + randomHex(3)
				r := t.Do("PUT", "/v1/dogs/"+id+"/", basic(t.owner()), jsonBody(map[string]any{"name": "p", "email": "p@example.com"}))
				if r.Status == 201 || r.Status == 200 {
					t.k.created("dog "+id, "DELETE", "/v1/dogs/"+id+"/", []opt{basic(t.k.admin)})
				}
				t.Status(r, 201)
				t.Location(r, "/v1/dogs/"+id+"/")
			}),
		def(p, "if-match", Must, "docs/api.md#http", `PATCH /v1/dogs/{id}/ {"name"} with If-Match: "not-the-etag"`,
			"412 problem; the dog keeps its name", func(t *T) {
				dog := t.newDog()
				before := t.Do("GET", dog, basic(t.owner())).Str("name")
				r := t.Do("PATCH", dog, basic(t.owner()), header("If-Match", `"not-the-etag"`), jsonBody(map[string]any{"name": t.k.prefix + "-412"}))
				t.Problem(r, 412, "precondition-failed")
				t.Check(t.Do("GET", dog, basic(t.owner())).Str("name") == before, "the dog changed despite the 412")
			}),
		def(p, "unknown-query", Must, "docs/api.md#http", "GET /v1/dogs?zzz=1",
			"400 problem naming zzz", func(t *T) {
				t.Problem(t.Do("GET", "/v1/dogs?zzz=1", basic(t.owner())), 400, "validation", "zzz")
			}),
		def(p, "unknown-field", Must, "docs/api.md#http", `POST /v1/dogs with a misspelt member {"nmae"}`,
			"400 problem (…/problems/validation) naming nmae; nothing created", func(t *T) {
				r := t.Do("POST", "/v1/dogs", basic(t.owner()), jsonBody(map[string]any{"nmae": "x", "email": "x@example.com"}))
				t.createdAnyway(r, "dog", r.Header.Get("Location"), basic(t.k.admin))
				t.Problem(r, 400, "validation", "nmae")
			}),
		def(p, "bad-effect", Must, "docs/barks.md", `POST /v1/dogs {"barkEffect":"howl"}`,
			"400 problem naming barkEffect", func(t *T) {
				r := t.Do("POST", "/v1/dogs", basic(t.owner()), jsonBody(map[string]any{"name": "x", "email": "x@example.com", "barkEffect": "howl"}))
				t.createdAnyway(r, "dog", r.Header.Get("Location"), basic(t.k.admin))
				t.Problem(r, 400, "validation", "barkEffect")
			}),
		def(p, "delete", Must, doc, "DELETE /v1/dogs/{id}/, then GET it",
			"204, then 404", func(t *T) {
				dog := t.newDog()
				t.Expect(204, "DELETE", dog, basic(t.owner()))
				t.Problem(t.Do("GET", dog, basic(t.owner())), 404, "not-found")
			}),
	}
}

func versionChecks() []Check {
	const p, doc = "versions", "docs/api.md#v2"
	return []Check{
		def(p, "successor-link", Must, doc, "GET /v1/dogs/{id}/",
			`Link: <…/v2/dogs/{id}>; rel="successor-version"`, func(t *T) {
				dog := t.dog()
				r := t.Expect(200, "GET", dog, basic(t.owner()))
				want := t.k.abs("/v2/dogs/" + r.Str("id"))
				t.Check(weblink.Targets(r.Header)["successor-version"] == want, "successor-version link %q, want %q", weblink.Targets(r.Header)["successor-version"], want)
			}),
		def(p, "v2-shape", Must, doc, "GET /v2/dogs/{id}",
			`200: owner as {"id","href"}, _links with self and predecessor-version (the v1 URI)`, func(t *T) {
				dog := t.dog()
				id := strings.TrimSuffix(strings.TrimPrefix(t.path(dog), "/v1/dogs/"), "/")
				r := t.Expect(200, "GET", "/v2/dogs/"+id, basic(t.owner()))
				owner, _ := r.JSON()["owner"].(map[string]any)
				t.Check(owner != nil && owner["id"] == t.owner().id && owner["href"] != nil, "owner %v, want a link object with id %q and href", r.JSON()["owner"], t.owner().id)
				links, _ := r.JSON()["_links"].(map[string]any)
				t.Check(links != nil && links["self"] != nil, "_links %v has no self", r.JSON()["_links"])
				pred, _ := links["predecessor-version"].(map[string]any)
				t.Check(pred != nil && pred["href"] == dog, "_links.predecessor-version %v, want href %q", links["predecessor-version"], dog)
			}),
		def(p, "v2-create", Must, doc, `POST /v2/dogs {"name","email","owner":{"id":<the person>}}`,
			"201 with Location /v2/dogs/{id}; the same dog reads at /v1/dogs/{id}/", func(t *T) {
				r := t.Expect(201, "POST", "/v2/dogs", basic(t.owner()), jsonBody(map[string]any{"name": t.k.prefix + "-v2c", "email": "v2@example.com", "owner": map[string]any{"id": t.owner().id}}))
				id := r.Str("id")
				t.Location(r, "/v2/dogs/"+id)
				t.k.created("dog "+id, "DELETE", "/v1/dogs/"+id+"/", []opt{basic(t.k.admin)})
				g := t.Expect(200, "GET", "/v1/dogs/"+id+"/", basic(t.owner()))
				t.Check(g.Str("name") == t.k.prefix+"-v2c" && g.Str("owner") == t.owner().id, "the v1 view of the v2 dog: %s", g.Body)
			}),
		def(p, "one-store", Must, doc, `PATCH /v2/dogs/{id} {"name"}, then GET /v1/dogs/{id}/`,
			"the v1 dog shows the name written through v2", func(t *T) {
				dog := t.newDog()
				id := strings.TrimSuffix(strings.TrimPrefix(t.path(dog), "/v1/dogs/"), "/")
				name := t.k.prefix + "-v2"
				t.Status(t.Do("PATCH", "/v2/dogs/"+id, basic(t.owner()), jsonBody(map[string]any{"name": name})), 204, 200)
				r := t.Do("GET", dog, basic(t.owner()))
				t.Check(r.Str("name") == name, "v1 name %q after the v2 PATCH, want %q", r.Str("name"), name)
			}),
	}
}
