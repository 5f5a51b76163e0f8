package httpapi

import "testing"

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
