package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/yard-api/yard/auth"
)

// grammarQuery drops the signed-request variables and keeps everything
// else as sent, separators included.
func TestGrammarQuery(t *testing.T) {
	s := &Server{deps: Deps{Auth: &auth.Chain{Query: []auth.Scheme{&auth.Signed{}}}}}
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"color=red,blue;make=!ford", "color=red,blue;make=!ford"},
		{"color=red;apiKey=k;timestamp=1&signature=s&max=5", "color=red&max=5"},
		{"apiKey=k&color=red;make=ford", "color=red;make=ford"},
		{"color=red&APIKEY=k", "color=red"},
		{"color=red&apiKey", "color=red&apiKey"},              // no '=': the grammar refuses it
		{"color=red&api%4Bey=k&doors=4", "color=red&doors=4"}, // decoded name
		{"color=red&&make=ford&signature=s", "color=red&make=ford"},
		{"color=red&&make=ford", "color=red&&make=ford"},             // nothing dropped: as sent
		{"color=red&api%E2%84%AAey=k", "color=red"},                  // KELVIN SIGN lower-cases to k
		{"color=red&%C5%BFignature=s", "color=red&%C5%BFignature=s"}, // LONG S stays a field
	} {
		r := httptest.NewRequest("GET", "/cars?"+c.in, nil)
		if got := s.grammarQuery(r); got != c.want {
			t.Errorf("grammarQuery(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
