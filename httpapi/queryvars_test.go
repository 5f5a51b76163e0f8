package httpapi

import (
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/yard-api/yard/auth"
)

// grammarQuery drops the signed-request variables and keeps everything
// else as sent, separators included.
func TestGrammarQuery(t *testing.T) {
	s := &Server{queryVars: newQueryVarSet((&auth.Chain{Query: []auth.Scheme{&auth.Signed{}}}).QueryVars())}
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

// mayHold turns a name away only when no variable matches it: every
// variable in any case passes, and no random name it refuses matches one.
func TestQueryVarSetMayHold(t *testing.T) {
	chain := &auth.Chain{Query: []auth.Scheme{&auth.Signed{}}}
	vars := newQueryVarSet(append(chain.QueryVars(), "oauth_consumer_key", "oauth_nonce"))
	r := rand.New(rand.NewPCG(25, 2))
	flip := func(s string) string {
		b := []byte(s)
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = asciiLower(b[i])
			} else if 'a' <= b[i] && b[i] <= 'z' {
				b[i] -= 'a' - 'A'
			}
		}
		return string(b)
	}
	for _, v := range vars.names {
		for range 20 {
			if name := flip(v); !vars.mayHold(name) {
				t.Fatalf("mayHold(%q) = false for the variable %q", name, v)
			}
		}
	}
	const letters = "aAbBcCdkKmMoOsStTyY_.\u212a\u017f"
	for range 50000 {
		var b strings.Builder
		for range r.IntN(12) {
			l := []rune(letters)
			b.WriteRune(l[r.IntN(len(l))])
		}
		name := b.String()
		if r.IntN(4) == 0 {
			name = flip(vars.names[r.IntN(len(vars.names))])[:r.IntN(6)] + name
		}
		if !vars.mayHold(name) && slices.ContainsFunc(vars.names, func(v string) bool { return sameLower(v, name) }) {
			t.Fatalf("mayHold(%q) = false, but it is a variable", name)
		}
	}
}
