package auth

import (
	"testing"
	"time"
)

// RFC 7616 §3.9.1: the worked example, with SHA-256 and with MD5.
func TestDigestResponseRFC7616Example(t *testing.T) {
	const (
		user   = "Mufasa"
		pass   = "Circle of Life"
		realm  = "http-auth@example.org"
		nonce  = "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"
		cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
	)
	for _, tc := range []struct{ alg, want string }{
		{DigestSHA256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"},
		{DigestMD5, "8ca523f5e9506fed4657c9700eebdbec"},
	} {
		ha1 := HA1(tc.alg, user, realm, pass)
		got := DigestResponse(tc.alg, ha1, "GET", "/dir/index.html", nonce, "00000001", cnonce, "auth")
		if got != tc.want {
			t.Errorf("%s response = %s, want %s", tc.alg, got, tc.want)
		}
	}
}

func TestParseDigestParams(t *testing.T) {
	h := `username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=SHA-256,` +
		` nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",` +
		` qop=auth, response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS", x="a \"q\" b"`
	p, ok := ParseDigestParams(h)
	if !ok {
		t.Fatal("parse failed")
	}
	for k, want := range map[string]string{"username": "Mufasa", "algorithm": "SHA-256", "nc": "00000001", "qop": "auth", "uri": "/dir/index.html", "x": `a "q" b`} {
		if p[k] != want {
			t.Errorf("%s = %q, want %q", k, p[k], want)
		}
	}
	for _, bad := range []string{``, `username`, `username="open`, `a=1, a=2`, `=x`} {
		if _, ok := ParseDigestParams(bad); ok {
			t.Errorf("ParseDigestParams(%q) accepted", bad)
		}
	}
}

func TestDigestNonce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := &Digest{Secret: []byte("0123456789abcdef0123456789abcdef"), Now: func() time.Time { return now }}
	n := d.NewNonce()
	issued, ok := d.checkNonce(n)
	if !ok || !issued.Equal(now) {
		t.Fatalf("checkNonce = %v, %v; want %v, true", issued, ok, now)
	}
	if n == d.NewNonce() {
		t.Error("two nonces are equal")
	}
	other := &Digest{Secret: []byte("another secret of thirty-two by"), Now: d.Now}
	if _, ok := other.checkNonce(n); ok {
		t.Error("a nonce verified under another secret")
	}
	b := []byte(n)
	b[3] ^= 1
	if _, ok := d.checkNonce(string(b)); ok {
		t.Error("a tampered nonce verified")
	}
}
