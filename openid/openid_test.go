package openid

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestKV(t *testing.T) {
	m := Message{"ns": NS, "mode": "error", "error": "a:b c"}
	b, err := m.KV()
	if err != nil {
		t.Fatal(err)
	}
	if want := "error:a:b c\nmode:error\nns:" + NS + "\n"; string(b) != want {
		t.Fatalf("KV = %q, want %q", b, want)
	}
	back, err := ParseKV(b)
	if err != nil || len(back) != 3 || back["error"] != "a:b c" {
		t.Fatalf("ParseKV = %v, %v", back, err)
	}
	for _, bad := range []Message{{"a\nb": "x"}, {"a:b": "x"}, {"a": "x\ny"}, {"": "x"}} {
		if _, err := bad.KV(); err == nil {
			t.Errorf("KV(%q) encoded", bad)
		}
	}
	for _, bad := range []string{"a:b", "nokey\n", "a:1\na:2\n", ":x\n"} {
		if _, err := ParseKV([]byte(bad)); err == nil {
			t.Errorf("ParseKV(%q) accepted", bad)
		}
	}
}

func TestFromValues(t *testing.T) {
	m, err := FromValues(url.Values{"openid.mode": {"x"}, "other": {"y"}})
	if err != nil || len(m) != 1 || m["mode"] != "x" {
		t.Fatalf("FromValues = %v, %v", m, err)
	}
	if _, err := FromValues(url.Values{"openid.mode": {"x", "y"}}); err == nil {
		t.Fatal("a repeated field was accepted")
	}
	if got := m.Values().Get("openid.mode"); got != "x" {
		t.Fatalf("Values: got %q", got)
	}
}

// TestDHAssociation does what a relying party does: it sends its public
// key, and decrypts the MAC key from the answer with the shared secret it
// computes on its side.
func TestDHAssociation(t *testing.T) {
	for _, tc := range []struct {
		assoc, session string
	}{
		{HMACSHA256, DHSHA256},
		{HMACSHA1, DHSHA1},
	} {
		t.Run(tc.session, func(t *testing.T) {
			rp, err := NewDHKey(DefaultModulus, DefaultGenerator)
			if err != nil {
				t.Fatal(err)
			}
			req, err := ParseAssociate(Message{"mode": ModeAssociate, "assoc_type": tc.assoc, "session_type": tc.session,
				"dh_consumer_public": IntB64(rp.Public)})
			if err != nil {
				t.Fatal(err)
			}
			key := NewMACKey(tc.assoc)
			resp, err := AssociateResponse(req, "h1", key, 3600)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := resp["mac_key"]; ok {
				t.Fatal("a DH answer carries the plain MAC key")
			}
			serverPub, err := B64Int(resp["dh_server_public"])
			if err != nil {
				t.Fatal(err)
			}
			// The relying party's side, written out: H(btwoc(B^a mod p)) XOR enc_mac_key.
			shared := new(big.Int).Exp(serverPub, rp.Private, DefaultModulus)
			var sum []byte
			if tc.session == DHSHA256 {
				s := sha256.Sum256(Btwoc(shared))
				sum = s[:]
			} else {
				s := sha1.Sum(Btwoc(shared))
				sum = s[:]
			}
			enc, _ := base64.StdEncoding.DecodeString(resp["enc_mac_key"])
			if len(enc) != len(sum) {
				t.Fatalf("enc_mac_key has %d bytes, want %d", len(enc), len(sum))
			}
			got := make([]byte, len(enc))
			for i := range enc {
				got[i] = enc[i] ^ sum[i]
			}
			if !hmac.Equal(got, key) {
				t.Fatal("the relying party decrypted another MAC key")
			}
		})
	}
}

