// Package openid is the protocol of an OpenID Authentication 2.0 provider
// (https://openid.net/specs/openid-authentication-2_0.html): key-value form
// encoding, associations (HMAC-SHA1/SHA256, plain or Diffie-Hellman),
// signing and verifying assertions, realm matching, response nonces,
// XRDS discovery documents and Simple Registration 1.1 fields.
//
// It knows nothing of HTTP handlers or the store: the provider endpoint in
// package httpapi uses it, and associations and nonces live in the store so
// that every server process shares them.
package openid

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/yard-api/yard/internal/kvform"
)

// Namespaces and well-known identifiers (OpenID 2.0 §4.1.2, §7.3.2.1,
// Simple Registration 1.1 §4).
const (
	NS               = "http://specs.openid.net/auth/2.0"
	TypeServer       = NS + "/server"
	TypeSignon       = NS + "/signon"
	IdentifierSelect = NS + "/identifier_select"
	NSSReg           = "http://openid.net/extensions/sreg/1.1"
	// NSSReg10 is the namespace Simple Registration 1.0 relying parties
	// use; it is read like 1.1.
	NSSReg10 = "http://openid.net/sreg/1.0"
)

// Modes of OpenID 2.0 messages.
const (
	ModeAssociate           = "associate"
	ModeCheckIDSetup        = "checkid_setup"
	ModeCheckIDImmediate    = "checkid_immediate"
	ModeCheckAuthentication = "check_authentication"
	ModeIDRes               = "id_res"
	ModeCancel              = "cancel"
	ModeSetupNeeded         = "setup_needed"
	ModeError               = "error"
)

// SRegFields are the Simple Registration fields this provider can share,
// in the order it lists them.
var SRegFields = []string{"nickname", "email", "fullname"}

// Message is an OpenID message: its keys without the "openid." prefix.
type Message map[string]string

// FromValues reads the openid.* fields of a query or form. A field given
// twice is an error (a message is a map; OpenID 2.0 §4.1).
func FromValues(v url.Values) (Message, error) {
	m := Message{}
	for k, vs := range v {
		name, ok := strings.CutPrefix(k, "openid.")
		if !ok {
			continue
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("the field openid.%s is repeated", name)
		}
		m[name] = vs[0]
	}
	return m, nil
}

// Values returns the message as openid.* query or form fields.
func (m Message) Values() url.Values {
	v := url.Values{}
	for k, s := range m {
		v.Set("openid."+k, s)
	}
	return v
}

// KV encodes the message in key-value form (OpenID 2.0 §4.1.1), keys in
// sorted order. Keys must not hold ':' or a newline; values no newline.
func (m Message) KV() ([]byte, error) {
	return kvEncode(slices.Sorted(maps.Keys(m)), m)
}

func kvEncode(keys []string, m Message) ([]byte, error) {
	var out []byte
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return nil, fmt.Errorf("key-value form: no field %q", k)
		}
		if k == "" || strings.ContainsAny(k, ":\n") || strings.Contains(v, "\n") {
			return nil, fmt.Errorf("key-value form: field %q cannot be encoded", k)
		}
		out = append(out, k+":"+v+"\n"...)
	}
	return out, nil
}

// ParseKV decodes a key-value form body (OpenID 2.0 §4.1.1).
func ParseKV(body []byte) (Message, error) {
	return kvform.Parse(body)
}

// SRegRequest is what a relying party asked with Simple Registration.
type SRegRequest struct {
	// Alias is the extension's alias in the request ("sreg" usually).
	Alias    string
	Required []string
	Optional []string
	// PolicyURL is the relying party's privacy policy, if given.
	PolicyURL string
}

// Fields returns the requested fields this provider knows, required first.
func (r *SRegRequest) Fields() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, f := range append(slices.Clone(r.Required), r.Optional...) {
		if slices.Contains(SRegFields, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// ParseSReg returns the Simple Registration request of m, or nil. An
// OpenID 2.0 request names the extension with openid.ns.<alias>; the alias
// "sreg" without a namespace is accepted too (as relying parties written
// for 1.0 send it).
func ParseSReg(m Message) *SRegRequest {
	alias := ""
	for k, v := range m {
		if a, ok := strings.CutPrefix(k, "ns."); ok && (v == NSSReg || v == NSSReg10) {
			alias = a
			break
		}
	}
	if alias == "" {
		_, req := m["sreg.required"]
		_, opt := m["sreg.optional"]
		if !req && !opt {
			return nil
		}
		alias = "sreg"
	}
	split := func(s string) []string {
		var out []string
		for f := range strings.SplitSeq(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
		return out
	}
	return &SRegRequest{Alias: alias, Required: split(m[alias+".required"]), Optional: split(m[alias+".optional"]),
		PolicyURL: m[alias+".policy_url"]}
}
