package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/internal/authparam"
)

// problemKind is one row of the error table: a status, a problem type slug
// and a title.
type problemKind struct {
	Status int
	Slug   string
	Title  string
	About  string
}

// problemKinds maps every error code to its HTTP rendering. Slugs name the
// pages at {base_url}/problems/{slug}.
var problemKinds = map[string]problemKind{
	yard.EINVALID:         {400, "validation", "Invalid request", "A field of the request has a value the server does not accept. The errors member lists each bad field."},
	yard.EMALFORMED:       {400, "malformed", "Malformed request", "The body or the query could not be parsed. The detail says where."},
	yard.ETOKENEXPIRED:    {400, "token-expired", "Access token expired", "The access token was well formed and correctly signed, but its expiry time has passed. Call the refresh endpoint with the refresh token."},
	yard.EREFRESHINVALID:  {400, "refresh-token-invalid", "Refresh token invalid", "The refresh token is expired, revoked, already used or malformed. Sign in again with a user name and password."},
	yard.EUNAUTHORIZED:    {401, "unauthorized", "Authentication required", "The request carried no credentials, or wrong ones. The WWW-Authenticate header lists the accepted schemes."},
	yard.EFORBIDDEN:       {403, "forbidden", "Forbidden", "The authenticated principal may not do this to this resource."},
	yard.ESCHEDULEREFUSED: {403, "schedule-refused", "Schedule refused", "The server refused the bark schedule. The detail says why."},
	yard.ENOTFOUND:        {404, "not-found", "Not found", "No resource has this URI."},
	"method_not_allowed":  {405, "method-not-allowed", "Method not allowed", "The resource exists but does not take this method. The Allow header lists the methods it takes."},
	yard.ENOTACCEPTABLE:   {406, "not-acceptable", "Not acceptable", "The server cannot produce a representation the Accept header allows."},
	yard.ECONFLICT:        {409, "conflict", "Conflict", "The request conflicts with the current state of the resource."},
	yard.EGONE:            {410, "gone", "Gone", "The event id is older than what the server keeps (its retention); the oldest member names the oldest event id kept. Start again from it, or from now."},
	yard.EPRECONDITION:    {412, "precondition-failed", "Precondition failed", "A conditional header (If-Match, If-Unmodified-Since) did not hold: the resource changed since the client saw it."},
	yard.ETOOLARGE:        {413, "too-large", "Content too large", "The request body is larger than 1 MiB."},
	yard.EUNSUPPORTED:     {415, "unsupported-media-type", "Unsupported media type", "The Content-Type of the request body is not one this endpoint reads."},
	yard.EPRECONDREQUIRED: {428, "precondition-required", "Precondition required", "This change must be conditional: send If-Unmodified-Since (or If-Match)."},
	yard.ERATELIMIT:       {429, "rate-limited", "Too many requests", "Too many requests: failed sign-in attempts from this address or for this user name, event streams of one person, car searches waiting from one client address, or a backup asked for within a minute of the newest. Retry-After says when to try again."},
	yard.EUNAVAILABLE:     {503, "unavailable", "Service unavailable", "The server cannot answer now; try again later."},
	yard.EINTERNAL:        {500, "internal", "Internal server error", "Something went wrong on the server. The request id identifies it in the server's log."},
}

// Problem is an RFC 9457 problem details object.
type Problem struct {
	Type      string            `json:"type"`
	Title     string            `json:"title"`
	Status    int               `json:"status"`
	Detail    string            `json:"detail,omitempty"`
	Instance  string            `json:"instance,omitempty"`
	Errors    []yard.FieldError `json:"errors,omitempty"`
	RequestID string            `json:"requestId,omitempty"`
	// Oldest is the oldest event id kept, in a 410 (docs/events.md): a
	// JSON string, or null when no event is kept.
	Oldest json.RawMessage `json:"oldest,omitempty"`
	// Diagnostics are the members a refused signature adds: the OAuth
	// Problem Reporting parameters, and what the server computed
	// (docs/auth.md, "Diagnostics of a refused signature").
	*auth.Diagnostics
}

