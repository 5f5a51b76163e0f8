package client

import (
	"bufio"
	"bytes"
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
	"unicode/utf8"
)

// Events and bark waits (docs/events.md): a Server-Sent Events stream of
// the principal's events that resumes by id, and a GET of a bark held with
// Prefer: wait until the bark finishes.

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
		if ev.ID == "" {
			ev.ID = b.id
		}
		if ev.Type == "" {
			ev.Type = b.event
		}
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
	d := min(s.retry<<min(n, 10), max(maxBackoff, s.retry))
	if d <= 0 {
		return 0
	}
	return d + time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
}

// retryAfter reads Retry-After (RFC 9110 §10.2.3): seconds or a date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
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
		if attempt > 0 || s.c.Auth == nil || (res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusBadRequest) {
			return resp, nil
		}
		again, err := s.c.Auth.Retry(s.ctx, s.c, resp)
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
	if s.c.err != nil {
		return nil, nil, s.c.err
	}
	q := url.Values{}
	if len(s.opts.Types) > 0 {
		q.Set("types", strings.Join(s.opts.Types, ","))
	}
	if s.opts.Subject != "" {
		q.Set("subject", s.opts.Subject)
	}
	u := s.c.BaseURL + "/v1/events"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if id := s.LastID(); id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	if s.c.UserAgent != "" {
		req.Header.Set("User-Agent", s.c.UserAgent)
	}
	if s.c.Auth != nil {
		if err := s.c.Auth.Apply(s.c, req); err != nil {
			cancel()
			return nil, nil, err
		}
	}
	res, err := s.c.HTTP.Do(req)
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

var (
	errTooLarge = errors.New("client: an event stream line or event exceeds 16 MiB")
	errCutOff   = errors.New("client: the server cut the event stream off")
)

// sseBlock is one dispatched event of an event stream.
type sseBlock struct {
	id, event string
	data      []byte
}

// sseReader parses an event stream as the WHATWG HTML standard's "Server-
// sent events" section says (§9.2.6 Interpreting an event stream): lines
// end in CRLF, LF or CR; a line starting with ":" is a comment; "field:
// value" loses one space after the colon; a line without a colon is a
// field with an empty value; data lines are joined with LF; an id holding
// NUL is ignored; retry takes ASCII digits only; a blank line dispatches;
// an incomplete event at the end of the stream is dropped. A comment
// saying "cut off" ends the connection: the server closes it next
// (docs/events.md, "Streams").
type sseReader struct {
	r       *bufio.Reader
	line    []byte
	skipLF  bool // the last line ended in CR: a following LF belongs to it
	started bool // past a leading byte order mark
	touch   func()
	onRetry func(time.Duration)

	id     string // the last event ID buffer
	lastID string // the last event ID, set from id at each dispatch
	event  string
	data   []byte
	has    bool // a data field arrived since the last dispatch
}

func newSSEReader(r io.Reader, lastID string, touch func(), onRetry func(time.Duration)) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), id: lastID, lastID: lastID, touch: touch, onRetry: onRetry}
}

// readLine returns the next line without its end; a line the stream ends
// in the middle of is not returned.
func (p *sseReader) readLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		n := max(p.r.Buffered(), 1)
		buf, err := p.r.Peek(n)
		if len(buf) == 0 {
			return nil, err
		}
		if p.skipLF {
			p.skipLF = false
			if buf[0] == '\n' {
				_, _ = p.r.Discard(1)
				continue
			}
		}
		if i := bytes.IndexAny(buf, "\r\n"); i >= 0 {
			p.line = append(p.line, buf[:i]...)
			p.skipLF = buf[i] == '\r'
			_, _ = p.r.Discard(i + 1)
			break
		}
		p.line = append(p.line, buf...)
		_, _ = p.r.Discard(len(buf))
		if len(p.line) > maxEventSize {
			return nil, errTooLarge
		}
	}
	if !p.started {
		p.started = true
		p.line = bytes.TrimPrefix(p.line, []byte("\uFEFF"))
	}
	if len(p.line) > maxEventSize {
		return nil, errTooLarge
	}
	return p.line, nil
}

// next returns the next event with data; comments, retry and events
// without data are taken in on the way.
func (p *sseReader) next() (sseBlock, error) {
	for {
		line, err := p.readLine()
		if err != nil {
			return sseBlock{}, err
		}
		if p.touch != nil {
			p.touch()
		}
		if len(line) == 0 {
			// Dispatch (the last event ID is the buffer's even when
			// there is no data).
			p.lastID = p.id
			b := sseBlock{id: p.id, event: p.event, data: bytes.TrimSuffix(p.data, []byte("\n"))}
			has := p.has
			p.event, p.data, p.has = "", nil, false
			if !has {
				continue
			}
			if b.event == "" {
				b.event = "message"
			}
			if !utf8.Valid(b.data) {
				b.data = bytes.ToValidUTF8(b.data, []byte("\uFFFD"))
			}
			return b, nil
		}
		if line[0] == ':' {
			if bytes.HasPrefix(bytes.TrimLeft(line[1:], " "), []byte("cut off")) {
				return sseBlock{}, errCutOff
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			p.event = strings.ToValidUTF8(string(value), "\uFFFD")
		case "data":
			if len(p.data)+len(value) > maxEventSize {
				return sseBlock{}, errTooLarge
			}
			p.data = append(append(p.data, value...), '\n')
			p.has = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.id = strings.ToValidUTF8(string(value), "\uFFFD")
			}
		case "retry":
			if ms, ok := digits(value); ok && p.onRetry != nil {
				p.onRetry(min(time.Duration(ms)*time.Millisecond, maxRetryAfter))
			}
		}
	}
}

