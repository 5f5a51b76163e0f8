package openid

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"slices"
	"strings"
)

// Association types (OpenID 2.0 §8.3) and session types (§8.4): those this
// provider supports (Compatible says which go together).
const (
	HMACSHA1     = "HMAC-SHA1"
	HMACSHA256   = "HMAC-SHA256"
	NoEncryption = "no-encryption"
	DHSHA1       = "DH-SHA1"
	DHSHA256     = "DH-SHA256"
)

// DefaultModulus and DefaultGenerator are the Diffie-Hellman parameters a
// relying party uses when it sends none (OpenID 2.0 §8.1.2, Appendix B).
var (
	DefaultModulus, _ = new(big.Int).SetString("DCF93A0B883972EC0E19989AC5A2CE310E1D37717E8D9571BB7623731866E61E"+
		"F75A2E27898B057F9891C2E27A639C3F29B60814581CD3B2CA3986D268370557"+
		"7D45C2E7E52DC81C7A171876E5CEA74B1448BFDFAF18828EFD2519F14E45E382"+
		"6634AF1949E5B535CC829A483B8A76223E5D490A257F05BDFF16F2FB22C583AB", 16)
	DefaultGenerator = big.NewInt(2)
)

// MACSize returns the length of the MAC key of an association type, or 0
// for an unknown type.
func MACSize(assocType string) int {
	switch assocType {
	case HMACSHA1:
		return sha1.Size
	case HMACSHA256:
		return sha256.Size
	}
	return 0
}

// Compatible reports whether a session type can carry the MAC key of an
// association type: a Diffie-Hellman session XORs the key with a hash of
// the shared secret, so the hash sizes must agree (OpenID 2.0 §8.4.2).
func Compatible(assocType, sessionType string) bool {
	switch sessionType {
	case NoEncryption:
		return MACSize(assocType) > 0
	case DHSHA1:
		return assocType == HMACSHA1
	case DHSHA256:
		return assocType == HMACSHA256
	}
	return false
}

// ErrUnsupportedType is the cause of an association request this provider
// cannot honour; the answer suggests a supported pair (OpenID 2.0 §8.2.4).
var ErrUnsupportedType = errors.New("unsupported association or session type")

// Btwoc is the big-endian two's complement encoding of a non-negative
// integer (OpenID 2.0 §4.2): the shortest form, with a leading zero byte
// when the high bit is set.
func Btwoc(n *big.Int) []byte {
	b := n.Bytes()
	if len(b) == 0 || b[0]&0x80 != 0 {
		return append([]byte{0}, b...)
	}
	return b
}

// DHKey is one side's Diffie-Hellman key pair.
type DHKey struct {
	Modulus, Generator *big.Int
	Private, Public    *big.Int
}

// NewDHKey makes a random key pair for the group (p, g).
func NewDHKey(p, g *big.Int) (*DHKey, error) {
	// The private key is in [1, p-2].
	max := new(big.Int).Sub(p, big.NewInt(2))
	if max.Sign() <= 0 {
		return nil, errors.New("Diffie-Hellman modulus too small")
	}
	x, err := rand.Int(rand.Reader, max)
	if err != nil {
		return nil, err
	}
	x.Add(x, big.NewInt(1))
	return &DHKey{Modulus: p, Generator: g, Private: x, Public: new(big.Int).Exp(g, x, p)}, nil
}

// Shared returns the shared secret with the other side's public key, after
// checking that the key is in [2, p-2].
func (k *DHKey) Shared(other *big.Int) (*big.Int, error) {
	limit := new(big.Int).Sub(k.Modulus, big.NewInt(1))
	if other.Cmp(big.NewInt(2)) < 0 || other.Cmp(limit) >= 0 {
		return nil, errors.New("Diffie-Hellman public key out of range")
	}
	return new(big.Int).Exp(other, k.Private, k.Modulus), nil
}

// XORSecret encrypts or decrypts a MAC key with a Diffie-Hellman shared
// secret: H(btwoc(g^(xy) mod p)) XOR key, with H the session's hash
// (OpenID 2.0 §8.4.2).
func XORSecret(sessionType string, shared *big.Int, key []byte) ([]byte, error) {
	var h hash.Hash
	switch sessionType {
	case DHSHA1:
		h = sha1.New()
	case DHSHA256:
		h = sha256.New()
	default:
		return nil, ErrUnsupportedType
	}
	h.Write(Btwoc(shared))
	sum := h.Sum(nil)
	if len(sum) != len(key) {
		return nil, ErrUnsupportedType
	}
	out := make([]byte, len(key))
	subtle.XORBytes(out, sum, key)
	return out, nil
}

// B64Int decodes a base64(btwoc(n)) field; negative numbers are refused.
func B64Int(s string) (*big.Int, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not base64")
	}
	if len(b) == 0 || b[0]&0x80 != 0 {
		return nil, errors.New("not a positive btwoc integer")
	}
	return new(big.Int).SetBytes(b), nil
}

// IntB64 encodes n as base64(btwoc(n)).
func IntB64(n *big.Int) string { return base64.StdEncoding.EncodeToString(Btwoc(n)) }

// AssociateRequest is a parsed associate request (OpenID 2.0 §8.1).
type AssociateRequest struct {
	AssocType, SessionType string
	// For Diffie-Hellman sessions.
	Modulus, Generator, ConsumerPublic *big.Int
}

