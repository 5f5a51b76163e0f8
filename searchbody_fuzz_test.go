package yard_test

import (
	"testing"

	"github.com/yard-api/yard"
)

// FuzzSearchBody feeds bodies to the search body parser: it must never
// panic, every refusal is a validation or malformed-body error, and an
// accepted search's query has a canonical form in the car query grammar
// that parses back to the same query, with a valid name.
// `go test` runs the seeds (and testdata/fuzz/FuzzSearchBody);
// `go test -fuzz FuzzSearchBody .` explores.
func FuzzSearchBody(f *testing.F) {
	for _, seed := range []string{
		`{"$class":"car","$q":{"$eq":{"color":"red","garage":{"state":"CA"}},"$ne":{"make":"Ford"}},"name":"reds"}`,
		`{"color":"red","make":"Ford","garage":{"state":"CA"},"name":"reds"}`,
		`{"color":["red","blue"],"doors":4}`,
		`{"$q":{"$gt":{"year":2000},"$le":{"year":2010}}}`,
		`{"$q":{"color":"red"}}`,
		`{"garage":null}`, `{"garage":"g1"}`, `{"garage":{"id":"g1","name":"Main"}}`,
		`{"$q":{"$lt":{"color":"red"}}}`, `{"$class":"boat"}`, `{"name":"all"}`,
		`{"doors":"4"}`, `{"year":1e400}`, `{"doors":-0}`, `[]`, `null`, `{}`, `{"color":{"$eq":"red"}}`,
		`{"garage":"null"}`, `{"$q":{"$eq":{"garage":{"state":["CA","NY"]}}}}`, `{"color":"r,ed"}`, `{"color":"!red"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := yard.ParseSearchBody(body)
		if err != nil {
			if c := yard.ErrorCode(err); c != yard.EINVALID && c != yard.EMALFORMED {
				t.Fatalf("body %q: error %v is neither invalid nor malformed", body, err)
			}
			return
		}
		if req.Name != "" && !yard.ValidSearchName(req.Name) {
			t.Fatalf("body %q: accepted name %q", body, req.Name)
		}
		again, _, err := yard.ParseCarQuery(req.Query.String())
		if err != nil || !again.Equal(req.Query) {
			t.Fatalf("body %q: canonical %q parses to %q, %v", body, req.Query.String(), again.String(), err)
		}
	})
}
