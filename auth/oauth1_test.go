package auth

import "testing"

// The Authorization header of RFC 5849 §1.2's worked example (the
// signature itself is checked in internal/sigbase).
func TestParseOAuthHeaderRFC5849(t *testing.T) {
	h := `OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_token="nnch734d00sl2jdk", oauth_signature_method="HMAC-SHA1", oauth_timestamp="137131202", oauth_nonce="chapoH", oauth_signature="MdpQcU8iPSUjWoN%2FUDMsK2sui9I%3D"`
	got, err := ParseOAuthHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[0] != [2]string{"realm", "Photos"} || got[6] != [2]string{"oauth_signature", "MdpQcU8iPSUjWoN/UDMsK2sui9I="} {
		t.Errorf("parsed header = %q", got)
	}
	for _, bad := range []string{`OAuth`, `OAuth a=b`, `OAuth a="b`, `OAuth a="b" c="d"`, `OAuth a="b",`, `Bearer x`} {
		if _, err := ParseOAuthHeader(bad); err == nil {
			t.Errorf("ParseOAuthHeader(%q) accepted", bad)
		}
	}
}

func TestOAuthCallbackAllowed(t *testing.T) {
	for _, tc := range []struct {
		registered, cb string
		want           bool
	}{
		{"", "https://any.example/x", true},
		{"https://p.example/cb", "oob", true},
		{"https://p.example/cb", "https://p.example/cb?state=1", true},
		{"https://p.example/cb", "HTTPS://P.EXAMPLE/cb", true},
		{"https://p.example", "https://p.example/", true},
		{"https://p.example/cb", "https://p.example/cb/x", false},
		{"https://p.example/cb", "http://p.example/cb", false},
		{"https://p.example/cb", "https://p.example:8443/cb", false},
		{"https://p.example/cb", "https://evil.example/cb", false},
	} {
		if got := callbackAllowed(tc.registered, tc.cb); got != tc.want {
			t.Errorf("callbackAllowed(%q, %q) = %v, want %v", tc.registered, tc.cb, got, tc.want)
		}
	}
}
