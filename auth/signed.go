package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/sigbase"
)

// SignedWindow is how far a signed request's timestamp may be from the
// server's clock, either way (docs/auth.md).
const SignedWindow = 300 * time.Second

// Signed is the signed-request scheme (docs/auth.md, "Signed requests"):
// query variables timestamp, apiKey and signature, where
//
//	signature = hex(HMAC-SHA256(secret, sigbase.CanonicalString(path, query)))
//
// Beyond the spec, two optional query variables, signed like the others,
// bind the request: method (the HTTP method) and bodyhash (lower-case hex
// SHA-256 of the body). When present they must match (401 otherwise), so a
// signed GET seen by someone else cannot be sent as a DELETE; with
// RequireBinding they are mandatory for unsafe methods.
//
// A signature is accepted once: it is recorded in the store shared by all
// processes and a second use is refused while its timestamp is inside the
// window. Keys and their opened secrets are cached for KeyCacheTTL, so a
// deleted key may keep working that long on another process.
type Signed struct {
	Keys        yard.AuthStateService
	Users       *UserCache
	Box         *SecretBox
	Now         func() time.Time
	KeyCacheTTL time.Duration // 0: read on every request
	// RequireBinding makes the query variables method and bodyhash
	// mandatory for unsafe methods (POST, PUT, PATCH, DELETE, ...).
	RequireBinding bool
	// Diagnostics adds to each refusal of a parsed signed request the
	// canonical string the server signed and the timestamps it accepts
	// (docs/auth.md, "Diagnostics of a refused signature").
	Diagnostics bool

	cache   ttlCache[string, signedKey]
	batcher signatureBatcher
}

type signedKey struct {
	userID string
	secret []byte
}

// Name implements Scheme.
func (s *Signed) Name() string { return "signed" }

// Match implements Scheme.
func (s *Signed) Match(r *http.Request) bool { return signedQuery(r.URL.RawQuery) }

// signedQuery reports whether a raw query carries a signed request's
// signature or apiKey.
func signedQuery(raw string) bool {
	for piece := range strings.SplitSeq(raw, "&") {
		name, _, _ := strings.Cut(piece, "=")
		if strings.EqualFold(name, "signature") || strings.EqualFold(name, "apiKey") {
			return true
		}
	}
	return false
}

// QueryVars implements QueryCredentials: the credentials (apiKey,
// signature, timestamp) and the optional binding (method, bodyHash) of
// docs/auth.md, "Signed requests".
func (s *Signed) QueryVars() []string {
	return []string{"apiKey", "signature", "timestamp", "method", "bodyHash"}
}

// Challenges implements Scheme; signed requests have no challenge.
func (s *Signed) Challenges(*http.Request) []string { return nil }

// Forget drops a key from the cache (after it is deleted).
func (s *Signed) Forget(id string) {
	s.cache.drop(id)
}

