package weblink

import (
	"maps"
	"net/http"
	"testing"
)

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []string
		want   map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"a list's links, commas in their queries", []string{
			`</v1/cars?facets=make,color&offset=0&max=20>; rel="first", </v1/cars?facets=make,color&offset=20&max=20>; rel="next"`,
			`</v1/cars?facets=make,color&offset=980&max=20>; rel=last`,
			`<https://x/v2>; rel="successor-version"`,
		}, map[string]string{
			"successor-version": "https://x/v2",
			"first":             "/v1/cars?facets=make,color&offset=0&max=20",
			"next":              "/v1/cars?facets=make,color&offset=20&max=20",
			"last":              "/v1/cars?facets=make,color&offset=980&max=20",
		}},
		{"several types, case, a quoted comma, a second rel ignored", []string{
			`<https://a.example/x>; title="one, two"; REL="Prev First"; rel="next", <https://a.example/y>; rel=prev`,
		}, map[string]string{"prev": "https://a.example/x", "first": "https://a.example/x"}},
		{"no rel, and a field that is not a link", []string{`</a>; title="x"`, `nonsense`}, map[string]string{}},
	} {
		h := http.Header{}
		for _, f := range tc.fields {
			h.Add("Link", f)
		}
		if got := Targets(h); !maps.Equal(got, tc.want) {
			t.Errorf("%s: Targets = %v, want %v", tc.name, got, tc.want)
		}
	}
}