func TestAssociateRequests(t *testing.T) {
	rp, _ := NewDHKey(DefaultModulus, DefaultGenerator)
	pub := IntB64(rp.Public)
	for _, tc := range []struct {
		name        string
		m           Message
		unsupported bool
		bad         bool
	}{
		{"plain sha256", Message{"assoc_type": HMACSHA256, "session_type": NoEncryption}, false, false},
		{"plain sha1", Message{"assoc_type": HMACSHA1, "session_type": NoEncryption}, false, false},
		{"DH-SHA1 with HMAC-SHA256", Message{"assoc_type": HMACSHA256, "session_type": DHSHA1, "dh_consumer_public": pub}, true, false},
		{"unknown assoc", Message{"assoc_type": "HMAC-MD5", "session_type": NoEncryption}, true, false},
		{"unknown session", Message{"assoc_type": HMACSHA1, "session_type": "DH-MD5"}, true, false},
		{"no DH key", Message{"assoc_type": HMACSHA1, "session_type": DHSHA1}, false, true},
		{"bad DH key", Message{"assoc_type": HMACSHA1, "session_type": DHSHA1, "dh_consumer_public": "!!"}, false, true},
		{"small modulus", Message{"assoc_type": HMACSHA1, "session_type": DHSHA1, "dh_consumer_public": pub, "dh_modulus": IntB64(big.NewInt(23))}, false, true},
	} {
		_, err := ParseAssociate(tc.m)
		switch {
		case tc.unsupported && !errors.Is(err, ErrUnsupportedType):
			t.Errorf("%s: got %v, want unsupported-type", tc.name, err)
		case tc.bad && (err == nil || errors.Is(err, ErrUnsupportedType)):
			t.Errorf("%s: got %v, want a malformed-request error", tc.name, err)
		case !tc.unsupported && !tc.bad && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A public key of 1 or p-1 would make the shared secret guessable.
	req, _ := ParseAssociate(Message{"assoc_type": HMACSHA1, "session_type": DHSHA1, "dh_consumer_public": IntB64(big.NewInt(1))})
	if _, err := AssociateResponse(req, "h", NewMACKey(HMACSHA1), 60); err == nil {
		t.Error("a public key of 1 was accepted")
	}
}

func TestSignVerify(t *testing.T) {
	key := NewMACKey(HMACSHA256)
	m := Message{"ns": NS, "mode": ModeIDRes, "op_endpoint": "https://op/openid/login", "return_to": "https://rp/back",
		"response_nonce": NewNonce(time.Now()), "assoc_handle": "h", "claimed_id": "https://op/openid/id/a", "identity": "https://op/openid/id/a"}
	if err := SignMessage(HMACSHA256, key, m, RequiredSigned); err != nil {
		t.Fatal(err)
	}
	if err := Verify(HMACSHA256, key, m); err != nil {
		t.Fatalf("Verify of a good message: %v", err)
	}
	changed := Message{}
	for k, v := range m {
		changed[k] = v
	}
	changed["claimed_id"] = "https://op/openid/id/b"
	if Verify(HMACSHA256, key, changed) == nil {
		t.Error("a changed signed field verified")
	}
	changed = Message{}
	for k, v := range m {
		changed[k] = v
	}
	changed["sig"] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	if Verify(HMACSHA256, key, changed) == nil {
		t.Error("a tampered sig verified")
	}
	// Dropping identity from the signed list (a field present but unsigned).
	changed["signed"] = "op_endpoint,return_to,response_nonce,assoc_handle,claimed_id"
	changed["sig"], _ = Sign(HMACSHA256, key, changed, strings.Split(changed["signed"], ","))
	if Verify(HMACSHA256, key, changed) == nil {
		t.Error("an assertion leaving identity unsigned verified")
	}
	if Verify(HMACSHA1, key, m) == nil {
		t.Error("verified with the wrong association type")
	}
}

func TestRealm(t *testing.T) {
	for _, tc := range []struct {
		realm, returnTo string
		want            bool
	}{
		{"https://rp.example.org/", "https://rp.example.org/back?x=1", true},
		{"https://rp.example.org", "https://rp.example.org/", true},
		{"https://rp.example.org/app/", "https://rp.example.org/app/back", true},
		{"https://rp.example.org/app", "https://rp.example.org/app/back", true},
		{"https://rp.example.org/app", "https://rp.example.org/application", false},
		{"https://rp.example.org/app/", "https://rp.example.org/other", false},
		{"https://*.example.org/", "https://a.b.example.org/back", true},
		{"https://*.example.org/", "https://example.org/back", true},
		{"https://*.example.org/", "https://evilexample.org/back", false},
		{"https://rp.example.org/", "https://sub.rp.example.org/", false},
		{"https://rp.example.org/", "http://rp.example.org/", false},
		{"https://rp.example.org/", "https://rp.example.org:8443/", false},
		{"https://rp.example.org:443/", "https://rp.example.org/", true},
		{"https://RP.example.org/", "https://rp.EXAMPLE.org/", true},
		{"https://rp.example.org/", "https://rp.example.org/#frag", false},
		{"https://rp.example.org/", "https://user@rp.example.org/", false},
	} {
		r, err := ParseRealm(tc.realm)
		if err != nil {
			t.Errorf("ParseRealm(%q): %v", tc.realm, err)
			continue
		}
		if got := r.Matches(tc.returnTo); got != tc.want {
			t.Errorf("realm %s, return_to %s: got %v, want %v", tc.realm, tc.returnTo, got, tc.want)
		}
	}
	for _, bad := range []string{"rp.example.org", "ftp://rp/", "https://*.com/", "https://a.*.example.org/", "https://rp/#x", "https://u@rp/", "https://*.127.0.0.1/"} {
		if _, err := ParseRealm(bad); err == nil {
			t.Errorf("ParseRealm(%q) accepted", bad)
		}
	}
}

func TestNonce(t *testing.T) {
	now := time.Date(2026, 11, 23, 7, 30, 15, 999, time.UTC)
	n := NewNonce(now)
	if !strings.HasPrefix(n, "2026-11-23T07:30:15Z") || len(n) != 36 {
		t.Fatalf("NewNonce = %q", n)
	}
	if n == NewNonce(now) {
		t.Fatal("two nonces of one second are equal")
	}
	got, err := NonceTime(n)
	if err != nil || !got.Equal(now.Truncate(time.Second)) {
		t.Fatalf("NonceTime = %v, %v", got, err)
	}
	for _, bad := range []string{"", "2026-11-23 07:30:15Zabc", "2026-11-23T07:30:15Zab c", "2026-11-23T07:30:15.5Z", strings.Repeat("x", 300)} {
		if _, err := NonceTime(bad); err == nil {
			t.Errorf("NonceTime(%q) accepted", bad)
		}
	}
}

func TestXRDS(t *testing.T) {
	var doc struct {
		XRD struct {
			Service []struct {
				Type    []string `xml:"Type"`
				URI     string   `xml:"URI"`
				LocalID string   `xml:"LocalID"`
			} `xml:"Service"`
		} `xml:"XRD"`
	}
	if err := xml.Unmarshal(XRDS("https://op/openid/login", "https://op/openid/id/a"), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.XRD.Service
	if len(s) != 1 || s[0].Type[0] != TypeSignon || s[0].URI != "https://op/openid/login" || s[0].LocalID != "https://op/openid/id/a" {
		t.Fatalf("claimed identifier XRDS: %+v", s)
	}
	raw := string(XRDS("https://op/openid/login", ""))
	if !strings.Contains(raw, `xmlns="xri://$xrds"`) || !strings.Contains(raw, "<Type>"+TypeServer+"</Type>") || strings.Contains(raw, "LocalID") {
		t.Fatalf("OP identifier XRDS: %s", raw)
	}
}

func TestSReg(t *testing.T) {
	r := ParseSReg(Message{"ns.sr": NSSReg, "sr.required": "email", "sr.optional": "nickname,dob,email, fullname"})
	if r == nil || r.Alias != "sr" {
		t.Fatalf("ParseSReg = %+v", r)
	}
	if got := strings.Join(r.Fields(), ","); got != "email,nickname,fullname" {
		t.Fatalf("Fields = %q", got)
	}
	if ParseSReg(Message{"mode": "checkid_setup"}) != nil {
		t.Fatal("a request without sreg has an sreg request")
	}
	if r := ParseSReg(Message{"sreg.optional": "nickname"}); r == nil || r.Alias != "sreg" {
		t.Fatalf("sreg 1.0 without a namespace: %+v", r)
	}
}
