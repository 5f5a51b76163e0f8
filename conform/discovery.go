package conform

import (
	"net/http"
	"strings"
)

// def builds a check of part; its id is part.name.
func def(part, name string, level Level, doc, sends, expects string, run func(*T)) Check {
	return Check{ID: part + "." + name, Part: part, Level: level, Doc: doc, Sends: sends, Expects: expects, run: run}
}

func discoveryChecks() []Check {
	const p = "discovery"
	return []Check{
		def(p, "index", Must, "docs/spec.md", "GET / without credentials",
			"200, a JSON object of links to the resources", func(t *T) {
				r := t.Expect(200, "GET", "/")
				t.Check(r.JSON() != nil, "GET / is not a JSON object (Content-Type %q)", r.Header.Get("Content-Type"))
			}),
		def(p, "openapi", Should, "docs/api.md", "GET /openapi.json",
			`200, a JSON document with an "openapi" member`, func(t *T) {
				r := t.Expect(200, "GET", "/openapi.json")
				t.Check(r.Str("openapi") != "", `the document has no "openapi" member`)
			}),
		def(p, "health", Should, "docs/operations.md", "GET /healthz and GET /readyz",
			"200 for both", func(t *T) {
				t.Expect(200, "GET", "/healthz")
				t.Expect(200, "GET", "/readyz")
			}),
		def(p, "request-id", Must, "docs/api.md#http", "GET /healthz with X-Request-Id: <id>, then without",
			"the same X-Request-Id echoed; a generated one when none was sent", func(t *T) {
				id := "conform-" + randomHex(8)
				r := t.Do("GET", "/healthz", header("X-Request-Id", id))
				t.Check(r.Header.Get("X-Request-Id") == id, "X-Request-Id %q, want the one sent, %q", r.Header.Get("X-Request-Id"), id)
				r = t.Do("GET", "/healthz")
				t.Check(r.Header.Get("X-Request-Id") != "", "a response without X-Request-Id")
			}),
		def(p, "hsts", Must, "docs/api.md#http", "GET / over TLS",
			"Strict-Transport-Security with a max-age", func(t *T) {
				r := t.Do("GET", "/")
				t.Check(strings.Contains(r.Header.Get("Strict-Transport-Security"), "max-age="), "Strict-Transport-Security %q, want a max-age", r.Header.Get("Strict-Transport-Security"))
			}),
		def(p, "not-found", Must, "docs/api.md#http", "GET an unknown path",
			"404 application/problem+json with type …/problems/not-found, title, status", func(t *T) {
				t.Problem(t.Do("GET", "/"+t.k.prefix+"-nowhere"), 404, "not-found")
			}),
		def(p, "problem-page", Should, "docs/api.md#http", "GET the type URL of a 404 problem",
			"200: the type is a page that explains the problem", func(t *T) {
				r := t.Do("GET", "/"+t.k.prefix+"-nowhere")
				t.Problem(r, 404, "not-found")
				t.Expect(200, "GET", r.Str("type"))
			}),
		def(p, "method-405", Must, "docs/api.md#http", "DELETE /healthz (a GET-only path)",
			"405 with Allow naming GET, and a problem body", func(t *T) {
				r := t.Do("DELETE", "/healthz")
				t.Problem(r, 405, "")
				t.Check(strings.Contains(r.Header.Get("Allow"), "GET"), "Allow %q does not name GET", r.Header.Get("Allow"))
			}),
		def(p, "options", Must, "docs/api.md#http", "OPTIONS /cars",
			"204 with Allow naming GET and POST", func(t *T) {
				r := t.Expect(204, "OPTIONS", "/cars")
				allow := r.Header.Get("Allow")
				t.Check(strings.Contains(allow, "GET") && strings.Contains(allow, "POST"), "Allow %q, want GET and POST", allow)
			}),
		def(p, "head", Must, "docs/api.md#http", "HEAD /openapi.json",
			"200 like GET, with no body", func(t *T) {
				r := t.Expect(200, "HEAD", "/openapi.json")
				t.Check(len(r.Body) == 0, "HEAD answered a body of %d bytes", len(r.Body))
			}),
		def(p, "unauthorized", Must, "docs/auth.md#which-credentials-count", "GET /v1/dogs without credentials",
			"401 problem (…/problems/unauthorized) with WWW-Authenticate challenges Basic, Digest and Bearer", func(t *T) {
				r := t.Do("GET", "/v1/dogs")
				t.Problem(r, 401, "unauthorized")
				wantChallenges(t, r.Header, "Basic", "Digest", "Bearer")
			}),
		def(p, "clean-path", Must, "docs/api.md#http", "GET /cars/./search (a path with a dot segment)",
			"308 to the clean path, as an absolute URL", func(t *T) {
				r := t.Expect(308, "GET", "/cars/./search")
				t.Location(r, "/cars/search")
			}),
	}
}

// wantChallenges fails unless the header holds a WWW-Authenticate
// challenge of each scheme.
func wantChallenges(t *T, h http.Header, schemes ...string) {
	all := strings.Join(h.Values("WWW-Authenticate"), ", ")
	for _, s := range schemes {
		t.Check(strings.Contains(all, s+" ") || strings.HasSuffix(all, s), "WWW-Authenticate %q has no %s challenge", all, s)
	}
}
