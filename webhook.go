package yard

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Webhooks (docs/events.md, "Webhooks"): a person subscribes a URL to event
// types; every matching event they may see is POSTed there, signed as
// Standard Webhooks say, at least once.

// Bounds and timings of webhooks (docs/events.md, "Webhooks").
const (
	// MaxWebhooksPerPerson bounds the subscriptions one person holds;
	// creating one more is ECONFLICT.
	MaxWebhooksPerPerson = 20
	// MaxWebhookURL bounds a subscription's URL, in bytes.
	MaxWebhookURL = 2000
	// MaxWebhookTypes bounds the patterns of a subscription's types.
	MaxWebhookTypes = 50
	// WebhookRetryFor is how long a delivery is retried after its first
	// attempt failed.
	WebhookRetryFor = 24 * time.Hour
	// WebhookDisableAfter is how long a subscription's deliveries may fail
	// in a row (no success in between) before it is disabled.
	WebhookDisableAfter = 24 * time.Hour
	// WebhookSecretPrefix starts every signing secret (Standard Webhooks).
	WebhookSecretPrefix = "whsec_"
	// webhookSecretBytes is the length of a secret's random part.
	webhookSecretBytes = 32
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"   // not tried yet, or being tried now
	DeliverySucceeded = "succeeded" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // any other answer, or none
)

// Webhook is a subscription. Marshalled as it is, it is the data of a
// webhook.disabled event; the secret is never part of it.
type Webhook struct {
	ID    string `json:"id"`
	Owner string `json:"owner"` // user id
	URL   string `json:"url"`
	// Types are patterns as in GET /v1/events?types= (an exact type,
	// "family.*" or "*"); empty means every type.
	Types   []string `json:"types"`
	Enabled bool     `json:"enabled"`
	// DisabledReason says why the server disabled the subscription; empty
	// when it is enabled or its owner disabled it.
	DisabledReason string `json:"disabledReason,omitempty"`
	// FailingSince is the first failed attempt since the last success;
	// zero when the last attempt succeeded (or none was made).
	FailingSince time.Time `json:"failingSince,omitzero"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	// Secret is the signing key, "whsec_" and base64; shown to its owner
	// once, when the subscription is created.
	Secret string `json:"-"`
}

// Wants reports whether the subscription takes events of type typ.
func (w *Webhook) Wants(typ string) bool { return MatchEventTypes(w.Types, typ) }

// WebhookUpdate holds the writable fields of a subscription; nil leaves a
// field unchanged. Enabling a disabled subscription clears its failure
// state.
type WebhookUpdate struct {
	URL     *string
	Types   *[]string
	Enabled *bool
}

// WebhookFilter narrows a list of subscriptions.
type WebhookFilter struct {
	// Owner, when set, keeps that person's subscriptions.
	Owner  *string
	Offset int
	Limit  int
}

// WebhookDelivery is one attempt to deliver an event to a subscription.
// Each failed attempt that may be retried is followed by a new pending one
// with the next number.
type WebhookDelivery struct {
	ID        string
	WebhookID string
	// Event is the event delivered; its Data is kept only while the
	// attempt is pending.
	Event   Event
	Attempt int
	Status  string
	// Code is the receiver's answer; 0 when there was none.
	Code  int
	Error string
	// Time is when the attempt was made, or, while it is pending, when
	// it is due.
	Time time.Time
	// FirstAttempt is when the first attempt for the event was made (zero
	// before it); retries stop WebhookRetryFor after it.
	FirstAttempt time.Time
}

// WebhookClaim is a pending delivery a worker holds under a lease, with
// what it needs to make the attempt.
type WebhookClaim struct {
	Delivery *WebhookDelivery
	URL      string
	Secret   string
	// Token identifies the lease: finishing the attempt must present it.
	Token string
}

// DeliveryOutcome is how an attempt ended.
type DeliveryOutcome struct {
	// At is when the attempt was made (its request sent); zero is the
	// time it is recorded.
	At        time.Time
	Succeeded bool
	Code      int
	Error     string
	// RetryIn is the wait before the next attempt when this one failed
	// (cut to the end of the retry window).
	RetryIn time.Duration
}

// DeliveryBounds bound the deliveries in flight (claimed, not finished)
// across every process sharing the store.
type DeliveryBounds struct {
	PerWebhook int
	PerPerson  int
}

// NewWebhookSecret returns a new signing secret: "whsec_" and the base64 of
// 32 random bytes.
func NewWebhookSecret() string {
	b := make([]byte, webhookSecretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ValidateWebhookURL checks the form of a subscription's URL: http or https
// with a host, no user information, no fragment, no control characters or
// white space, at most MaxWebhookURL bytes. Which hosts may be reached, and
// whether plain http is allowed, is the delivery policy's to say (package
// webhooks). Errors are EINVALID naming url.
func ValidateWebhookURL(s string) error {
	bad := func(msg string) error {
		return Invalid("The url cannot be used.", FieldError{Field: "url", Message: msg})
	}
	switch {
	case s == "":
		return bad("is required")
	case len(s) > MaxWebhookURL:
		return bad("must be at most " + strconv.Itoa(MaxWebhookURL) + " characters")
	case HasControl(s) || strings.ContainsAny(s, " \u00a0"):
		return bad("must not hold control characters or white space")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return bad("is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return bad("must be an https:// URL")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return bad("must name a host")
	case u.User != nil:
		return bad("must not hold user information (user:password@)")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return bad("must not hold a fragment (#)")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("port must be 1-65535")
		}
	}
	return nil
}

// ValidateWebhookTypes checks a subscription's type patterns and returns
// them without repeats; each must match at least one event type (as
// GET /v1/events?types= requires). Errors are EINVALID naming types.
func ValidateWebhookTypes(types []string) ([]string, error) {
	out := make([]string, 0, len(types))
	var fields []FieldError
	if len(types) > MaxWebhookTypes {
		fields = append(fields, FieldError{Field: "types", Message: "must hold at most " + strconv.Itoa(MaxWebhookTypes) + " patterns"})
	}
	for _, p := range types {
		if !KnownEventPattern(p) {
			fields = append(fields, FieldError{Field: "types", Message: "unknown event type " + strconv.Quote(p)})
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(fields) > 0 {
		return nil, Invalid("Bad event types.", fields...)
	}
	return out, nil
}