// error renders err as a problem. Internal errors are logged with the
// request id and shown only as a fixed message.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code := yard.ErrorCode(err)
	if code == yard.EINTERNAL {
		// A store that cannot be reached is a temporary condition, not a
		// bug: 503 with Retry-After, logged once per episode.
		if ue := s.db.outage.Unavailable(err); ue != nil {
			s.storeUnavailable(err)
			code, err = yard.EUNAVAILABLE, ue
		}
	}
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		code, err = yard.ETOOLARGE, yard.Errorf(yard.ETOOLARGE, "The request body is larger than %d bytes.", mbe.Limit)
	}
	kind, ok := problemKinds[code]
	if !ok {
		kind = problemKinds[yard.EINTERNAL]
	}
	p := Problem{
		Type:      s.deps.BaseURL + "/problems/" + kind.Slug,
		Title:     kind.Title,
		Status:    kind.Status,
		Detail:    yard.ErrorMessage(err),
		Instance:  r.URL.Path,
		RequestID: w.Header().Get("X-Request-Id"),
	}
	p.Diagnostics = auth.DiagnosticsOf(err)
	var own []string // the error's own challenges
	if e, ok := errors.AsType[*yard.Error](err); ok {
		p.Errors = e.Fields
		if e.Code == yard.EGONE {
			p.Oldest = json.RawMessage("null")
			if e.Oldest != "" {
				p.Oldest, _ = json.Marshal(e.Oldest)
			}
		}
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		own = e.Challenge
		if e.AcceptPatch != "" {
			w.Header().Set("Accept-Patch", e.AcceptPatch)
		}
	}
	if code == yard.EINTERNAL {
		s.logInternal(w, r, err)
	}
	// A 401 carries a challenge per scheme (docs/auth.md); a scheme's own
	// challenge from the error (OAuth's oauth_problem) takes the place
	// of that scheme's plain one. The error's other challenges follow
	// (on any status).
	used := make([]bool, len(own))
	if kind.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		for _, c := range s.deps.Auth.Challenges(r) {
			if i := slices.IndexFunc(own, func(o string) bool { return sameScheme(o, c) }); i >= 0 {
				c, used[i] = own[i], true
			}
			w.Header().Add("WWW-Authenticate", c)
		}
	}
	for i, c := range own {
		if !used[i] {
			w.Header().Add("WWW-Authenticate", c)
		}
	}
	if s.problemXML(r) {
		// A client that sent XML, or asks an order for XML, gets the
		// problem in XML (RFC 9457 appendix B; docs/api.md, Orders).
		writeProblemXML(w, p)
		return
	}
	body, _ := marshalJSON(p)
	writeProblemBody(w, p.Status, "application/problem+json", body)
}

// writeProblemBody writes a problem document of type ct: not stored, and
// without the validators of the resource the request was about.
func writeProblemBody(w http.ResponseWriter, status int, ct string, body []byte) {
	h := w.Header()
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// sameScheme reports whether two challenges are of one authentication
// scheme (their first token, case-insensitively, RFC 9110 §11.1), and for
// Digest of one algorithm.
func sameScheme(a, b string) bool {
	sa, pa := auth.AuthScheme(a)
	sb, pb := auth.AuthScheme(b)
	if sa != sb {
		return false
	}
	return sa != "digest" || digestAlgorithm(pa) == digestAlgorithm(pb)
}

// digestAlgorithm returns the algorithm parameter of a Digest challenge's
// parameters, upper-cased; MD5 when it has none (RFC 7616 §3.3).
func digestAlgorithm(params string) string {
	ps, _ := authparam.Parse(params, false)
	for _, p := range ps {
		if strings.EqualFold(p.Name, "algorithm") {
			return strings.ToUpper(p.Value)
		}
	}
	return "MD5"
}
