// Package yard is the domain of the yard API server: its resources, the
// services that store them, the principal making a request, and the one error
// type every layer speaks. It imports neither net/http nor database/sql.
package yard

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP layer maps each to one status and one problem type.
const (
	EINVALID         = "invalid"               // 400 validation
	EMALFORMED       = "malformed"             // 400 body or query cannot be parsed
	EUNAUTHORIZED    = "unauthorized"          // 401
	EFORBIDDEN       = "forbidden"             // 403
	ENOTFOUND        = "not_found"             // 404
	ENOTACCEPTABLE   = "not_acceptable"        // 406
	ECONFLICT        = "conflict"              // 409
	EGONE            = "gone"                  // 410 (an event id older than the retention)
	EPRECONDITION    = "precondition"          // 412
	ETOOLARGE        = "too_large"             // 413
	EUNSUPPORTED     = "unsupported_media"     // 415
	EPRECONDREQUIRED = "precondition_required" // 428
	ERATELIMIT       = "rate_limited"          // 429
	ETOKENEXPIRED    = "token_expired"         // 400 (spec: expired access token)
	EREFRESHINVALID  = "refresh_invalid"       // 400 (spec: invalid refresh token)
	ESCHEDULEREFUSED = "schedule_refused"      // 403 with an explanation (spec: PATCH schedule failure)
	EUNAVAILABLE     = "unavailable"           // 503
	EINTERNAL        = "internal"              // 500
)

// FieldError names one bad field of a request and why it is bad.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the application error. Message is safe to show to clients;
// internal errors never reach them (the HTTP layer logs and hides them).
type Error struct {
	Code    string
	Message string
	Fields  []FieldError
	// RetryAfter, when non-zero, is the number of seconds after which a rate
	// limited request may be tried again.
	RetryAfter int
	// Challenge asks the HTTP layer to send WWW-Authenticate values other
	// than the default ones (for example Bearer error="invalid_token").
	Challenge []string
	// Oldest, for EGONE, is the oldest event id the store still holds
	// ("" when it holds none).
	Oldest string
	// AcceptPatch, for EUNSUPPORTED on a PATCH, lists the patch formats
	// taken (the Accept-Patch header, RFC 5789 §3.1).
	AcceptPatch string
}

func (e *Error) Error() string {
	if len(e.Fields) > 0 {
		return fmt.Sprintf("yard error: code=%s message=%s fields=%v", e.Code, e.Message, e.Fields)
	}
	return fmt.Sprintf("yard error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a validation error naming the bad fields.
func Invalid(message string, fields ...FieldError) *Error {
	return &Error{Code: EINVALID, Message: message, Fields: fields}
}

// invalidFields is the validation error naming fields, or nil when there
// are none.
func invalidFields(message string, fields []FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	return Invalid(message, fields...)
}

// ErrorCode returns the code of the *Error wrapped in err, "" for nil, and
// EINTERNAL for any other error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	} else if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	} else if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "Internal error."
}
