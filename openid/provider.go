package openid

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// Sealer seals MAC keys for the store (auth.SecretBox).
type Sealer interface {
	Seal(secret []byte, id string) string
	Open(sealed, id string) ([]byte, error)
}

// Provider is the stateful side of the OpenID provider: it makes and
// finds associations, signs positive assertions and answers
// check_authentication. Its state is in the store, so every process
// sharing the store (and the sealing key) serves the same relying
// parties.
type Provider struct {
	Store yard.OpenIDService
	Box   Sealer
	// Endpoint is the OP endpoint URL ({base_url}/openid/login).
	Endpoint string
	Now      func() time.Time
}

// AssocTTL is the lifetime of shared associations; PrivateTTL that of
// private ones, and the longest a response nonce is accepted by
// check_authentication.
const (
	AssocTTL   = 2 * time.Hour
	PrivateTTL = 5 * time.Minute
)

// ProtocolError is a request the provider refuses. Message is safe to show
// to the relying party and the user.
type ProtocolError struct {
	Message string
	// Unsupported marks an associate request with a type this provider
	// does not offer (error_code unsupported-type).
	Unsupported bool
}

func (e *ProtocolError) Error() string { return e.Message }

func protoErr(format string, args ...any) error {
	return &ProtocolError{Message: fmt.Sprintf(format, args...)}
}

