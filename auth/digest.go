package auth

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/authparam"
	"github.com/yard-api/yard/internal/defaults"
)

// Digest is HTTP Digest access authentication (RFC 7616) with qop=auth and
// the algorithms SHA-256 and MD5, against the HA1 values the user store
// keeps for Realm.
//
// Nonces are stateless: base64url(8-byte issue time in Unix milliseconds,
// 12 random bytes, the first 16 bytes of HMAC-SHA256(Secret, those 20
// bytes)), so any process holding Secret can verify them. A nonce older than
// NonceTTL is stale: a request whose response is otherwise right gets a new
// challenge with stale=true (RFC 7616 §3.3). Each (nonce, nc) pair is
// accepted once, and nc must grow (RFC 7616 §3.4: replay protection).
type Digest struct {
	Users    Users
	Counter  yard.AuthStateService
	Limiter  *LoginLimiter
	Secret   []byte
	NonceTTL time.Duration
	Now      func() time.Time
	// Opaque is echoed by clients unchanged (RFC 7616 §3.3).
	Opaque string
	// Diagnostics names in each refusal the field of the credentials that
	// was refused (docs/auth.md, "Diagnostics of a refused signature"),
	// never the expected response or a hash of the password.
	Diagnostics bool
}

// Digest algorithms (RFC 7616 §6.1).
const (
	DigestSHA256 = "SHA-256"
	DigestMD5    = "MD5"
)

// Name implements Scheme.
func (d *Digest) Name() string { return "digest" }

// Match implements Scheme.
func (d *Digest) Match(r *http.Request) bool { return hasScheme(r, d.Name()) }

// Challenges implements Scheme: one challenge per algorithm, SHA-256 first
// as RFC 7616 §3.7 asks, with a fresh nonce.
func (d *Digest) Challenges(*http.Request) []string { return d.challenges(false) }

func (d *Digest) challenges(stale bool) []string {
	nonce := d.NewNonce()
	out := make([]string, 0, 2)
	for _, alg := range []string{DigestSHA256, DigestMD5} {
		c := `Digest realm="` + Realm + `", qop="auth", algorithm=` + alg + `, nonce="` + nonce + `", opaque="` + d.Opaque + `"`
		if stale {
			c += ", stale=true"
		}
		out = append(out, c)
	}
	return out
}

func (d *Digest) ttl() time.Duration { return defaults.Positive(d.NonceTTL, 5*time.Minute) }

// NewNonce returns a nonce issued now.
func (d *Digest) NewNonce() string {
	var b [36]byte
	binary.BigEndian.PutUint64(b[:8], uint64(d.Now().UnixMilli()))
	_, _ = rand.Read(b[8:20])
	m := hmac.New(sha256.New, d.Secret)
	m.Write(b[:20])
	copy(b[20:], m.Sum(nil)[:16])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// checkNonce verifies the nonce's MAC and returns its issue time.
func (d *Digest) checkNonce(nonce string) (time.Time, bool) {
	b, err := base64.RawURLEncoding.DecodeString(nonce)
	if err != nil || len(b) != 36 {
		return time.Time{}, false
	}
	m := hmac.New(sha256.New, d.Secret)
	m.Write(b[:20])
	if !hmac.Equal(m.Sum(nil)[:16], b[20:]) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[:8]))), true
}

// refuse is a 401 naming, when diagnostics are on, the refused field.
func (d *Digest) refuse(field, format string, args ...any) error {
	return withDiagnostics(d.Diagnostics, yard.Errorf(yard.EUNAUTHORIZED, format, args...), Diagnostics{DigestField: field})
}

