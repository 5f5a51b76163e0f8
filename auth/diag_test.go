package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store/storetest"
)

// kitFixture is every first-party scheme over a real store, on a fixed
// clock, with a user alice (password pw), an OAuth consumer and an access
// token alice allowed it, and an API key of hers.
type kitFixture struct {
	kit   *Kit
	now   time.Time
	alice *yard.User
	// OAuth 1.0a: the consumer's key and secret, the access token and its secret.
	ck, cs, at, ats string
	// Signed requests: the API key and its secret.
	apiKey, apiSecret string
}

const (
	fixturePassword = "correct horse battery staple"
	fixtureBase     = "https://yard.example"
)

// newKitFixture builds the fixture on engine; hide turns diagnostics off
// (Config.HideDiagnostics, serve --auth-diagnostics=false).
func newKitFixture(t *testing.T, engine string, hide bool) *kitFixture {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, engine)
	f := &kitFixture{now: time.Unix(1_800_000_000, 0)}
	kit, err := NewKit(ctx, Config{Store: db, Limiter: NewLoginLimiter(0, nil), KeyDir: t.TempDir(), Issuer: fixtureBase,
		Now: func() time.Time { return f.now }, HideDiagnostics: hide})
	if err != nil {
		t.Fatal(err)
	}
	f.kit = kit
	creds, err := NewCredentials("alice", fixturePassword)
	if err != nil {
		t.Fatal(err)
	}
	f.alice = &yard.User{Name: "alice", Email: "alice@example.org", Phone: "+14155550100", Roles: []string{yard.RoleUser}}
	if err := db.CreateUser(ctx, f.alice, creds); err != nil {
		t.Fatal(err)
	}
	c, secret, err := kit.OAuth1.RegisterConsumer(ctx, "Photo Printer", "", f.alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.ck, f.cs = c.Key, secret
	f.at, f.ats = "at_fixture", "access-token-secret"
	if err := db.CreateOAuthToken(ctx, &yard.OAuthToken{ID: yard.NewID(), Token: f.at, Kind: yard.OAuthAccessToken, State: yard.OAuthActive,
		ConsumerKey: f.ck, UserID: f.alice.ID, SealedSecret: kit.Box.Seal([]byte(f.ats), tokenSealID(f.at)), CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	f.apiKey, f.apiSecret = "ak_fixture", "sk_fixture-secret"
	if err := db.CreateAPIKey(ctx, &yard.APIKey{ID: f.apiKey, UserID: f.alice.ID, SealedSecret: kit.Box.Seal([]byte(f.apiSecret), f.apiKey), CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	return f
}

// oauthReq describes a request to sign as an OAuth 1.0a consumer, with
// the in-repo signer (internal/sigbase, which the Go client uses too).
type oauthReq struct {
	method, path string
	// query and form are the request's own parameters, in order; form
	// is sent as an application/x-www-form-urlencoded body.
	query, form [][2]string
	// place is where the protocol parameters travel: "header", "body" or
	// "query".
	place string
	// token and tokenSecret sign for a token ("" at request_token); extra
	// are more protocol parameters (oauth_callback, oauth_verifier).
	token, tokenSecret string
	extra              [][2]string
	sigMethod          string
	// consumerSecret, when set, signs with another secret than the
	// consumer's (a wrong one).
	consumerSecret string
	nonce          string
}

// encodePairs writes pairs as a query or form body, percent-encoded as
// RFC 5849 §3.6 does (a valid form encoding too).
func encodePairs(pairs [][2]string) string {
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(sigbase.OAuthEncode(p[0]) + "=" + sigbase.OAuthEncode(p[1]))
	}
	return b.String()
}

// sign returns the signed request and the base string the client signed.
func (f *kitFixture) sign(t *testing.T, o oauthReq) (*http.Request, string) {
	t.Helper()
	if o.sigMethod == "" {
		o.sigMethod = sigbase.OAuthHMACSHA1
	}
	if o.nonce == "" {
		o.nonce = "n" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	cs := f.cs
	if o.consumerSecret != "" {
		cs = o.consumerSecret
	}
	proto := [][2]string{{"oauth_consumer_key", f.ck}, {"oauth_nonce", o.nonce}, {"oauth_signature_method", o.sigMethod},
		{"oauth_timestamp", strconv.FormatInt(f.now.Unix(), 10)}, {"oauth_version", "1.0"}}
	if o.token != "" {
		proto = append(proto, [2]string{"oauth_token", o.token})
	}
	proto = append(proto, o.extra...)
	params := slices.Concat(o.query, o.form, proto)
	base := sigbase.OAuthBaseString(o.method, fixtureBase+o.path, params)
	sig, err := sigbase.OAuthSignature(o.sigMethod, o.method, fixtureBase+o.path, params, cs, o.tokenSecret)
	if err != nil {
		t.Fatal(err)
	}
	proto = append(proto, [2]string{"oauth_signature", sig})
	query, form := o.query, o.form
	switch o.place {
	case "query":
		query = slices.Concat(query, proto)
	case "body":
		form = slices.Concat(form, proto)
	}
	target := fixtureBase + o.path
	if len(query) > 0 {
		target += "?" + encodePairs(query)
	}
	var body io.Reader
	if len(form) > 0 {
		body = strings.NewReader(encodePairs(form))
	}
	r := httptest.NewRequest(o.method, target, body)
	if len(form) > 0 {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if o.place == "header" {
		h := `OAuth realm="yard"`
		for _, p := range proto {
			h += ", " + sigbase.OAuthEncode(p[0]) + `="` + sigbase.OAuthEncode(p[1]) + `"`
		}
		r.Header.Set("Authorization", h)
	}
	return r, base
}

// diagnostics returns the diagnostics of a refusal, failing when it has
// none.
func diagnostics(t *testing.T, err error) *Diagnostics {
	t.Helper()
	d := DiagnosticsOf(err)
	if d == nil {
		t.Fatalf("refusal %v carries no diagnostics", err)
	}
	return d
}

// TestDiagnosticsOf: a plain error carries none; an OAuth refusal carries
// its OAuth Problem Reporting parameters; a diagnosed refusal keeps its
// code and message.
func TestDiagnosticsOf(t *testing.T) {
	if d := DiagnosticsOf(yard.Errorf(yard.EUNAUTHORIZED, "no")); d != nil {
		t.Errorf("plain refusal: got %+v, want none", d)
	}
	if d := DiagnosticsOf(errors.New("internal")); d != nil {
		t.Errorf("internal error: got %+v, want none", d)
	}
	oe := &OAuthError{Err: yard.Errorf(yard.EUNAUTHORIZED, "bad"), Problem: "signature_invalid",
		Extra: url.Values{"oauth_signature_base_string": {"GET&x&"}, "oauth_acceptable_timestamps": {"1-2"}}}
	if d := DiagnosticsOf(oe); d == nil || d.OAuthProblem != "signature_invalid" || d.OAuthSignatureBaseString != "GET&x&" || d.OAuthAcceptableTimestamps != "1-2" {
		t.Errorf("OAuth refusal: got %+v", d)
	}
	err := withDiagnostics(true, yard.Errorf(yard.EUNAUTHORIZED, "Digest qop must be auth."), Diagnostics{DigestField: "qop"})
	if yard.ErrorCode(err) != yard.EUNAUTHORIZED || yard.ErrorMessage(err) != "Digest qop must be auth." || diagnostics(t, err).DigestField != "qop" {
		t.Errorf("diagnosed refusal: code %q, message %q", yard.ErrorCode(err), yard.ErrorMessage(err))
	}
	if got, want := acceptableTimestamps(time.Unix(1000, 0), 300*time.Second), "700-1300"; got != want {
		t.Errorf("acceptableTimestamps = %q, want %q", got, want)
	}
}
