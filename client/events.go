package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Events (docs/events.md): a Server-Sent Events stream of the principal's
// events that resumes by id (read by sse.go's reader). Bark waits are in
// barks.go.

const (
	// defaultRetry is the reconnection delay until the server sends its
	// own (retry:).
	defaultRetry = 3 * time.Second
	// maxBackoff bounds the wait between failed connections (unless the
	// server's retry: is longer).
	maxBackoff = time.Minute
	// maxRetryAfter bounds a Retry-After or retry: the client honours.
	maxRetryAfter = 10 * time.Minute
	// streamIdle drops a connection on which nothing, not even the
	// heartbeat the server sends every 15 s, arrived for this long: the
	// network lost it without telling.
	streamIdle = 45 * time.Second
	// maxEventSize bounds one line and one event's data.
	maxEventSize = 16 << 20
	// maxWait is the longest Prefer: wait a server honours (RFC 7240
	// §4.3; docs/events.md).
	maxWait = 60
	// waitGrace is how much longer than its wait a held GET may take.
	waitGrace = 15 * time.Second
)

// ErrStreamClosed is returned by EventStream.Next after Close.
var ErrStreamClosed = errors.New("client: event stream closed")

// Event is one event of GET /v1/events: a CloudEvents 1.0 structured JSON
// object (docs/events.md, "An event").
type Event struct {
	// ID is opaque; ids only grow. Pass the last one seen as
	// EventsOptions.After to resume.
	ID   string `json:"id"`
	Type string `json:"type"` // "bark.succeeded", "dog.updated", …
	// Source is the server's base URL; Subject the resource's URL.
	Source  string    `json:"source"`
	Subject string    `json:"subject"`
	Time    time.Time `json:"time"`
	// Data is the resource as GET shows it right after the change
	// ({"id": …} for a deletion).
	Data json.RawMessage `json:"data"`
}

// EventsOptions selects the events of a stream.
type EventsOptions struct {
	// After resumes after this event id; empty starts with the next
	// event.
	After string
	// Types keeps these types: "bark.succeeded", a family "bark.*", or
	// "*". Empty keeps every type.
	Types []string
	// Subject keeps the events of one resource, by URL or path; a dog's
	// URL (with its trailing slash) also keeps its barks'.
	Subject string
}

// GoneError ends a stream whose resume point is older than what the server
// keeps (410): events were missed. Read the resources again, then open a
// new stream (with no After, or After: Oldest).
type GoneError struct {
	// Oldest is the oldest event id the server still keeps ("" when it
	// keeps none).
	Oldest string
	// Problem is the 410's problem.
	Problem *Problem
}

func (e *GoneError) Error() string {
	if e.Oldest == "" {
		return e.Problem.Error() + " (no event is kept)"
	}
	return e.Problem.Error() + " (oldest event kept: " + e.Oldest + ")"
}

// Unwrap returns the problem, so that StatusOf and errors.As see it.
func (e *GoneError) Unwrap() error { return e.Problem }

func goneOf(resp *Response) *GoneError {
	var body struct {
		Oldest string `json:"oldest"`
	}
	_ = json.Unmarshal(resp.Body, &body)
	return &GoneError{Oldest: body.Oldest, Problem: problemOf(resp)}
}

// EventStream is an open stream of events (Client.Events). Next returns
// them one at a time; Close ends the stream. Next is for one goroutine;
// Close and LastID may be called from any.
type EventStream struct {
	c      *Client
	opts   EventsOptions
	ctx    context.Context
	cancel context.CancelCauseFunc

	retry time.Duration // the server's reconnection delay
	// lastID is the last event ID (the SSE one, set at each dispatch):
	// where the stream resumes. delivered is the id of the last event
	// Next returned.
	lastID     atomic.Pointer[string]
	delivered  string
	reconnects atomic.Int64
	err        error // the end of the stream, once it ended

	// The current connection; rd is nil between connections.
	body       io.ReadCloser
	rd         *sseReader
	idle       *time.Timer
	connCancel context.CancelFunc
}