// Authenticate implements Scheme.
func (d *Digest) Authenticate(r *http.Request) (*yard.Principal, error) {
	_, rest := AuthScheme(r.Header.Get("Authorization"))
	p, ok := ParseDigestParams(rest)
	if !ok {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "Malformed Digest credentials.")
	}
	for _, name := range []string{"username", "realm", "nonce", "uri", "response", "qop", "nc", "cnonce"} {
		if p[name] == "" {
			return nil, d.refuse(name, "Digest credentials lack the %s field.", name)
		}
	}
	alg := cmp.Or(p["algorithm"], DigestMD5) // RFC 7616 §3.3: absent means MD5
	switch {
	case p["realm"] != Realm:
		return nil, d.refuse("realm", "Digest realm must be %q.", Realm)
	case !strings.EqualFold(alg, DigestSHA256) && !strings.EqualFold(alg, DigestMD5):
		return nil, d.refuse("algorithm", "Digest algorithm must be SHA-256 or MD5.")
	case p["qop"] != "auth":
		return nil, d.refuse("qop", "Digest qop must be auth.")
	case p["uri"] != r.RequestURI && p["uri"] != r.URL.RequestURI():
		// RFC 7616 §3.4.6: the uri must name the request target.
		return nil, withDiagnostics(d.Diagnostics, yard.Errorf(yard.EUNAUTHORIZED, "Digest uri does not match the request-target."),
			Diagnostics{DigestField: "uri", RequestTarget: r.URL.RequestURI()})
	case p["userhash"] == "true":
		return nil, d.refuse("userhash", "Digest userhash is not supported.")
	}
	nc, err := strconv.ParseUint(p["nc"], 16, 32)
	if err != nil || len(p["nc"]) != 8 || nc == 0 {
		return nil, d.refuse("nc", "Digest nc must be 8 hexadecimal digits, not 00000000.")
	}
	issued, ok := d.checkNonce(p["nonce"])
	if !ok {
		return nil, d.refuse("nonce", "The Digest nonce was not issued by this server.")
	}
	username := p["username"]
	ctx := r.Context()
	// The attempt takes its place in the limiter before the response is
	// checked, and gives it back only when it was right.
	var u *yard.User
	err = d.Limiter.guard(ctx, Keys(r, username), func() error {
		// The same answer for an unknown user and a wrong password, so
		// that the field does not tell which names exist.
		refused := d.refuse("response", "The user name or password is wrong (the response does not match).")
		var err error
		if u, err = d.Users.FindUserByName(ctx, username); yard.ErrorCode(err) == yard.ENOTFOUND {
			return refused
		} else if err != nil {
			return err
		}
		creds, err := d.Users.FindCredentials(ctx, u.ID)
		if err != nil {
			return err
		}
		ha1 := creds.HA1SHA256
		if strings.EqualFold(alg, DigestMD5) {
			ha1 = creds.HA1MD5
		}
		want := DigestResponse(alg, ha1, r.Method, p["uri"], p["nonce"], p["nc"], p["cnonce"], p["qop"])
		if ha1 == "" || subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(p["response"]))) != 1 {
			return refused
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if u.Disabled {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The account is disabled.")
	}
	expires := issued.Add(d.ttl())
	if !d.Now().Before(expires) {
		// RFC 7616 §3.3: the credentials were right, only the nonce is old.
		return nil, withDiagnostics(d.Diagnostics, &yard.Error{Code: yard.EUNAUTHORIZED, Message: "The Digest nonce is stale; retry with the new one.",
			Challenge: d.challenges(true)}, Diagnostics{DigestField: "nonce"})
	}
	fresh, err := d.Counter.UseNonceCount(ctx, p["nonce"], nc, expires)
	if err != nil {
		return nil, err
	}
	if !fresh {
		return nil, d.refuse("nc", "The Digest nonce count was already used, or is not higher than one used with this nonce (replay).")
	}
	return &yard.Principal{UserID: u.ID, Name: u.Name, Roles: u.Roles, Scheme: d.Name()}, nil
}

// DigestResponse computes the request-digest of RFC 7616 §3.4.1 for
// qop=auth from a stored HA1 = H(username:realm:password):
// KD(HA1, nonce:nc:cnonce:qop:H(method:uri)).
func DigestResponse(algorithm, ha1, method, uri, nonce, nc, cnonce, qop string) string {
	ha2 := authparam.DigestHash(algorithm, method+":"+uri)
	return authparam.DigestHash(algorithm, ha1+":"+nonce+":"+nc+":"+cnonce+":"+qop+":"+ha2)
}

// ParseDigestParams parses the auth-params of a Digest credentials value
// (RFC 7616 §3.4, RFC 9110 §11.2) with the one auth-param parser
// (internal/authparam). Names are lower-cased. It reports false on a
// syntax error or a repeated name.
func ParseDigestParams(s string) (map[string]string, bool) {
	ps, err := authparam.Parse(s, false)
	if err != nil {
		return nil, false
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		name := strings.ToLower(p.Name)
		if _, dup := out[name]; dup {
			return nil, false
		}
		out[name] = p.Value
	}
	return out, true
}

// buildDigest is Digest's entry in the chain's ordered list (kit.go).
func buildDigest(_ context.Context, cfg Config, k *Kit) (Scheme, error) {
	nonceKey, err := LoadOrCreateSecret(filepath.Join(cfg.KeyDir, "digest-nonce.key"), 32)
	if err != nil {
		return nil, fmt.Errorf("digest nonce key: %w", err)
	}
	k.Digest = &Digest{Users: cfg.Store, Counter: cfg.Store, Limiter: cfg.Limiter, Secret: nonceKey,
		NonceTTL: defaults.Positive(cfg.NonceTTL, 5*time.Minute), Now: k.Now, Opaque: "yard", Diagnostics: !cfg.HideDiagnostics}
	return k.Digest, nil
}
