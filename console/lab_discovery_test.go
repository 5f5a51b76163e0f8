package console

import (
	"testing"

	"github.com/yard-api/yard/openid"
)

// The lab's discovery reads the provider from the XRDS document the
// server writes (openid.XRDS), and, without one, from an HTML page's link
// elements in either attribute order (OpenID 2.0 §7.3.3).
func TestLabDiscovery(t *testing.T) {
	const ep, id = "https://yard.example/openid/login", "https://yard.example/openid/id/alice"
	for _, tc := range []struct {
		name, local string
		body        []byte
	}{
		{"signon", id, openid.XRDS(ep, id)},
		{"server", "", openid.XRDS(ep, "")},
	} {
		gotEP, gotLocal, ok := providerIn(tc.body)
		if !ok || gotEP != ep || gotLocal != tc.local {
			t.Errorf("XRDS %s: got %q %q %v, want %q %q true", tc.name, gotEP, gotLocal, ok, ep, tc.local)
		}
	}
	if _, _, ok := providerIn([]byte("<html></html>")); ok {
		t.Error("an HTML page read as XRDS")
	}
	for _, page := range []string{
		`<head><link rel="openid2.provider" href="` + ep + `"><link rel="openid2.local_id" href="` + id + `"></head>`,
		`<head><LINK href="` + ep + `" rel="openid2.provider openid.server"><link href="` + id + `" rel="openid2.local_id"></head>`,
	} {
		gotEP, gotLocal, ok := providerInHTML([]byte(page))
		if !ok || gotEP != ep || gotLocal != id {
			t.Errorf("HTML %s: got %q %q %v, want %q %q true", page, gotEP, gotLocal, ok, ep, id)
		}
	}
	if _, _, ok := providerInHTML([]byte(`<link rel="stylesheet" href="/a.css">`)); ok {
		t.Error("a page without openid2.provider gives a provider")
	}
}
