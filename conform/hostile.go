package conform

import (
	"bytes"
	"strings"
)

// hostileChecks send inputs that are safe to send to any server: each is
// refused before anything is stored.
func hostileChecks() []Check {
	const p, doc = "hostile", "docs/api.md#http"
	dogBody := func(name string) []byte {
		return []byte(`{"name":"` + name + `","email":"h@example.com"}`)
	}
	// refused fails unless the dog body is refused with status in a
	// problem naming each of fields; a dog created anyway is removed.
	refused := func(t *T, status int, ctype string, body []byte, fields ...string) {
		r := t.Do("POST", "/v1/dogs", basic(t.owner()), rawBody(ctype, body))
		t.createdAnyway(r, "dog", r.Header.Get("Location"), basic(t.k.admin))
		t.Problem(r, status, "", fields...)
	}
	return []Check{
		def(p, "too-large", Must, doc, "POST /v1/dogs with a 1.1 MiB JSON body",
			"413 problem", func(t *T) {
				big := append(append([]byte(`{"name":"`), bytes.Repeat([]byte("a"), 1100<<10)...), []byte(`","email":"h@example.com"}`)...)
				refused(t, 413, "application/json", big)
			}),
		def(p, "malformed-json", Must, doc, `POST /v1/dogs {"name":  (cut off)`,
			"400 problem", func(t *T) { refused(t, 400, "application/json", []byte(`{"name":`)) }),
		def(p, "duplicate-members", Must, doc, `POST /v1/dogs {"name":"a","Name":"b",…} (names differing only in case)`,
			"400 problem", func(t *T) {
				refused(t, 400, "application/json", []byte(`{"name":"a","Name":"b","email":"h@example.com"}`))
			}),
		def(p, "invalid-utf8", Must, doc, "POST /v1/dogs with a name holding the byte 0xff",
			"400 problem", func(t *T) { refused(t, 400, "application/json", dogBody("a\xffb")) }),
		def(p, "charset", Must, doc, "POST /v1/dogs as application/json; charset=latin1",
			"415 problem", func(t *T) { refused(t, 415, "application/json; charset=latin1", dogBody("a")) }),
		def(p, "control-characters", Must, doc, `POST /v1/dogs {"name":"a\u0000b"}`,
			"400 problem naming name", func(t *T) { refused(t, 400, "application/json", dogBody(`a\u0000b`), "name") }),
		def(p, "null-required", Must, doc, `PATCH /v1/dogs/{id}/ {"name":null}`,
			"400 problem naming name; the dog keeps its name", func(t *T) {
				dog := t.dog()
				r := t.Do("PATCH", dog, basic(t.owner()), rawBody("application/merge-patch+json", []byte(`{"name":null}`)))
				t.Problem(r, 400, "", "name")
				t.Check(t.Do("GET", dog, basic(t.owner())).Str("name") != "", "the dog lost its name")
			}),
		def(p, "json-patch", Must, doc, `PATCH /v1/dogs/{id}/ as application/json-patch+json`,
			"415 with Accept-Patch naming application/merge-patch+json", func(t *T) {
				r := t.Do("PATCH", t.dog(), basic(t.owner()), rawBody("application/json-patch+json", []byte(`[{"op":"replace","path":"/name","value":"x"}]`)))
				t.Problem(r, 415, "")
				t.Check(strings.Contains(r.Header.Get("Accept-Patch"), "application/merge-patch+json"), "Accept-Patch %q", r.Header.Get("Accept-Patch"))
			}),
		def(p, "code-url", Must, "docs/barks.md#where-fetches-may-go", `POST /v1/dogs with codeUrl "--upload-pack=touch /tmp/x", "file:///etc", "https://user:pw@example.com/r.git", "https://example.com/r.git id" (white space)`,
			"400 problem naming codeUrl for each; nothing stored", func(t *T) {
				for _, u := range []string{"--upload-pack=touch /tmp/x", "file:///etc", "https://user:pw@example.com/r.git", "https://example.com/r.git id"} {
					refused(t, 400, "application/json", []byte(`{"name":"c","email":"h@example.com","codeUrl":"`+u+`"}`), "codeUrl")
				}
			}),
		def(p, "xml-entities", Must, "docs/api.md#orders", `PUT /order/{id} with a DOCTYPE declaring entities (application/xml)`,
			"400; the order is not cancelled", func(t *T) {
				loc := t.order(nil)
				body := `<?xml version="1.0"?><!DOCTYPE order [<!ENTITY a "true">]><order><canceled>&a;</canceled></order>`
				t.Expect(400, "PUT", loc, basic(t.owner()), rawBody("application/xml", []byte(body)))
				g := t.Do("GET", loc, basic(t.owner()))
				t.Check(g.JSON()["canceled"] == false, "the order reads canceled %v after the refused body", g.JSON()["canceled"])
			}),
		totals(p, "quote-in-query", Must, "docs/cars.md#the-query-grammar", `GET /cars?make=M&color=' OR '1'='1`,
			"200 with total 0: the value is data", 0, "/cars?make={make}&color=%27%20OR%20%271%27%3D%271"),
		def(p, "dot-segments", Must, doc, "GET /cars/../v1/people",
			"308 to the absolute clean path /v1/people, never its content", func(t *T) {
				r := t.Expect(308, "GET", "/cars/../v1/people")
				t.Location(r, "/v1/people")
			}),
		def(p, "long-request-id", Should, doc, "X-Request-Id of 300 characters",
			"a response whose X-Request-Id is not the one sent (one is generated)", func(t *T) {
				long := strings.Repeat("x", 300)
				r := t.Do("GET", "/healthz", header("X-Request-Id", long))
				t.Check(r.Header.Get("X-Request-Id") != "" && r.Header.Get("X-Request-Id") != long, "the 300-character request id was echoed")
			}),
	}
}
