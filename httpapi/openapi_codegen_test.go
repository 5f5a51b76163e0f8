package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
)

// TestOpenAPIForGenerators holds the document to what client generators
// need, each rule a defect that oapi-codegen, ogen, openapi-typescript or
// @hey-api/openapi-ts met in an earlier document (docs/clients.md,
// "Generated clients"; cmd/yard's TestGeneratedClients runs them):
//
//   - a type array holds one type and "null" at most (others: a oneOf);
//   - no content lists both application/xml and text/xml (two fields of
//     one name in Go);
//   - no security scheme is named as a schema once capitalised (one Go
//     type for both);
//   - no array leaves its items untyped (unknown[] & Car[]);
//   - no header parameter is named Authorization, Accept or Content-Type,
//     which OpenAPI 3.1 §4.8.12.1 says are ignored;
//   - a form body lists its fields;
//   - no operation that takes credentials lists a credential's query
//     variable as a parameter: the security schemes describe them once;
//   - a success or redirect with a JSON body lists no text/html beside it
//     (a body typed Bark | string).
func TestOpenAPIForGenerators(t *testing.T) {
	chain := &auth.Chain{Query: []auth.Scheme{(&auth.OAuth1{}).InRequest(), &auth.Signed{}}}
	api := httpapi.New(httpapi.Deps{Auth: chain, BaseURL: "https://localhost:8443", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	raw, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	walkDoc(doc, "#", func(v map[string]any, at string) {
		if ts, ok := v["type"].([]any); ok && (len(ts) > 2 || len(ts) == 2 && !slices.Contains(ts, any("null"))) {
			t.Errorf("%s: type %v (use a oneOf)", at, ts)
		}
		if content, ok := v["content"].(map[string]any); ok {
			if content["application/xml"] != nil && content["text/xml"] != nil {
				t.Errorf("%s: both application/xml and text/xml", at)
			}
			status := at[strings.LastIndex(at, "/")+1:]
			if content["text/html"] != nil && (strings.HasPrefix(status, "2") || strings.HasPrefix(status, "3")) &&
				slices.ContainsFunc(jsonKeys(content), func(k string) bool { return strings.HasSuffix(k, "json") }) {
				t.Errorf("%s: JSON and text/html", at)
			}
			if form, ok := content["application/x-www-form-urlencoded"].(map[string]any); ok && strings.Contains(at, "/requestBody") {
				if schema, _ := form["schema"].(map[string]any); schema["$ref"] == nil && len(jsonObject(schema["properties"])) == 0 {
					t.Errorf("%s: a form body without its fields", at)
				}
			}
		}
		if items, ok := v["items"].(map[string]any); ok && v["type"] == "array" && len(items) == 0 {
			t.Errorf("%s: an array of untyped items", at)
		}
		if v["in"] == "header" && v["name"] != nil {
			switch strings.ToLower(v["name"].(string)) {
			case "authorization", "accept", "content-type":
				t.Errorf("%s: a header parameter %s, which OpenAPI ignores", at, v["name"])
			}
		}
	})

	components := jsonObject(doc["components"])
	schemas := jsonObject(components["schemas"])
	for name := range jsonObject(components["securitySchemes"]) {
		for schema := range schemas {
			if strings.EqualFold(name, schema) {
				t.Errorf("security scheme %s and schema %s: one name once capitalised", name, schema)
			}
		}
	}
	vars := chain.QueryVars()
	for path, item := range jsonObject(doc["paths"]) {
		for method, op := range jsonObject(item) {
			if jsonObject(jsonObject(op)["responses"])["401"] == nil {
				continue // takes no credentials (GET /oauth/authorize's oauth_token names a request token)
			}
			for _, p := range jsonArray(jsonObject(op)["parameters"]) {
				pm := jsonObject(p)
				if ref, _ := pm["$ref"].(string); ref != "" {
					pm = jsonObject(jsonObject(components["parameters"])[strings.TrimPrefix(ref, "#/components/parameters/")])
				}
				name, _ := pm["name"].(string)
				if pm["in"] == "query" && slices.ContainsFunc(vars, func(v string) bool { return strings.EqualFold(v, name) }) {
					t.Errorf("%s %s: the credential variable %s as a parameter (its security scheme describes it)", method, path, name)
				}
			}
		}
	}
}

// walkDoc calls fn with every object of a decoded JSON value and its JSON
// pointer.
func walkDoc(v any, at string, fn func(map[string]any, string)) {
	switch v := v.(type) {
	case map[string]any:
		fn(v, at)
		for k, x := range v {
			walkDoc(x, at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), fn)
		}
	case []any:
		for i, x := range v {
			walkDoc(x, at+"/"+strconv.Itoa(i), fn)
		}
	}
}

func jsonObject(v any) map[string]any { m, _ := v.(map[string]any); return m }

func jsonArray(v any) []any { s, _ := v.([]any); return s }

func jsonKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
