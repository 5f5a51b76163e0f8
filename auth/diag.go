package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/yard-api/yard"
)

// Diagnostics are the members a refused signature adds to its problem
// details, so that a client developer sees what the server computed and
// which part of the request it did not accept (docs/auth.md, "Diagnostics
// of a refused signature"). Nothing in them is secret: no secret, no
// expected signature or response, no hash of a secret; only what the
// client sent, rearranged as the server read it, and the server's clock.
//
// The OAuth members are the OAuth Problem Reporting extension's; an OAuth
// 1.0a refusal at the token endpoints carries the same members in its form
// body. Each scheme adds the members beyond oauth_problem and
// oauth_parameters_* only when its Diagnostics field is set (serve
// --auth-diagnostics, on by default).
type Diagnostics struct {
	// OAuth 1.0a.
	OAuthProblem            string `json:"oauth_problem,omitempty"`
	OAuthParametersAbsent   string `json:"oauth_parameters_absent,omitempty"`
	OAuthParametersRejected string `json:"oauth_parameters_rejected,omitempty"`
	// OAuthAcceptableTimestamps is "MIN-MAX", the Unix seconds the server
	// accepts as oauth_timestamp now.
	OAuthAcceptableTimestamps string `json:"oauth_acceptable_timestamps,omitempty"`
	// OAuthSignatureBaseString is the base string the server signed (RFC
	// 5849 §3.4.1); never with PLAINTEXT, where there is none.
	OAuthSignatureBaseString string `json:"oauth_signature_base_string,omitempty"`

	// Signed requests: the canonical string the server signed and the
	// timestamps it accepts now, "MIN-MAX" Unix seconds.
	CanonicalString      string `json:"canonicalString,omitempty"`
	AcceptableTimestamps string `json:"acceptableTimestamps,omitempty"`

	// Digest: the field of the credentials that was refused (realm,
	// algorithm, qop, uri, nc, nonce, response, …) and, for uri, the
	// request-target the server compared it with.
	DigestField   string `json:"digestField,omitempty"`
	RequestTarget string `json:"requestTarget,omitempty"`
}

// diagnosed is a refusal with its diagnostics.
type diagnosed struct {
	err  *yard.Error
	diag Diagnostics
}

func (e *diagnosed) Error() string { return e.err.Error() }
func (e *diagnosed) Unwrap() error { return e.err }

// withDiagnostics returns e carrying d when on is set (the scheme's
// Diagnostics field), else e alone.
func withDiagnostics(on bool, e *yard.Error, d Diagnostics) error {
	if !on {
		return e
	}
	return &diagnosed{err: e, diag: d}
}

// DiagnosticsOf returns the diagnostics a refusal carries (for an OAuth
// 1.0a refusal, its OAuth Problem Reporting parameters), or nil.
func DiagnosticsOf(err error) *Diagnostics {
	if oe, ok := errors.AsType[*OAuthError](err); ok {
		return &Diagnostics{
			OAuthProblem:              oe.Problem,
			OAuthParametersAbsent:     oe.Extra.Get("oauth_parameters_absent"),
			OAuthParametersRejected:   oe.Extra.Get("oauth_parameters_rejected"),
			OAuthAcceptableTimestamps: oe.Extra.Get("oauth_acceptable_timestamps"),
			OAuthSignatureBaseString:  oe.Extra.Get("oauth_signature_base_string"),
		}
	}
	if de, ok := errors.AsType[*diagnosed](err); ok {
		d := de.diag
		return &d
	}
	return nil
}

// acceptableTimestamps is the window of timestamps accepted at now, as
// the OAuth Problem Reporting extension writes it: "MIN-MAX" Unix seconds.
func acceptableTimestamps(now time.Time, window time.Duration) string {
	return fmt.Sprintf("%d-%d", now.Add(-window).Unix(), now.Add(window).Unix())
}