// Authenticate implements Scheme.
func (s *Signed) Authenticate(r *http.Request) (*yard.Principal, error) {
	pairs, err := sigbase.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		return nil, yard.Errorf(yard.EUNAUTHORIZED, "The query string of a signed request cannot be parsed.")
	}
	// Each variable's last value and how often it came (names without
	// regard to case).
	names := [...]string{"timestamp", "apikey", "signature", "method", "bodyhash"}
	var val [len(names)]string
	var n [len(names)]int
	for _, p := range pairs {
		if i := slices.Index(names[:], strings.ToLower(p[0])); i >= 0 {
			val[i], n[i] = p[1], n[i]+1
		}
	}
	ts, keyID, sig, method, bodyHash := val[0], val[1], val[2], val[3], val[4]
	nmethod, nbody := n[3], n[4]
	now := s.Now()
	// refuse is a 401 with, when diagnostics are on, the canonical string
	// the server signed and the timestamps it accepts (never the secret
	// or the expected signature).
	refuse := func(format string, args ...any) error {
		return withDiagnostics(s.Diagnostics, yard.Errorf(yard.EUNAUTHORIZED, format, args...),
			Diagnostics{CanonicalString: sigbase.CanonicalString(r.URL.Path, pairs), AcceptableTimestamps: acceptableTimestamps(now, SignedWindow)})
	}
	if n[0] != 1 || n[1] != 1 || n[2] != 1 {
		return nil, refuse("A signed request needs exactly one timestamp, apiKey and signature.")
	}
	if nmethod > 1 || nbody > 1 {
		return nil, refuse("A signed request takes at most one method and one bodyhash.")
	}
	if s.RequireBinding && !isSafe(r.Method) && (nmethod == 0 || nbody == 0) {
		return nil, refuse("A signed %s must bind its method and body: sign the query variables method and bodyhash.", r.Method)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, refuse("The timestamp of a signed request must be Unix seconds.")
	}
	stamp := time.Unix(sec, 0)
	if d := now.Sub(stamp); d > SignedWindow || d < -SignedWindow {
		return nil, refuse("The timestamp of the signed request is more than %d s from the server's clock.", int(SignedWindow.Seconds()))
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size || sig != strings.ToLower(sig) {
		return nil, refuse("The signature must be 64 lower-case hexadecimal digits.")
	}
	k, err := s.key(r.Context(), keyID, now)
	if yard.ErrorCode(err) == yard.EUNAUTHORIZED {
		return nil, refuse("%s", yard.ErrorMessage(err))
	} else if err != nil {
		return nil, err
	}
	if !hmac.Equal([]byte(sigbase.Sign(k.secret, sigbase.CanonicalString(r.URL.Path, pairs))), []byte(sig)) { // constant time
		return nil, refuse("The signature does not match the request.")
	}
	// The binding is checked before the signature is recorded as used, so
	// a replay under another method does not spend the genuine request.
	if nmethod == 1 && method != r.Method {
		return nil, refuse("The request was signed for another method.")
	}
	if nbody == 1 {
		// readBody leaves the body readable again for the handler.
		body, err := readBody(r)
		if err != nil {
			return nil, err
		}
		if sum := sha256.Sum256(body); bodyHash != hex.EncodeToString(sum[:]) {
			if strings.EqualFold(bodyHash, hex.EncodeToString(sum[:])) {
				return nil, refuse("The bodyhash must be lower-case hex.")
			}
			return nil, refuse("The body does not match the signed bodyhash.")
		}
	}
	p, err := s.Users.Principal(r.Context(), k.userID, s.Name())
	if err != nil {
		return nil, err
	}
	fresh, err := s.batcher.use(r.Context(), s.Keys, sig, stamp.Add(SignedWindow))
	if err != nil {
		return nil, err
	}
	if !fresh {
		return nil, refuse("This signature was already used (replay).")
	}
	return p, nil
}

// readBody reads r's body whole (nil without one) and puts it back for the
// handler; the server's body limit bounds it (an *http.MaxBytesError is
// returned as it is, 413).
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, err
		}
		return nil, yard.Errorf(yard.EMALFORMED, "The request body could not be read.")
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

func (s *Signed) key(ctx context.Context, id string, now time.Time) (signedKey, error) {
	return s.cache.getOrLoad(id, now, s.KeyCacheTTL, 10000, func() (signedKey, error) {
		ak, err := s.Keys.FindAPIKey(ctx, id)
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			return signedKey{}, yard.Errorf(yard.EUNAUTHORIZED, "The API key is not known.")
		} else if err != nil {
			return signedKey{}, err
		}
		secret, err := s.Box.Open(ak.SealedSecret, ak.ID)
		return signedKey{userID: ak.UserID, secret: secret}, err
	})
}

// buildSigned is the signed requests' entry in the chain's ordered list
// (kit.go); API-key secrets are sealed with the kit's box.
func buildSigned(_ context.Context, cfg Config, k *Kit) (Scheme, error) {
	k.Signed = &Signed{Keys: cfg.Store, Users: k.Users, Box: k.Box, Now: k.Now, KeyCacheTTL: k.cacheTTL,
		RequireBinding: cfg.SignedRequireBinding, Diagnostics: !cfg.HideDiagnostics}
	return k.Signed, nil
}