// Events opens a stream of the principal's events (GET /v1/events as
// text/event-stream) and returns once the server has accepted it: every
// event after that moment (or after opts.After) comes out of Next, each
// once, in order.
//
// The stream resumes by itself. When the connection drops, goes silent
// for longer than three heartbeats, is cut off by the server (a reader
// that fell behind, a server stopping) or just ends, the stream connects
// again after the server's retry: delay with Last-Event-ID set to the last
// id received; failed connections are tried again with a growing delay
// (bounded at a minute), after Retry-After when the server gives one
// (429, 503). Each connection applies the client's Authenticator, which
// may renew its credentials (a token pair refreshes, a session signs in
// again). The stream ends, with Next returning the error, on 410 (a
// *GoneError: events were missed), on any other refusal (a *Problem: 400,
// 401, 403…), when ctx ends or on Close.
//
// Events itself waits out 429 and 503 but returns every other failure of
// the first connection: a wrong address or certificate shows at once.
// An http.Client Timeout, if set, also bounds each connection (the stream
// then reconnects that often).
//
// A stream rather than a callback or an iterator: Events returns when the
// stream is open, so a caller can start the changes it wants to see only
// then ("a stream starts with the next event").
func (c *Client) Events(ctx context.Context, opts EventsOptions) (*EventStream, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	s := &EventStream{c: c, opts: opts, ctx: ctx, cancel: cancel, retry: defaultRetry, delivered: opts.After}
	s.setLastID(opts.After)
	if err := s.connect(true); err != nil {
		cancel(err)
		return nil, err
	}
	return s, nil
}

// Next returns the next event, waiting for it and reconnecting as needed.
// Once the stream has ended it returns the error that ended it.
func (s *EventStream) Next() (*Event, error) {
	for {
		if s.err != nil {
			return nil, s.err
		}
		if s.rd == nil {
			if err := s.sleep(s.retry); err != nil {
				s.end(err)
				continue
			}
			s.reconnects.Add(1)
			if err := s.connect(false); err != nil {
				s.end(err)
			}
			continue
		}
		b, err := s.rd.next()
		s.setLastID(s.rd.lastID)
		if err != nil {
			s.detach()
			if errors.Is(err, errTooLarge) || s.ctx.Err() != nil {
				s.end(err)
			}
			continue // dropped, cut off, silent or ended: resume
		}
		ev := &Event{}
		if err := json.Unmarshal(b.data, ev); err != nil {
			s.end(fmt.Errorf("client: event %q is not a CloudEvent: %w", b.id, err))
			continue
		}
		ev.ID, ev.Type = cmp.Or(ev.ID, b.id), cmp.Or(ev.Type, b.event)
		// Ids only grow, and all have one length (docs/events.md): one
		// that does not is a repeat.
		if d := s.delivered; d != "" && len(ev.ID) == len(d) && ev.ID <= d {
			continue
		}
		s.delivered = ev.ID
		return ev, nil
	}
}

// LastID returns the id of the last event received: where the stream
// resumes, and what to keep to resume a later stream (EventsOptions.After).
func (s *EventStream) LastID() string { return *s.lastID.Load() }

func (s *EventStream) setLastID(id string) { s.lastID.Store(&id) }

// Reconnects returns how many times the stream connected again.
func (s *EventStream) Reconnects() int { return int(s.reconnects.Load()) }

// Close ends the stream; a Next in progress returns ErrStreamClosed.
func (s *EventStream) Close() error {
	s.cancel(ErrStreamClosed)
	return nil
}

// end ends the stream with err (the context's cause once it ended).
func (s *EventStream) end(err error) {
	if s.ctx.Err() != nil {
		err = context.Cause(s.ctx)
	}
	s.detach()
	s.err = err
	s.cancel(err)
}

