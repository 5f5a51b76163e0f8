package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
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

// digestAuth returns a Digest Authorization header for alice's password
// over fields (a field "" is left out), with the response computed from
// them unless fields sets it.
func digestAuth(method string, fields map[string]string) string {
	f := map[string]string{"username": "alice", "realm": Realm, "uri": "/v1/dogs", "qop": "auth", "nc": "00000001",
		"cnonce": "0a4f113b", "algorithm": DigestSHA256}
	for k, v := range fields {
		f[k] = v
	}
	if _, ok := fields["response"]; !ok {
		alg := f["algorithm"]
		f["response"] = DigestResponse(alg, HA1(alg, "alice", Realm, fixturePassword), method, f["uri"], f["nonce"], f["nc"], f["cnonce"], f["qop"])
	}
	h := "Digest "
	for _, k := range []string{"username", "realm", "nonce", "uri", "algorithm", "qop", "nc", "cnonce", "response", "userhash"} {
		if f[k] == "" {
			continue
		}
		if h != "Digest " {
			h += ", "
		}
		if k == "nc" || k == "qop" || k == "algorithm" {
			h += k + "=" + f[k]
		} else {
			h += k + `="` + f[k] + `"`
		}
	}
	return h
}

// TestDigestDiagnostics: each Digest refusal names the refused field
// (the uri one with the request-target the server compared), never the
// expected response or HA1; a stale nonce gets stale=true; with
// diagnostics off, no field.
func TestDigestDiagnostics(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			f := newKitFixture(t, engine, false)
			d := f.kit.Digest
			send := func(h string) error {
				r := httptest.NewRequest("GET", fixtureBase+"/v1/dogs", nil)
				r.Header.Set("Authorization", h)
				_, err := f.kit.Chain.Authenticate(r)
				return err
			}
			forged := []byte(d.NewNonce())
			forged[5] ^= 1
			for _, tc := range []struct {
				name   string
				fields map[string]string
				field  string
			}{
				{"other realm", map[string]string{"realm": "elsewhere"}, "realm"},
				{"unknown algorithm", map[string]string{"algorithm": "SHA-512-256"}, "algorithm"},
				{"qop auth-int", map[string]string{"qop": "auth-int"}, "qop"},
				{"uri of another resource", map[string]string{"uri": "/v1/dogs/other/"}, "uri"},
				{"nc not 8 hex digits", map[string]string{"nc": "1"}, "nc"},
				{"nonce not from this server", map[string]string{"nonce": string(forged)}, "nonce"},
				{"no cnonce", map[string]string{"cnonce": ""}, "cnonce"},
				{"wrong password", map[string]string{"response": DigestResponse(DigestSHA256, HA1(DigestSHA256, "alice", Realm, "wrong"), "GET", "/v1/dogs", "n", "00000001", "0a4f113b", "auth")}, "response"},
				{"unknown user", map[string]string{"username": "mallory"}, "response"},
				{"userhash", map[string]string{"userhash": "true"}, "userhash"},
			} {
				fields := map[string]string{"nonce": d.NewNonce()}
				for k, v := range tc.fields {
					fields[k] = v
				}
				err := send(digestAuth("GET", fields))
				if yard.ErrorCode(err) != yard.EUNAUTHORIZED {
					t.Fatalf("%s: %v, want 401", tc.name, err)
				}
				got := diagnostics(t, err)
				if got.DigestField != tc.field {
					t.Errorf("%s: digestField %q, want %q (%s)", tc.name, got.DigestField, tc.field, yard.ErrorMessage(err))
				}
				if tc.field == "uri" && got.RequestTarget != "/v1/dogs" {
					t.Errorf("%s: requestTarget %q, want /v1/dogs", tc.name, got.RequestTarget)
				}
				// Nothing derived from the password: not the expected response, not HA1.
				b, _ := json.Marshal(got)
				for _, alg := range []string{DigestSHA256, DigestMD5} {
					ha1 := HA1(alg, "alice", Realm, fixturePassword)
					right := DigestResponse(alg, ha1, "GET", "/v1/dogs", fields["nonce"], "00000001", "0a4f113b", "auth")
					if strings.Contains(string(b)+yard.ErrorMessage(err), ha1) || strings.Contains(string(b)+yard.ErrorMessage(err), right) {
						t.Errorf("%s: the refusal shows a hash of the password: %s", tc.name, b)
					}
				}
			}

			// A replayed nonce count.
			h := digestAuth("GET", map[string]string{"nonce": d.NewNonce()})
			if err := send(h); err != nil {
				t.Fatalf("first use: %v", err)
			}
			if got := diagnostics(t, send(h)); got.DigestField != "nc" {
				t.Errorf("replayed nc: digestField %q, want nc", got.DigestField)
			}

			// A right response with an expired nonce: stale=true and a new nonce.
			h = digestAuth("GET", map[string]string{"nonce": d.NewNonce()})
			f.now = f.now.Add(5*time.Minute + time.Second)
			err := send(h)
			var ye *yard.Error
			if !errors.As(err, &ye) || len(ye.Challenge) != 2 || !strings.Contains(ye.Challenge[0], "stale=true") || diagnostics(t, err).DigestField != "nonce" {
				t.Fatalf("expired nonce: %v, challenges %q, want stale=true and digestField nonce", err, ye.Challenge)
			}
			fresh := strings.Split(strings.Split(ye.Challenge[0], `nonce="`)[1], `"`)[0]
			if err := send(digestAuth("GET", map[string]string{"nonce": fresh})); err != nil {
				t.Errorf("the same credentials with the new nonce: %v", err)
			}
		})
	}

	f := newKitFixture(t, store.SQLite, true)
	r := httptest.NewRequest("GET", fixtureBase+"/v1/dogs", nil)
	r.Header.Set("Authorization", digestAuth("GET", map[string]string{"nonce": f.kit.Digest.NewNonce(), "uri": "/other"}))
	if _, err := f.kit.Chain.Authenticate(r); yard.ErrorCode(err) != yard.EUNAUTHORIZED || DiagnosticsOf(err) != nil {
		t.Errorf("diagnostics off: %v with %+v, want a plain 401", err, DiagnosticsOf(err))
	}
}

// TestDigestNonceTTL: the configured lifetime (serve --digest-nonce-ttl)
// decides when a nonce is stale.
func TestDigestNonceTTL(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := &Digest{Secret: []byte("0123456789abcdef0123456789abcdef"), Now: func() time.Time { return now }}
	if d.ttl() != 5*time.Minute {
		t.Errorf("default ttl %v, want 5m", d.ttl())
	}
	kit, err := NewKit(context.Background(), Config{Store: storetest.Open(t, store.SQLite), KeyDir: t.TempDir(), NonceTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if kit.Digest.NonceTTL != time.Second || !kit.Digest.Diagnostics {
		t.Errorf("kit Digest: NonceTTL %v, Diagnostics %v; want 1s, true", kit.Digest.NonceTTL, kit.Digest.Diagnostics)
	}
}
