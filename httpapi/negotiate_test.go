package httpapi

import (
	"net/http"
	"testing"
)

func TestNegotiate(t *testing.T) {
	offers := []string{mediaJSON, mediaXML, mediaTextXML}
	for _, tc := range []struct{ accept, want string }{
		{"", mediaJSON},
		{"garbage", mediaJSON},
		{"*/*", mediaJSON},
		{"application/*", mediaJSON},
		{"text/*", mediaTextXML},
		{"TEXT/XML", mediaTextXML},
		{"application/xml;q=0.8, application/json;q=0.7", mediaXML},
		{"application/json;q=0.7;charset=utf-8, application/xml;q=0.8", mediaXML},
		{"application/json;q=0, */*", mediaXML},
		{"*/*;q=0.1, application/json;q=0", mediaXML},
		{"application/json;q=0.5, application/*;q=0.9", mediaXML},
		{"application/json;q=x", mediaJSON},
		{"image/png", ""},
		{"application/json;q=0, application/xml;q=0, text/xml;q=0", ""},
		{"*/json", mediaJSON}, // malformed range skipped: as if no Accept
	} {
		if got := negotiate(tc.accept, offers...); got != tc.want {
			t.Errorf("Accept %q: got %q, want %q", tc.accept, got, tc.want)
		}
	}
}

// TestPreferredWait: Prefer: wait=N is honoured up to 60 s, however large
// N is written; what is not a number of seconds is ignored.
func TestPreferredWait(t *testing.T) {
	for prefer, want := range map[string]int{
		"wait=5": 5, "wait=0": 0, "wait=60": 60, "wait=3600": 60, "respond-async, wait=12": 12,
		"wait=99999999999999999999": 60, "wait=-1": -1, "wait=1.5": -1, "wait=": -1, "wait=x": -1, "return=minimal": -1,
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Prefer", prefer)
		got, ok := preferredWait(r)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("Prefer: %s: got %d, want %d", prefer, got, want)
		}
	}
}
