package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/tracing"
)

// Text is one text message.
type Text struct {
	// ID is the idempotency key of the request, derived from the task.
	ID   string
	To   string
	Body string
}

// Texter sends text messages. The bark effect gives it only texts with a
// recipient (an owner without a phone number gets none).
type Texter interface {
	SendText(ctx context.Context, t Text) error
}

// SMSAPI sends text messages through a Twilio-style HTTP API: a form POST
// of To, From and Body to {Base}/Accounts/{Account}/Messages.json with Basic
// authentication by account and token. The request carries the text's id
// as I-Twilio-Idempotency-Token and Idempotency-Key.
type SMSAPI struct {
	Base    string // e.g. https://api.twilio.com/2010-04-01
	Account string
	Token   string
	From    string
	Client  *http.Client
}

// ParseSMSURL reads --sms-url: https://ACCOUNT:TOKEN@host[/path]?from=+1555...
// The path defaults to /2010-04-01. Plain http is accepted only for a
// loopback host, so the token never crosses a network in clear.
func ParseSMSURL(raw string) (*SMSAPI, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("sms url: %w", errors.Unwrap(err))
	}
	switch ip := net.ParseIP(u.Hostname()); {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("sms url: scheme must be https")
	case u.Scheme == "http" && u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()):
		return nil, fmt.Errorf("sms url: plain http only for a loopback host; use https")
	}
	if u.User == nil || u.User.Username() == "" {
		return nil, fmt.Errorf("sms url: give the account and token as https://ACCOUNT:TOKEN@host")
	}
	token, _ := u.User.Password()
	from := u.Query().Get("from")
	if from == "" {
		return nil, fmt.Errorf("sms url: the sender number is missing (add ?from=+15551234567)")
	}
	path := cmp.Or(strings.TrimRight(u.Path, "/"), "/2010-04-01")
	return &SMSAPI{Base: u.Scheme + "://" + u.Host + path, Account: u.User.Username(), Token: token, From: from,
		Client: &http.Client{Timeout: 30 * time.Second}}, nil
}

// SendText posts t to the API. A traced one is a span with the API's host
// and answer (never the number, the text or the URL), and the request
// carries its traceparent.
func (a *SMSAPI) SendText(ctx context.Context, t Text) (err error) {
	ctx, span := tracing.StartClient(ctx, "sms send")
	defer func() {
		if err != nil {
			tracing.Failf(span, "sms", "the text message was not accepted")
		}
		span.End()
	}()
	form := url.Values{"To": {t.To}, "From": {a.From}, "Body": {t.Body}}
	endpoint := a.Base + "/Accounts/" + url.PathEscape(a.Account) + "/Messages.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return permanent("sms: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("I-Twilio-Idempotency-Token", t.ID)
	req.Header.Set("Idempotency-Key", t.ID)
	req.SetBasicAuth(a.Account, a.Token)
	tracing.Inject(ctx, req.Header)
	if span.IsRecording() {
		span.SetAttributes(tracing.HTTPMethod.String(http.MethodPost), tracing.ServerAddress.String(req.URL.Hostname()))
	}
	resp, err := cmp.Or(a.Client, http.DefaultClient).Do(req)
	if err != nil {
		return temporary("sms: %v", err)
	}
	defer resp.Body.Close()
	if span.IsRecording() {
		span.SetAttributes(tracing.HTTPStatus.Int(resp.StatusCode))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var apiErr struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &apiErr)
	msg := fmt.Sprintf("sms: provider answered %s", resp.Status)
	if apiErr.Message != "" {
		msg += ": " + apiErr.Message
	}
	return &Error{Err: errors.New(msg), Temp: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500}
}

// TextOutbox writes each text message as a JSON file named by its id into
// Dir (DATA/outbox/sms), for use without an SMS provider.
type TextOutbox struct{ Dir string }

// SendText writes t to the outbox.
func (o *TextOutbox) SendText(_ context.Context, t Text) error {
	if !idRe.MatchString(t.ID) {
		return permanent("sms: bad id %q", t.ID)
	}
	data, _ := json.MarshalIndent(map[string]string{"id": t.ID, "to": t.To, "body": t.Body,
		"createdAt": time.Now().UTC().Format(time.RFC3339)}, "", "  ")
	return writeFileAtomic(o.Dir, t.ID+".json", append(data, '\n'))
}
