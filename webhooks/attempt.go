package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/internal/tracing"
)

// Standard Webhooks headers (https://www.standardwebhooks.com/, "Signature
// scheme").
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// maxAnswer bounds what is read of a receiver's answer (and then thrown
// away, so the connection can be used again).
const maxAnswer = 64 << 10

// Sign returns the webhook-signature value of a delivery: "v1," and the
// base64 of HMAC-SHA256 over id "." timestamp "." body, keyed by the
// bytes the secret's base64 (after "whsec_") encodes.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, yard.WebhookSecretPrefix))
	if err != nil {
		return "", errors.New("webhooks: the secret is not whsec_ and base64")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// CheckURL is the check made when a subscription's URL is written: its
// form (yard.ValidateWebhookURL), then either a host the policy allows
// (where plain http:// is accepted too) or https:// to a host that is not
// plainly internal, by the rules of fetch-code's codeUrls (an IP literal
// outside the public ranges in any spelling, localhost, the names of
// private networks). Names are resolved, and every address checked, when
// a delivery connects. Errors are EINVALID naming url.
func CheckURL(p *fetch.Policy, s string) error {
	if err := yard.ValidateWebhookURL(s); err != nil {
		return err
	}
	p = cmp.Or(p, &fetch.Policy{})
	u, _ := url.Parse(s) // ValidateWebhookURL parsed it
	port := cmp.Or(u.Port(), map[string]string{"https": "443", "http": "80"}[u.Scheme])
	if p.HostAllowed(u.Hostname(), port) {
		return nil
	}
	bad := func(msg string) error {
		return yard.Invalid("The url cannot be used.", yard.FieldError{Field: "url", Message: msg})
	}
	if u.Scheme != "https" {
		return bad("must be an https:// URL (plain http:// only to a host the operator allows)")
	}
	if err := p.CheckURL("https://" + u.Host + "/"); err != nil {
		return bad(err.Error())
	}
	return nil
}

// PolicyChecker makes CheckURL with one policy: what the API's webhook
// endpoints need of the deliveries (httpapi.WebhookChecker). A server
// gives the API this and the Service the same policy, so the API, whose
// RenderEvent the Service is built with, is built first.
type PolicyChecker struct{ Policy *fetch.Policy }

// CheckURL applies the policy to a subscription's URL being written.
func (c PolicyChecker) CheckURL(u string) error { return CheckURL(c.Policy, u) }

// newClient is the client of every attempt: no proxy from the
// environment, no redirects followed, no cookies, and every connection
// through dial.
func (s *Service) newClient() *http.Client {
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           s.dial,
		TLSClientConfig:       cmp.Or(s.TLSConfig, &tls.Config{MinVersion: tls.VersionTLS12}).Clone(),
		TLSHandshakeTimeout:   attemptTimeout,
		ResponseHeaderTimeout: attemptTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * s.Workers,
		// Many subscriptions may share a receiver's host, so all the
		// workers may be sending to it: keeping only PerWebhook idle
		// connections opened a new one for a fifth of the deliveries
		// (2,182 for 10,000 with 16 workers, 16 now).
		MaxIdleConnsPerHost:    s.Workers,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
	}
	return &http.Client{
		Transport: t,
		Timeout:   attemptTimeout,
		// A 3xx is the answer, and a failure (docs/events.md).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// notAllowed is a connection the policy refused.
type notAllowed struct{ err error }

func (e *notAllowed) Error() string { return e.err.Error() }
func (e *notAllowed) Unwrap() error { return e.err }

// dial connects to addr for an attempt through the same guarded dial as
// code fetches (fetch.Policy.Dial): a host the policy allows as it is; any
// other only at public addresses, resolved now and checked again as the
// socket connects. A refusal is a notAllowed.
func (s *Service) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, &notAllowed{errors.New("host not allowed: bad port")}
	}
	if !s.Policy.HostAllowed(host, portStr) {
		if err := s.Policy.CheckURL("https://" + net.JoinHostPort(host, portStr) + "/"); err != nil {
			return nil, &notAllowed{err}
		}
	}
	c, err := s.Policy.Dial(ctx, &net.Dialer{Timeout: attemptTimeout}, host, uint16(port))
	if errors.Is(err, fetch.ErrNotPublic) {
		return nil, &notAllowed{err}
	}
	return c, err
}