func (p *Provider) create(ctx context.Context, assocType string, private bool, ttl time.Duration) (*yard.OpenIDAssociation, []byte, error) {
	now := p.Now()
	key := NewMACKey(assocType)
	var b [24]byte
	_, _ = rand.Read(b[:])
	h := base64.RawURLEncoding.EncodeToString(b[:])
	a := &yard.OpenIDAssociation{Handle: h, Type: assocType, SealedKey: p.Box.Seal(key, "openid:"+h), Private: private,
		CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := p.Store.CreateOpenIDAssociation(ctx, a); err != nil {
		return nil, nil, err
	}
	return a, key, nil
}

// find returns a live association and its key, or nil when the handle is
// unknown, expired or of the other kind (shared/private).
func (p *Provider) find(ctx context.Context, handle string, private bool) (*yard.OpenIDAssociation, []byte, error) {
	if handle == "" || len(handle) > 255 {
		return nil, nil, nil
	}
	a, err := p.Store.FindOpenIDAssociation(ctx, handle)
	if yard.ErrorCode(err) == yard.ENOTFOUND || err == nil && (a.Private != private || !p.Now().Before(a.ExpiresAt)) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	key, err := p.Box.Open(a.SealedKey, "openid:"+a.Handle)
	if err != nil {
		return nil, nil, err
	}
	return a, key, nil
}

// Associate answers an associate request (OpenID 2.0 §8). overTLS says
// whether it came over HTTPS: a no-encryption session sends the MAC key in
// the clear and is offered only there.
func (p *Provider) Associate(ctx context.Context, m Message, overTLS bool) (Message, error) {
	req, err := ParseAssociate(m)
	if errors.Is(err, ErrUnsupportedType) {
		return nil, &ProtocolError{Message: "This provider offers HMAC-SHA256 or HMAC-SHA1 with DH-SHA256, DH-SHA1 (matching the hash) or no-encryption over HTTPS.", Unsupported: true}
	}
	if err != nil {
		return nil, protoErr("Bad associate request: %v.", err)
	}
	if req.SessionType == NoEncryption && !overTLS {
		return nil, &ProtocolError{Message: "no-encryption sessions are offered over HTTPS only.", Unsupported: true}
	}
	a, key, err := p.create(ctx, req.AssocType, false, AssocTTL)
	if err != nil {
		return nil, err
	}
	resp, err := AssociateResponse(req, a.Handle, key, int64(AssocTTL/time.Second))
	if err != nil {
		// Only a Diffie-Hellman key out of range gets here.
		_ = p.Store.DeleteOpenIDAssociation(ctx, a.Handle)
		return nil, protoErr("Bad associate request: %v.", err)
	}
	return resp, nil
}

// CheckIDRequest is a parsed checkid_setup or checkid_immediate request
// (OpenID 2.0 §9.1).
type CheckIDRequest struct {
	Mode string
	// ClaimedID and Identity are as sent; both IdentifierSelect when the
	// relying party lets the provider choose (directed identity).
	ClaimedID, Identity string
	ReturnTo            string
	Realm               *Realm
	AssocHandle         string
	SReg                *SRegRequest
	// Message is the whole request, to carry it through the sign-in and
	// confirmation pages.
	Message Message
}

// Immediate reports whether the request is checkid_immediate.
func (r *CheckIDRequest) Immediate() bool { return r.Mode == ModeCheckIDImmediate }

// ErrNoReturn marks a checkid request that cannot be answered by a
// redirect: no usable return_to, or one outside the realm. The user is
// shown an error page instead.
var ErrNoReturn = errors.New("cannot redirect to the relying party")

// ParseCheckID checks a checkid request. An error wrapping ErrNoReturn
// must be shown to the user; any other is sent back to return_to as an
// indirect error.
func ParseCheckID(m Message) (*CheckIDRequest, error) {
	r := &CheckIDRequest{Mode: m["mode"], ClaimedID: m["claimed_id"], Identity: m["identity"], ReturnTo: m["return_to"],
		AssocHandle: m["assoc_handle"], Message: m}
	realm := cmp.Or(m["realm"], r.ReturnTo)
	if r.ReturnTo == "" || !ValidReturnTo(r.ReturnTo) {
		return nil, fmt.Errorf("%w: openid.return_to is missing or not an absolute http(s) URL", ErrNoReturn)
	}
	var err error
	if r.Realm, err = ParseRealm(realm); err != nil {
		return nil, fmt.Errorf("%w: openid.realm: %v", ErrNoReturn, err)
	}
	if !r.Realm.Matches(r.ReturnTo) {
		return nil, fmt.Errorf("%w: openid.return_to %s is outside the realm %s", ErrNoReturn, r.ReturnTo, realm)
	}
	if m["ns"] != NS {
		return r, protoErr("Only OpenID 2.0 requests (openid.ns=%s) are supported.", NS)
	}
	if (r.ClaimedID == "") != (r.Identity == "") {
		return r, protoErr("openid.claimed_id and openid.identity go together.")
	}
	if r.Identity == "" {
		return r, protoErr("This provider asserts identifiers only: openid.identity is required.")
	}
	r.SReg = ParseSReg(m)
	return r, nil
}

// Assert returns a signed positive assertion (OpenID 2.0 §10.1) for the
// local identifier localID, with the Simple Registration values given.
// It signs with the relying party's association when it is live, else
// with a new private association (stateless mode), telling the relying
// party to drop the handle it sent.
func (p *Provider) Assert(ctx context.Context, req *CheckIDRequest, localID string, sreg map[string]string) (Message, error) {
	claimed := req.ClaimedID
	if req.Identity == IdentifierSelect {
		claimed = localID
	}
	out := Message{"ns": NS, "mode": ModeIDRes, "op_endpoint": p.Endpoint, "claimed_id": claimed, "identity": localID,
		"return_to": req.ReturnTo, "response_nonce": NewNonce(p.Now())}
	a, key, err := p.find(ctx, req.AssocHandle, false)
	if err != nil {
		return nil, err
	}
	if a == nil {
		if req.AssocHandle != "" {
			out["invalidate_handle"] = req.AssocHandle
		}
		if a, key, err = p.create(ctx, HMACSHA256, true, PrivateTTL); err != nil {
			return nil, err
		}
	}
	out["assoc_handle"] = a.Handle
	signed := []string{"op_endpoint", "claimed_id", "identity", "return_to", "response_nonce", "assoc_handle"}
	if req.SReg != nil && len(sreg) > 0 {
		alias := req.SReg.Alias
		out["ns."+alias] = NSSReg
		signed = append(signed, "ns."+alias)
		for _, f := range SRegFields {
			if v, ok := sreg[f]; ok {
				out[alias+"."+f] = v
				signed = append(signed, alias+"."+f)
			}
		}
	}
	if err := SignMessage(a.Type, key, out, signed); err != nil {
		return nil, err
	}
	return out, nil
}

// Negative returns the answer for a request the user did not approve:
// cancel for checkid_setup, setup_needed for checkid_immediate (OpenID 2.0
// §10.2).
func Negative(req *CheckIDRequest) Message {
	if req.Immediate() {
		return Message{"ns": NS, "mode": ModeSetupNeeded}
	}
	return Message{"ns": NS, "mode": ModeCancel}
}

// IndirectError is an error sent to return_to (OpenID 2.0 §5.2.3).
func IndirectError(msg string) Message {
	return Message{"ns": NS, "mode": ModeError, "error": msg}
}

// DirectError is the body of a failed direct request (OpenID 2.0
// §5.1.2.2).
func DirectError(msg string) Message {
	return Message{"ns": NS, "error": msg}
}

// CheckAuthentication answers a verification request of a relying party
// in stateless mode (OpenID 2.0 §11.4.2): the assertion must be signed
// with a live private association, and each response nonce is verified
// at most once, by whichever process is asked.
func (p *Provider) CheckAuthentication(ctx context.Context, m Message) (Message, error) {
	out := Message{"ns": NS, "is_valid": "false"}
	if h := m["invalidate_handle"]; h != "" {
		a, _, err := p.find(ctx, h, false)
		if err != nil {
			return nil, err
		}
		if a == nil {
			out["invalidate_handle"] = h
		}
	}
	a, key, err := p.find(ctx, m["assoc_handle"], true)
	if err != nil || a == nil {
		return out, err
	}
	signedMsg := maps.Clone(m)
	signedMsg["mode"] = ModeIDRes
	if err := Verify(a.Type, key, signedMsg); err != nil {
		return out, nil
	}
	if !strings.Contains(","+m["signed"]+",", ",response_nonce,") {
		return out, nil
	}
	t, err := NonceTime(m["response_nonce"])
	now := p.Now()
	if err != nil || now.Sub(t) > PrivateTTL || t.Sub(now) > time.Minute {
		return out, nil
	}
	fresh, err := p.Store.UseOpenIDNonce(ctx, m["response_nonce"], t.Add(PrivateTTL+time.Minute))
	if err != nil || !fresh {
		return out, err
	}
	out["is_valid"] = "true"
	return out, nil
}