// ParseAssociate checks an associate request. It answers
// ErrUnsupportedType (wrapped) for types this provider does not offer,
// and another error for a malformed request.
func ParseAssociate(m Message) (*AssociateRequest, error) {
	req := &AssociateRequest{AssocType: m["assoc_type"], SessionType: m["session_type"]}
	// Compatible holds only for a supported association and session type.
	if !Compatible(req.AssocType, req.SessionType) {
		return nil, fmt.Errorf("%w: assoc_type %q with session_type %q", ErrUnsupportedType, req.AssocType, req.SessionType)
	}
	if req.SessionType == NoEncryption {
		return req, nil
	}
	req.Modulus, req.Generator = DefaultModulus, DefaultGenerator
	var err error
	if s, ok := m["dh_modulus"]; ok {
		if req.Modulus, err = B64Int(s); err != nil {
			return nil, fmt.Errorf("dh_modulus: %v", err)
		}
		// A small group gives no secrecy.
		if req.Modulus.BitLen() < 512 {
			return nil, errors.New("dh_modulus: fewer than 512 bits")
		}
	}
	if s, ok := m["dh_gen"]; ok {
		if req.Generator, err = B64Int(s); err != nil {
			return nil, fmt.Errorf("dh_gen: %v", err)
		}
		if req.Generator.Cmp(big.NewInt(2)) < 0 || req.Generator.Cmp(req.Modulus) >= 0 {
			return nil, errors.New("dh_gen: out of range")
		}
	}
	s, ok := m["dh_consumer_public"]
	if !ok {
		return nil, errors.New("dh_consumer_public is missing")
	}
	if req.ConsumerPublic, err = B64Int(s); err != nil {
		return nil, fmt.Errorf("dh_consumer_public: %v", err)
	}
	return req, nil
}

// NewMACKey returns a random MAC key for an association type.
func NewMACKey(assocType string) []byte {
	key := make([]byte, MACSize(assocType))
	_, _ = rand.Read(key)
	return key
}

// AssociateResponse answers req for an association with handle, MAC key
// and lifetime in seconds (OpenID 2.0 §8.2).
func AssociateResponse(req *AssociateRequest, handle string, key []byte, expiresIn int64) (Message, error) {
	out := Message{"ns": NS, "assoc_handle": handle, "assoc_type": req.AssocType, "session_type": req.SessionType,
		"expires_in": fmt.Sprint(expiresIn)}
	if req.SessionType == NoEncryption {
		out["mac_key"] = base64.StdEncoding.EncodeToString(key)
		return out, nil
	}
	server, err := NewDHKey(req.Modulus, req.Generator)
	if err != nil {
		return nil, err
	}
	shared, err := server.Shared(req.ConsumerPublic)
	if err != nil {
		return nil, err
	}
	enc, err := XORSecret(req.SessionType, shared, key)
	if err != nil {
		return nil, err
	}
	out["dh_server_public"] = IntB64(server.Public)
	out["enc_mac_key"] = base64.StdEncoding.EncodeToString(enc)
	return out, nil
}

// UnsupportedResponse is the error answer to an associate request with
// types this provider does not offer; it suggests the preferred pair
// (OpenID 2.0 §8.2.4).
func UnsupportedResponse(msg string) Message {
	return Message{"ns": NS, "error": msg, "error_code": "unsupported-type",
		"assoc_type": HMACSHA256, "session_type": DHSHA256}
}

// Sign computes the signature of the fields of m listed in signed
// (without the "openid." prefix), in that order (OpenID 2.0 §6.1).
func Sign(assocType string, key []byte, m Message, signed []string) (string, error) {
	if MACSize(assocType) == 0 {
		return "", ErrUnsupportedType
	}
	kv, err := kvEncode(signed, m)
	if err != nil {
		return "", err
	}
	h := sha256.New
	if assocType == HMACSHA1 {
		h = sha1.New
	}
	mac := hmac.New(h, key)
	mac.Write(kv)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// SignMessage fills in m's signed and sig fields, signing the listed
// fields.
func SignMessage(assocType string, key []byte, m Message, signed []string) error {
	m["signed"] = strings.Join(signed, ",")
	sig, err := Sign(assocType, key, m, signed)
	if err != nil {
		return err
	}
	m["sig"] = sig
	return nil
}

// RequiredSigned are the fields a positive assertion must sign when they
// are present (OpenID 2.0 §10.1).
var RequiredSigned = []string{"op_endpoint", "return_to", "response_nonce", "assoc_handle", "claimed_id", "identity"}

// Verify checks m's signature with key: every field in m's signed list
// must be present, the list must cover RequiredSigned, and the signature
// must match (compared in constant time).
func Verify(assocType string, key []byte, m Message) error {
	signed := strings.Split(m["signed"], ",")
	for _, f := range RequiredSigned {
		if _, present := m[f]; present && !slices.Contains(signed, f) {
			return fmt.Errorf("the field %s is not signed", f)
		}
	}
	want, err := Sign(assocType, key, m, signed)
	if err != nil {
		return err
	}
	got, err := base64.StdEncoding.DecodeString(m["sig"])
	if err != nil {
		return errors.New("sig is not base64")
	}
	wantRaw, _ := base64.StdEncoding.DecodeString(want)
	if !hmac.Equal(got, wantRaw) {
		return errors.New("the signature does not match")
	}
	return nil
}
