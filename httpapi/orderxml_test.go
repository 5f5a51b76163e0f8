package httpapi

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"reflect"
	"testing"

	"github.com/yard-api/yard"
)

// encodeOrderInput writes the fields present in an order body as XML, the
// way a client would send them.
func encodeOrderInput(in orderInput) []byte {
	var b bytes.Buffer
	b.WriteString("<order>")
	text := func(name, v string) {
		b.WriteString("<" + name + ">")
		_ = xml.EscapeText(&b, []byte(v))
		b.WriteString("</" + name + ">")
	}
	if in.ID != nil {
		text("id", *in.ID)
	}
	if in.CustomerID != nil {
		text("customerId", *in.CustomerID)
	}
	if in.Status != nil {
		text("status", *in.Status)
	}
	if in.Canceled != nil {
		text("canceled", map[bool]string{true: "true", false: "false"}[*in.Canceled])
	}
	for name, raw := range map[string]json.RawMessage{"createdAt": in.CreatedAt, "updatedAt": in.UpdatedAt} {
		if raw == nil {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		text(name, s)
	}
	b.WriteString("</order>")
	return b.Bytes()
}

// FuzzOrderXML checks the strict XML order decoder on any input: it never
// panics, refuses only with a 400 error (malformed or invalid), and what it
// accepts it reads the same again once written back as XML.
func FuzzOrderXML(f *testing.F) {
	f.Add([]byte(`<order><id>1</id><customerId>c</customerId><status>placed</status><canceled>true</canceled></order>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := decodeOrderXML(data)
		if err != nil {
			if c := yard.ErrorCode(err); c != yard.EMALFORMED && c != yard.EINVALID {
				t.Fatalf("error code %q (%v), want malformed or invalid", c, err)
			}
			return
		}
		again, err := decodeOrderXML(encodeOrderInput(in))
		if err != nil {
			t.Fatalf("accepted %q, but not its re-encoding %q: %v", data, encodeOrderInput(in), err)
		}
		if !reflect.DeepEqual(in, again) {
			t.Fatalf("re-encoding changed the order: %+v, then %+v", in, again)
		}
	})
}

func TestDecodeOrderXML(t *testing.T) {
	in, err := decodeOrderXML([]byte("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!-- an order -->\n<order>\n <id> o-1 </id>\n <customerId><![CDATA[c&1]]></customerId>\n" +
		" <status>shipped</status>\n <canceled>1</canceled>\n <createdAt>2026-01-02T03:04:05.678Z</createdAt>\n <updatedAt>1700000000</updatedAt>\n</order>\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *in.ID != "o-1" || *in.CustomerID != "c&1" || *in.Status != "shipped" || !*in.Canceled ||
		string(in.CreatedAt) != `"2026-01-02T03:04:05.678Z"` || string(in.UpdatedAt) != "1700000000" {
		t.Fatalf("got %+v", in)
	}
	in, err = decodeOrderXML([]byte(`<order/>`))
	if err != nil || in.ID != nil || in.Canceled != nil {
		t.Fatalf("empty order: got %+v, %v", in, err)
	}
}
