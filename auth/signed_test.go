package auth

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestSecretBox(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	b, err := NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("the secret"), "ak_1")
	got, err := b.Open(sealed, "ak_1")
	if err != nil || string(got) != "the secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := b.Open(sealed, "ak_2"); err == nil {
		t.Error("a value sealed for one id opened for another")
	}
	other, _ := NewSecretBox([]byte("fedcba9876543210fedcba9876543210"))
	if _, err := other.Open(sealed, "ak_1"); err == nil {
		t.Error("a value opened under another key")
	}
}

// TestSignedDiagnostics: each refusal of a signed request shows the
// canonical string the server signed and the timestamps it accepts, never
// the secret or the expected signature; with diagnostics off, none.
func TestSignedDiagnostics(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			f := newKitFixture(t, engine, false)
			ts := strconv.FormatInt(f.now.Unix(), 10)
			signed := func(rawQuery string) string {
				pairs, _ := sigbase.ParseRawQuery(rawQuery)
				return sigbase.Sign([]byte(f.apiSecret), sigbase.CanonicalString("/v1/dogs", pairs))
			}
			q := "Note=rex%20%26%20co&timestamp=" + ts + "&apiKey=" + f.apiKey
			good := signed(q)
			canonical := "/v1/dogs?apikey=" + f.apiKey + "&note=rex & co&timestamp=" + ts
			for _, tc := range []struct {
				name, query string
			}{
				{"wrong signature", q + "&signature=" + strings.Repeat("0", 64)},
				{"altered query", strings.Replace(q, "rex", "max", 1) + "&signature=" + good},
				{"old timestamp", "Note=rex%20%26%20co&timestamp=1&apiKey=" + f.apiKey + "&signature=" + good},
				{"unknown key", strings.Replace(q, f.apiKey, "ak_nope", 1) + "&signature=" + good},
			} {
				r := httptest.NewRequest("GET", fixtureBase+"/v1/dogs?"+tc.query, nil)
				_, err := f.kit.Chain.Authenticate(r)
				if yard.ErrorCode(err) != yard.EUNAUTHORIZED {
					t.Fatalf("%s: %v, want 401", tc.name, err)
				}
				d := diagnostics(t, err)
				pairs, _ := sigbase.ParseRawQuery(tc.query)
				if want := sigbase.CanonicalString("/v1/dogs", pairs); d.CanonicalString != want || d.AcceptableTimestamps != "1799999700-1800000300" {
					t.Errorf("%s: got %+v, want canonical string %q and 1799999700-1800000300", tc.name, d, want)
				}
				if strings.Contains(d.CanonicalString, f.apiSecret) || strings.Contains(d.CanonicalString, good) && tc.name == "wrong signature" {
					t.Errorf("%s: the diagnostics show the secret or the expected signature: %+v", tc.name, d)
				}
			}
			// The worked example of docs/auth.md: the canonical string of a
			// right request is the one the client signs.
			r := httptest.NewRequest("GET", fixtureBase+"/v1/dogs?"+q+"&signature="+strings.Repeat("0", 64), nil)
			_, err := f.kit.Chain.Authenticate(r)
			if d := diagnostics(t, err); d.CanonicalString != canonical {
				t.Errorf("canonical string %q, want %q", d.CanonicalString, canonical)
			}
			r = httptest.NewRequest("GET", fixtureBase+"/v1/dogs?"+q+"&signature="+good, nil)
			if p, err := f.kit.Chain.Authenticate(r); err != nil || p.UserID != f.alice.ID {
				t.Fatalf("the right signature: %v", err)
			}
		})
	}
	f := newKitFixture(t, store.SQLite, true)
	r := httptest.NewRequest("GET", fixtureBase+"/v1/dogs?timestamp=1&apiKey="+f.apiKey+"&signature="+strings.Repeat("0", 64), nil)
	if _, err := f.kit.Chain.Authenticate(r); yard.ErrorCode(err) != yard.EUNAUTHORIZED || DiagnosticsOf(err) != nil {
		t.Errorf("diagnostics off: %v with %+v, want a plain 401", err, DiagnosticsOf(err))
	}
}
