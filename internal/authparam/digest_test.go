package authparam

import (
	"net/http"
	"reflect"
	"testing"
)

// The examples of RFC 7616 §3.9.1.
func TestAnswerDigest(t *testing.T) {
	ch := map[string]string{"realm": "http-auth@example.org", "nonce": "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
		"opaque": "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"}
	const cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"
	for alg, want := range map[string]string{
		"SHA-256": "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
		"MD5":     "8ca523f5e9506fed4657c9700eebdbec",
	} {
		a := AnswerDigest(ch, alg, "Mufasa", "Circle of Life", "GET", "/dir/index.html", "00000001", cnonce)
		if a.Response != want {
			t.Errorf("%s: response %s, want %s", alg, a.Response, want)
		}
		wantHeader := `Digest username="Mufasa", realm="http-auth@example.org", nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", uri="/dir/index.html", algorithm=` +
			alg + `, qop=auth, nc=00000001, cnonce="` + cnonce + `", response="` + want + `", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`
		if a.Authorization != wantHeader {
			t.Errorf("%s: got %s, want %s", alg, a.Authorization, wantHeader)
		}
	}
}

func TestDigestChallenges(t *testing.T) {
	h := http.Header{"Www-Authenticate": {
		`Basic realm="yard"`,
		`Digest realm="yard", qop="auth", algorithm=SHA-256, nonce="a\"b", opaque="o", Stale=true`,
		`digest realm="yard", nonce=`,
		` Digest realm="yard", algorithm=MD5, nonce="n", nonce="m"`,
	}}
	want := []map[string]string{
		{"realm": "yard", "qop": "auth", "algorithm": "SHA-256", "nonce": `a"b`, "opaque": "o", "stale": "true"},
		{"realm": "yard", "algorithm": "MD5", "nonce": "m"},
	}
	if got := DigestChallenges(h); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
