package sigbase

import (
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// oauthSign signs a base string given as a string (RFC 5849 §3.4.2 and
// §3.4.4), for comparing OAuthSignature's one buffer with the strings.
func oauthSign(method, base, consumerSecret, tokenSecret string) (string, error) {
	return signBase(method, []byte(base), consumerSecret, tokenSecret)
}

// normalizeParams returns the normalized request parameters of RFC 5849
// §3.4.1.3.2: each name and value encoded, sorted by name and then by
// value, joined as name=value with '&'.
func normalizeParams(params [][2]string) string {
	return joinSorted(encodeParams(slices.Clone(params)))
}

// RFC 5849 §1.2's worked example: the signed call for the photo, with the
// consumer's and the access token's credentials.
func TestOAuthRFC5849WorkedExample(t *testing.T) {
	u, _ := url.Parse("http://photos.example.net/photos?file=vacation.jpg&size=original")
	params, err := ParseRawQuery(u.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	params = append(params,
		[2]string{"oauth_consumer_key", "dpf43f3p2l4k3l03"},
		[2]string{"oauth_token", "nnch734d00sl2jdk"},
		[2]string{"oauth_signature_method", "HMAC-SHA1"},
		[2]string{"oauth_timestamp", "137131202"},
		[2]string{"oauth_nonce", "chapoH"},
	)
	if sig, _ := OAuthSignature(OAuthHMACSHA1, "GET", OAuthBaseURI(u), slices.Clone(params), "kd94hf93k423kf44", "pfkkdhi9sl3r4s00"); sig != "MdpQcU8iPSUjWoN/UDMsK2sui9I=" {
		t.Errorf("OAuthSignature: got %s", sig)
	}
	base := OAuthBaseString("GET", OAuthBaseURI(u), params)
	wantBase := "GET&http%3A%2F%2Fphotos.example.net%2Fphotos&file%3Dvacation.jpg%26oauth_consumer_key%3Ddpf43f3p2l4k3l03%26oauth_nonce%3DchapoH%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D137131202%26oauth_token%3Dnnch734d00sl2jdk%26size%3Doriginal"
	if base != wantBase {
		t.Fatalf("base string:\n got %s\nwant %s", base, wantBase)
	}
	sig, err := oauthSign(OAuthHMACSHA1, base, "kd94hf93k423kf44", "pfkkdhi9sl3r4s00")
	if err != nil {
		t.Fatal(err)
	}
	if want := "MdpQcU8iPSUjWoN/UDMsK2sui9I="; sig != want {
		t.Errorf("signature: got %s, want %s", sig, want)
	}
}

// RFC 5849 §3.4.1.3's example of parameter normalisation and §3.6's
// encoding.
func TestOAuthNormalizeAndEncode(t *testing.T) {
	params := [][2]string{
		{"b5", "=%3D"}, {"a3", "a"}, {"c@", ""}, {"a2", "r b"},
		{"oauth_consumer_key", "9djdj82h48djs9d2"}, {"oauth_token", "kkk9d7dh3k39sjv7"},
		{"oauth_signature_method", "HMAC-SHA1"}, {"oauth_timestamp", "137131201"},
		{"oauth_nonce", "7d8f3e4a"}, {"c2", ""}, {"a3", "2 q"},
	}
	want := "a2=r%20b&a3=2%20q&a3=a&b5=%3D%253D&c%40=&c2=&oauth_consumer_key=9djdj82h48djs9d2&oauth_nonce=7d8f3e4a&oauth_signature_method=HMAC-SHA1&oauth_timestamp=137131201&oauth_token=kkk9d7dh3k39sjv7"
	if got := normalizeParams(params); got != want {
		t.Errorf("normalized:\n got %s\nwant %s", got, want)
	}
	for in, want := range map[string]string{"abc-._~XYZ09": "abc-._~XYZ09", "a b+c/é*": "a%20b%2Bc%2F%C3%A9%2A", "": ""} {
		if got := OAuthEncode(in); got != want {
			t.Errorf("OAuthEncode(%q) = %q, want %q", in, got, want)
		}
	}
	for raw, want := range map[string]string{
		"HTTPS://Example.COM:443/a%20b?x=1": "https://example.com/a%20b",
		"http://example.com:8080":           "http://example.com:8080/",
		"https://[::1]:8443/r/v/X":          "https://[::1]:8443/r/v/X",
	} {
		u, _ := url.Parse(raw)
		if got := OAuthBaseURI(u); got != want {
			t.Errorf("OAuthBaseURI(%s) = %s, want %s", raw, got, want)
		}
	}
	if sig, _ := oauthSign(OAuthPlaintext, "ignored", "cs&x", ""); sig != "cs%26x&" {
		t.Errorf("PLAINTEXT = %q", sig)
	}
}

// The base string and the one-buffer signer agree with RFC 5849 §3.4.1
// written out literally (encode each name and value, sort the encoded
// pairs, join them, encode the result again), on random parameters that
// mix characters kept as they are with ones encoded, whose encodings sort
// differently from the raw bytes (' ' < '-' but "%20" > "-").
func TestOAuthSignatureMatchesBaseString(t *testing.T) {
	literal := func(method, uri string, params [][2]string) string {
		pairs := make([]string, len(params))
		for i, p := range params {
			pairs[i] = OAuthEncode(p[0]) + "\x00" + OAuthEncode(p[1])
		}
		slices.Sort(pairs) // by name, then by value: no encoded byte is below 0x00
		for i, p := range pairs {
			pairs[i] = strings.Replace(p, "\x00", "=", 1)
		}
		return strings.ToUpper(method) + "&" + OAuthEncode(uri) + "&" + OAuthEncode(strings.Join(pairs, "&"))
	}
	rng := rand.New(rand.NewPCG(5849, 1))
	alphabet := []byte("aZ09-._~ %&=+/é\x7f")
	word := func() string {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 2000 {
		params := make([][2]string, rng.IntN(6))
		for i := range params {
			params[i] = [2]string{word(), word()}
		}
		base := literal("get", "https://h/p%20q", params)
		if got := OAuthBaseString("get", "https://h/p%20q", params); got != base {
			t.Fatalf("OAuthBaseString(%q):\n got %s\nwant %s", params, got, base)
		}
		for _, m := range []string{OAuthHMACSHA1, OAuthHMACSHA256, OAuthPlaintext} {
			cs, ts := word(), word()
			want, err := oauthSign(m, base, cs, ts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := OAuthSignature(m, "get", "https://h/p%20q", slices.Clone(params), cs, ts)
			if err != nil || got != want {
				t.Fatalf("OAuthSignature(%s, %q) = %q, %v; want %q", m, params, got, err, want)
			}
		}
	}
	if _, err := OAuthSignature("RSA-SHA1", "GET", "https://h/", nil, "", ""); err != ErrOAuthMethod {
		t.Errorf("RSA-SHA1: %v, want ErrOAuthMethod", err)
	}
}

// BenchmarkOAuthSignature: signing one request the way the client and the
// server do, against the string functions (OAuthBaseString, then oauthSign),
// over requests from a seeded generator: a path, zero to four query
// parameters, some needing percent-encoding, and the protocol parameters
// with a fresh nonce.
func BenchmarkOAuthSignature(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1024
	type req struct {
		uri    string
		params [][2]string
	}
	reqs := make([]req, n)
	for i := range reqs {
		var params [][2]string
		for range rng.IntN(5) {
			params = append(params, [2]string{[]string{"q.color.eq", "max", "offset", "name"}[rng.IntN(4)], []string{"red", "50", "Rex & co", "a;b,c"}[rng.IntN(4)]})
		}
		params = append(params,
			[2]string{"oauth_consumer_key", "ck_Zx1kd92jJd8a0Qm3nB7vYt"},
			[2]string{"oauth_nonce", strconv.FormatUint(rng.Uint64(), 36)},
			[2]string{"oauth_signature_method", OAuthHMACSHA1},
			[2]string{"oauth_timestamp", strconv.Itoa(1763800000 + rng.IntN(1000))},
			[2]string{"oauth_token", "at_Qe8m2Lx9wT0pVb4nR6cZs1"},
			[2]string{"oauth_version", "1.0"})
		reqs[i] = req{"https://yard.example/v1/dogs/" + strconv.Itoa(rng.IntN(1e6)) + "/", params}
	}
	b.Run("one buffer", func(b *testing.B) {
		b.ReportAllocs()
		scratch := make([][2]string, 0, 16)
		for i := 0; b.Loop(); i++ {
			r := reqs[i%n]
			scratch = append(scratch[:0], r.params...)
			if _, err := OAuthSignature(OAuthHMACSHA1, "GET", r.uri, scratch, "cs_secret", "ts_secret"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strings", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r := reqs[i%n]
			if _, err := oauthSign(OAuthHMACSHA1, OAuthBaseString("GET", r.uri, r.params), "cs_secret", "ts_secret"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