// digits reads a non-empty run of ASCII digits (saturating).
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < 1<<40 {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

// Bark is a bark task as GET /v1/dogs/{dog_id}/barks/{bark_id} shows it
// (docs/barks.md).
type Bark struct {
	ID     string `json:"id"`
	Dog    string `json:"dog"`
	Effect string `json:"effect"`
	// Status is pending, running, succeeded, failed or canceled.
	Status     string    `json:"status"`
	Async      bool      `json:"async"`
	Source     string    `json:"source"`
	CreatedAt  time.Time `json:"createdAt"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// Timestamp is when the dog barked (a succeeded record bark).
	Timestamp time.Time `json:"timestamp"`
	Error     string    `json:"error"`
	Output    string    `json:"output"`
	Attempts  int       `json:"attempts"`

	// DogURL is set when the answer was 303 See Other to the dog: the
	// bark succeeded and changed the dog (email-count, or a fetch-code
	// that moved its code revision).
	DogURL string `json:"-"`
	// Response is the answer the bark was read from.
	Response *Response `json:"-"`
}

// Finished reports whether the bark reached a final state.
func (b *Bark) Finished() bool {
	return b.Status == "succeeded" || b.Status == "failed" || b.Status == "canceled"
}

// WaitBark reads the bark at barkURL (the Location of a 202, or its path)
// until it has finished, holding each GET with Prefer: wait=N (RFC 7240
// §4.3; N the seconds left, at most 60) so that the server answers as soon
// as the bark finishes. A 303 to the dog is the answer of a bark that
// succeeded and changed the dog; it is not followed.
//
// It returns the finished bark, a failed or canceled one included, with a
// nil error. When limit (if positive) or ctx's deadline passes first, it
// returns the bark as last read with an error wrapping
// context.DeadlineExceeded; when ctx is cancelled, with ctx's error. A
// refusal is a *Problem; a dropped connection, 429 and 503 are tried again
// within the time left.
func (c *Client) WaitBark(ctx context.Context, barkURL string, limit time.Duration) (*Bark, error) {
	path, ok := strings.CutPrefix(barkURL, c.BaseURL)
	if !ok && (!strings.HasPrefix(barkURL, "/") || strings.HasPrefix(barkURL, "//")) || ok && !strings.HasPrefix(path, "/") {
		// Credentials go only to the client's own server.
		return nil, fmt.Errorf("client: WaitBark: %q is not a URL of %s", barkURL, c.BaseURL)
	}
	if c.HTTP == nil {
		return nil, errors.New("client: WaitBark: the client has no http.Client")
	}
	// The same client, but a 303 is the answer, not a step.
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	nc := *c
	nc.HTTP = &hc

	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	var last *Bark
	failures := 0
	for {
		wait := maxWait
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return last, notFinished(last)
			}
			wait = min(wait, int(left/time.Second))
		}
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second+waitGrace)
		resp, err := nc.Do(rctx, http.MethodGet, path, nil, http.Header{"Prefer": {"wait=" + strconv.Itoa(wait)}})
		cancel()
		var pause time.Duration
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case err != nil:
			var p *Problem
			if errors.As(err, &p) {
				return last, err // a renewal of credentials refused
			}
			pause = min(time.Second<<min(failures, 4), 10*time.Second)
			failures++
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable ||
			resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout:
			pause = retryAfter(resp.Header, time.Now())
			if pause <= 0 {
				pause = min(time.Second<<min(failures, 4), 10*time.Second)
			}
			failures++
		case resp.StatusCode >= 400:
			return last, problemOf(resp)
		default:
			failures = 0
			b := &Bark{Response: resp}
			if len(bytes.TrimSpace(resp.Body)) > 0 {
				if err := json.Unmarshal(resp.Body, b); err != nil {
					return last, fmt.Errorf("client: WaitBark: the answer (%d) is not a bark: %w", resp.StatusCode, err)
				}
			}
			if resp.StatusCode == http.StatusSeeOther {
				b.DogURL = resp.Header.Get("Location")
				if b.Status == "" {
					b.Status = "succeeded"
				}
			} else if resp.StatusCode >= 300 {
				return last, fmt.Errorf("client: WaitBark: unexpected %s", resp.Status)
			}
			last = b
			if b.Finished() {
				return b, nil
			}
			// A server that does not hold the answer (no events, or
			// no room to wait) answers at once: poll, not spin.
			if time.Since(start) < time.Second {
				pause = time.Second
			}
		}
		if pause > 0 {
			if !deadline.IsZero() {
				pause = min(pause, time.Until(deadline))
			}
			t := time.NewTimer(max(pause, 0))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return last, ctx.Err()
			}
		}
	}
}

// notFinished is WaitBark's error when time ran out.
func notFinished(b *Bark) error {
	if b == nil {
		return fmt.Errorf("client: WaitBark: no answer in time: %w", context.DeadlineExceeded)
	}
	return fmt.Errorf("client: bark %s still %s: %w", b.ID, b.Status, context.DeadlineExceeded)
}