// attempt POSTs the claim's event to its URL once and says how it went.
// The outcome's error is yard's own words for what happened, never the
// receiver's answer nor network details; detail is the underlying error,
// for the operator's log.
func (s *Service) attempt(ctx context.Context, c *yard.WebhookClaim) (out yard.DeliveryOutcome, detail error) {
	d := c.Delivery
	if s.Tracing != nil {
		var span trace.Span
		ctx, span = s.Tracing.Tracer(tracing.Scope).Start(ctx, "webhook POST", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(tracing.HTTPMethod.String(http.MethodPost), tracing.WebhookID.String(d.WebhookID),
				tracing.EventType.String(d.Event.Type), tracing.WebhookAttempt.Int(d.Attempt)))
		defer func() {
			if out.Code != 0 {
				span.SetAttributes(tracing.HTTPStatus.Int(out.Code))
			}
			if !out.Succeeded {
				tracing.Failf(span, "webhook", out.Error)
			}
			span.End()
		}()
	}
	at := s.Now()
	// The policy again: the URL may predate a change of the allow-list.
	if err := CheckURL(s.Policy, c.URL); err != nil {
		msg := "the url cannot be used"
		if ye, ok := errors.AsType[*yard.Error](err); ok && len(ye.Fields) > 0 {
			msg = ye.Fields[0].Message
		}
		return yard.DeliveryOutcome{At: at, Error: msg}, err
	}
	body := s.Render(&d.Event)
	ts := at.Unix()
	sig, err := Sign(c.Secret, d.Event.ID.String(), ts, body)
	if err != nil {
		return yard.DeliveryOutcome{At: at, Error: "the subscription's secret is unusable"}, err
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(actx, http.MethodPost, c.URL, bytes.NewReader(body)) // CheckURL parsed the URL
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "yard-webhooks/1")
	h.Set(HeaderID, d.Event.ID.String())
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, sig)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.ServerAddress.String(req.URL.Hostname())) // the host only: the query may hold a token
	}
	tracing.Inject(ctx, h)
	resp, err := s.client.Do(req)
	if err != nil {
		// The log gets the cause without the URL, whose query may hold
		// the receiver's token.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return yard.DeliveryOutcome{At: at, Error: describe(err)}, err
	}
	// The status decides; the body is read (within the time left) only so
	// that the connection can serve the next attempt.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return yard.DeliveryOutcome{At: at, Succeeded: true, Code: code}, nil
	case code >= 300 && code < 400:
		return yard.DeliveryOutcome{At: at, Code: code, Error: fmt.Sprintf("answered %d; redirects are not followed", code)}, nil
	default:
		return yard.DeliveryOutcome{At: at, Code: code, Error: fmt.Sprintf("answered %d", code)}, nil
	}
}

// describe names the failure of an attempt that got no answer.
func describe(err error) string {
	var na *notAllowed
	var verify *tls.CertificateVerificationError // what a handshake whose verification failed returns
	var ne net.Error
	switch {
	case errors.As(err, &na), errors.Is(err, fetch.ErrNotPublic):
		if na != nil && strings.HasPrefix(na.Error(), "host not allowed") {
			return na.Error()
		}
		return "host not allowed: not a public address"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer within " + attemptTimeout.String()
	case errors.As(err, &verify):
		return "TLS: the receiver's certificate is not valid for its host"
	case errors.Is(err, context.Canceled):
		return "canceled (the server is stopping)"
	}
	return "could not connect"
}