// connect opens a connection. Refusals that say when to come back (429,
// 503) are waited out; other failures are final on the first connection
// and tried again with a growing delay afterwards, except refusals of the
// request itself (4xx), which end the stream.
func (s *EventStream) connect(first bool) error {
	for failures := 0; ; failures++ {
		refused, err := s.dial()
		var wait time.Duration
		switch {
		case err != nil:
			if s.ctx.Err() != nil {
				return context.Cause(s.ctx)
			}
			var p *Problem
			if first || errors.As(err, &p) && !transient(p.Status) {
				return err
			}
		case refused == nil:
			return nil
		case refused.StatusCode == http.StatusGone:
			return goneOf(refused)
		case refused.StatusCode == http.StatusTooManyRequests || refused.StatusCode == http.StatusServiceUnavailable:
			wait = retryAfter(refused.Header, time.Now())
		case !first && transient(refused.StatusCode):
		default:
			return problemOf(refused)
		}
		if wait <= 0 {
			wait = s.backoff(failures)
		}
		if err := s.sleep(wait); err != nil {
			return err
		}
	}
}

// transient reports whether a status may go away by itself.
func transient(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// backoff is the wait after the n-th failed connection in a row (from 0):
// the server's retry delay doubling, bounded, with ±20 % jitter so that
// the clients of a restarted server spread out.
func (s *EventStream) backoff(n int) time.Duration {
	d := min(s.retry<<min(n, 10), max(maxBackoff, s.retry)) // 0 when the server's retry is 0
	return d + time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
}

// retryAfter reads Retry-After (RFC 9110 §10.2.3): seconds or a date; 0
// when there is none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if n, err := strconv.Atoi(v); err == nil {
		return min(time.Duration(max(n, 0))*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

// sleep waits d or until the stream ends.
func (s *EventStream) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.ctx.Done():
		return context.Cause(s.ctx)
	}
}

// dial makes one request for the stream, renewing credentials once after
// a refusal as Client.Do does. A 200 with an event stream is attached as
// the current connection; any other answer comes back as refused, its
// body read.
func (s *EventStream) dial() (refused *Response, err error) {
	for attempt := 0; ; attempt++ {
		res, cancel, err := s.request()
		if err != nil {
			return nil, err
		}
		if res.StatusCode == http.StatusOK {
			ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
			if ct == "text/event-stream" {
				s.attach(res, cancel)
				return nil, nil
			}
		}
		b, rerr := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		cancel()
		if rerr != nil {
			return nil, rerr
		}
		resp := &Response{Response: res, Body: b}
		if res.StatusCode == http.StatusOK {
			return nil, fmt.Errorf("client: GET /v1/events answered %q, not text/event-stream", res.Header.Get("Content-Type"))
		}
		again, err := s.c.renew(s.ctx, attempt, resp)
		if err != nil {
			return nil, err
		}
		if !again {
			return resp, nil
		}
	}
}

// request sends one GET /v1/events with the client's credentials, on a
// context of its own (cancelled to drop the connection).
func (s *EventStream) request() (*http.Response, context.CancelFunc, error) {
	q := url.Values{}
	if len(s.opts.Types) > 0 {
		q.Set("types", strings.Join(s.opts.Types, ","))
	}
	if s.opts.Subject != "" {
		q.Set("subject", s.opts.Subject)
	}
	path := "/v1/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	h := http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	if id := s.LastID(); id != "" {
		h.Set("Last-Event-ID", id)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	res, err := s.c.roundTrip(ctx, http.MethodGet, path, nil, h, s.c.Auth)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return res, cancel, nil
}

// attach makes res the current connection; it is dropped when nothing
// arrives on it for streamIdle.
func (s *EventStream) attach(res *http.Response, cancel context.CancelFunc) {
	s.body, s.connCancel = res.Body, cancel
	s.idle = time.AfterFunc(streamIdle, cancel)
	s.rd = newSSEReader(res.Body, s.LastID(), func() { s.idle.Reset(streamIdle) }, func(d time.Duration) { s.retry = d })
}

// detach drops the current connection, if any.
func (s *EventStream) detach() {
	if s.rd == nil {
		return
	}
	s.idle.Stop()
	s.connCancel()
	s.body.Close()
	s.rd, s.body, s.idle, s.connCancel = nil, nil, nil, nil
}
