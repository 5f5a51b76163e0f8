package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
)

// eventStore is what the event endpoints and Prefer: wait need of the
// store; *store.DB is one.
type eventStore interface {
	FindBark(ctx context.Context, dogID, id string) (*yard.Bark, error)
	LastEventID(ctx context.Context) (yard.EventID, error)
	ReadEvents(ctx context.Context, f yard.EventFilter) (*yard.EventPage, error)
}

// Events (docs/events.md): GET /v1/events is the principal's events, as a
// Server-Sent Events stream (Accept: text/event-stream) or as pages of
// JSON; Prefer: wait on a bark holds its answer until the bark finishes.
// Both follow the store's event log through the process's events.Hub.

// Event page bounds (docs/events.md).
const (
	defaultEventMax = 100
	maxEventMax     = 1000
	// heartbeat is the interval of the comment that keeps a quiet stream
	// (and the proxies in its path) alive.
	heartbeat = 15 * time.Second
	// sseRetry is the reconnection delay a stream asks of its client.
	sseRetry = 3 * time.Second
	// streamWrite bounds one write to a stream: a client that reads
	// nothing for this long is cut off.
	streamWrite = 30 * time.Second
	// streamBatch is about the most a stream writes between two flushes
	// from what waits for it.
	streamBatch = 16 << 10
	// maxWait is the longest Prefer: wait honoured (RFC 7240 §4.3).
	maxWait = 60
)

// cloudEvent is an event as clients see it: a CloudEvents 1.0 structured
// JSON object.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            string          `json:"time"`
	Subject         string          `json:"subject"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// RenderEvent renders a stored event as clients get it (a CloudEvent in
// JSON, also the body of a webhook delivery): its data, kept in the store's form of
// the domain value, becomes the resource's representation as GET shows it.
func (s *Server) RenderEvent(e *yard.Event) []byte {
	data := json.RawMessage(e.Data)
	kind, _, _ := strings.Cut(e.Type, ".")
	if !strings.HasSuffix(e.Type, ".deleted") && e.Type != yard.EventCarImported {
		var view any
		switch kind {
		case "dog":
			view = viewOf(e.Data, newDogView)
		case "bark":
			view = viewOf(e.Data, s.newBarkView)
		case "order":
			view = viewOf(e.Data, newOrderDoc)
		case "car":
			view = viewOf(e.Data, newCarView)
		case "garage":
			view = viewOf(e.Data, newGarageView)
		case "webhook":
			view = viewOf(e.Data, newWebhookView)
		}
		if view != nil {
			if b, err := marshalJSON(view); err == nil {
				data = b
			}
		}
	}
	body, _ := marshalJSON(cloudEvent{SpecVersion: "1.0", ID: e.ID.String(), Source: s.deps.BaseURL, Type: e.Type,
		Time: Timestamp(e.Time), Subject: s.url(e.Subject), DataContentType: "application/json", Data: data})
	return body
}

// viewOf decodes an event's data (the store's JSON of a T) and makes its
// representation with view; nil when the data does not decode.
func viewOf[T, V any](data []byte, view func(*T) V) any {
	var v T
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	return view(&v)
}

// eventQuery is a parsed GET /v1/events.
type eventQuery struct {
	after    yard.EventID
	hasAfter bool
	max      int
	types    []string
	subject  string
}

// parseEventQuery reads after (or Last-Event-ID), max, types and subject
// by the one reader of a list's query (yard.ReadParams), with the paging
// of the events (docs/events.md): max default 100, at most 1000, and the
// cursor after instead of offset.
func (s *Server) parseEventQuery(r *http.Request) (eventQuery, error) {
	paging := yard.Paging{DefaultMax: defaultEventMax, Limit: maxEventMax, NoOffset: true}
	page, q, err := yard.ReadParams(s.grammarQuery(r), paging, "after", "types", "subject")
	if err != nil {
		return eventQuery{}, err
	}
	out := eventQuery{max: page.Max}
	// Last-Event-ID wins over after=: an EventSource opened on ?after=X
	// sends the URL unchanged on every reconnection, with the id it got
	// to in the header (WHATWG HTML, "Server-sent events").
	// An empty after= is no place, as if left out: a client's first
	// request of a polling loop sends the cursor it has, none yet.
	after, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if after == "" {
		after, field = q["after"], "after"
	}
	if after != "" {
		if out.after, err = yard.ParseEventID(after, field); err != nil {
			return out, err
		}
		out.hasAfter = true
	}
	if types, ok := q["types"]; ok {
		for t := range strings.SplitSeq(types, ",") {
			t = strings.TrimSpace(t)
			if !yard.KnownEventPattern(t) {
				return out, yard.ParamError("types", "unknown event type "+strconv.Quote(t))
			}
			out.types = append(out.types, t)
		}
	}
	if subject, ok := q["subject"]; ok {
		sub := strings.TrimPrefix(subject, s.deps.BaseURL)
		if !strings.HasPrefix(sub, "/") || yard.HasControl(sub) {
			return out, yard.ParamError("subject", "must be a resource's URL or path")
		}
		out.subject = canonicalSubject(sub)
	}
	return out, nil
}

// subjectAliases map the other paths of a resource to the one its events
// name (their subject): a dog by /v1/dogs/{id}/, a car by /cars/{id}, a
// garage by /garages/{id}, an order by /order/{id}.
var subjectAliases = []struct{ from, to string }{
	{"/v2/dogs/", "/v1/dogs/"},
	{"/car/", "/cars/"},
	{"/garage/", "/garages/"},
	{"/orders/", "/order/"},
}

// canonicalSubject is the subject events carry for a path of the same
// resource (subjectAliases; a dog without its trailing slash).
func canonicalSubject(p string) string {
	for _, a := range subjectAliases {
		if rest, ok := strings.CutPrefix(p, a.from); ok && rest != "" {
			p = a.to + rest
			break
		}
	}
	// A dog's identity ends with a slash (/v1/dogs/{id} redirects there).
	if rest, ok := strings.CutPrefix(p, "/v1/dogs/"); ok && rest != "" && !strings.Contains(rest, "/") {
		p += "/"
	}
	return p
}

// keep returns the filter of the query and the principal: who may see an
// event (its owner, or any administrator), its type and its subject (a
// subject ending in "/", a dog, also matches what is under it: its barks).
func (q eventQuery) keep(p *yard.Principal) func(*yard.Event) bool {
	admin := p.IsAdmin()
	return func(e *yard.Event) bool {
		if !admin && e.Owner != p.UserID {
			return false
		}
		if q.subject != "" && e.Subject != q.subject && !(strings.HasSuffix(q.subject, "/") && strings.HasPrefix(e.Subject, q.subject)) {
			return false
		}
		return yard.MatchEventTypes(q.types, e.Type)
	}
}

// eventPage is the JSON form of GET /v1/events.
type eventPage struct {
	Items []json.RawMessage `json:"items"`
	Next  string            `json:"next"`
}

// handleEvents answers GET /v1/events: a stream for a client that accepts
// text/event-stream, else a page of JSON.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q, err := s.parseEventQuery(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	switch negotiate(r.Header.Get("Accept"), "application/json", "text/event-stream") {
	case "":
		s.error(w, r, yard.Errorf(yard.ENOTACCEPTABLE, "This resource is application/json (a page of events) or text/event-stream (a stream)."))
		return
	case "text/event-stream":
		if r.Method == http.MethodHead {
			// What a GET would start with, without holding a stream: the
			// same refusal past the stream limits.
			if err := s.canStream(r); err != nil {
				s.error(w, r, err)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			return
		}
		s.streamEvents(w, r, q)
		return
	}
	p := yard.PrincipalFromContext(r.Context())
	if q.max == 0 {
		// Like max=0 on every list (docs/api.md, "Paging"): no items; nothing
		// is read, so next is the place asked for.
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, eventPage{Items: []json.RawMessage{}, Next: q.after.String()})
		return
	}
	f := yard.EventFilter{After: q.after, Resume: q.hasAfter, Limit: q.max, Match: q.keep(p)}
	if !p.IsAdmin() {
		f.Owner = &p.UserID
	}
	page, err := s.db.events.ReadEvents(r.Context(), f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	body := eventPage{Items: make([]json.RawMessage, 0, len(page.Events)), Next: page.Next.String()}
	for _, e := range page.Events {
		body.Items = append(body.Items, s.RenderEvent(e))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, body)
}

// streamEvents writes the principal's events as Server-Sent Events: those
// after the client's id (from the store), then the live ones (from the
// hub), until the client leaves, falls behind or the server stops.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, q eventQuery) {
	if s.deps.Events == nil {
		s.error(w, r, yard.Errorf(yard.EUNAVAILABLE, "This server does not stream events."))
		return
	}
	p := yard.PrincipalFromContext(r.Context())
	keep := q.keep(p)
	ctx := streamContext(r)
	var only []events.SubOption
	if !p.IsAdmin() {
		only = append(only, events.OwnedBy(p.UserID))
	}
	sub, err := s.deps.Events.Subscribe(ctx, p.UserID, true, keep, only...)
	if err != nil {
		s.error(w, r, subscribeError(err))
		return
	}
	detached := false // the stream went on in a goroutine of its own
	defer func() {
		if !detached {
			s.deps.Events.Unsubscribe(sub)
		}
	}()

	// Start after the client's id, else after the newest event now (the
	// hub may not have handed it out yet). Reading before the 200 goes
	// out checks the id against the retention.
	cur := q.after
	if !q.hasAfter {
		if cur, err = s.db.events.LastEventID(ctx); err != nil {
			s.error(w, r, err)
			return
		}
	}
	f := yard.EventFilter{After: cur, Resume: q.hasAfter, Limit: defaultEventMax, Match: keep}
	if !p.IsAdmin() {
		f.Owner = &p.UserID
	}
	first, err := s.db.events.ReadEvents(ctx, f)
	if err != nil {
		s.error(w, r, err)
		return
	}

	rc := http.NewResponseController(w)
	// The server's read time-out bounds reading a request; a stream lasts
	// longer, and a connection's read deadline passing would end it. On
	// HTTP/1.1 net/http already clears the deadline once it has read a
	// request without a body (connReader.startBackgroundRead); this says
	// so for every protocol and request (TestStreamOutlivesReadTimeout
	// holds the behaviour).
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	out := &streamOut{w: w, rc: rc}
	if r.ProtoMajor == 1 && r.ProtoMinor == 1 && r.Method == http.MethodGet {
		// HTTP/1.1: the stream leaves net/http (docs/events.md,
		// "Streams"). The header goes out chunked, as for any flushed
		// answer without a length; the chunks follow from here.
		if err := rc.Flush(); err != nil {
			return
		}
		if conn, _, err := rc.Hijack(); err == nil {
			// The connection's buffers and the request go with this
			// goroutine; a fresh one writes the events, another notices
			// the client leaving.
			sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			out = &streamOut{conn: conn}
			s.streams.Add(1)
			go func() {
				defer s.streams.Done()
				defer cancel()
				defer func() {
					// Out of the handler, out of its recovery
					// (serve): a panic ends this stream only.
					if v := recover(); v != nil {
						s.deps.Logger.Error("panic", slog.String("in", "event stream"), slog.Any("panic", v))
						out.gone = true
					}
					s.deps.Events.Unsubscribe(sub)
					out.end()
				}()
				go func() {
					var b [64]byte
					for {
						if _, err := conn.Read(b[:]); err != nil {
							cancel()
							return
						}
					}
				}()
				s.sendEvents(sctx, sub, out, cur, f, first)
			}()
			detached = true
			return
		}
	}
	s.sendEvents(ctx, sub, out, cur, f, first)
}

// sendEvents writes a stream's body: the retry field, the backlog from
// first on (read on with f), then the live events of sub after cur, until
// ctx ends, the hub cuts sub off or out cannot write.
func (s *Server) sendEvents(ctx context.Context, sub *events.Sub, out *streamOut, cur yard.EventID, f yard.EventFilter, first *yard.EventPage) {
	// Events are written as they come, each its frame shared by every
	// stream (events.Item.Frame), and flushed once per batch: what the hub
	// handed over together, a page of the backlog.
	add := func(e *events.Item) {
		out.write(e.Frame(s.RenderEvent))
	}
	send := func(b []byte) bool {
		out.write(b)
		return out.flush()
	}
	// drain writes what is waiting on the subscription after cur, up to
	// a batch's size.
	drain := func() {
		for out.pending < streamBatch {
			select {
			case it := <-sub.C:
				if cur.Less(it.Event.ID) {
					add(it)
					cur = it.Event.ID
				}
				continue
			default:
			}
			return
		}
	}
	if !send([]byte("retry: " + strconv.Itoa(int(sseRetry/time.Millisecond)) + "\n\n")) {
		return
	}

	// The backlog: what the store holds after the client's id, up to the
	// hub's position when the subscription began (and beyond: the live
	// events below skip what was sent).
	page := first
	for {
		for _, e := range page.Events {
			add(&events.Item{Event: e})
		}
		if !out.flush() {
			return
		}
		prev := cur
		cur = page.Next
		if !cur.Less(sub.From) || cur == prev {
			break
		}
		f.After = cur
		var err error
		if page, err = s.db.events.ReadEvents(ctx, f); err != nil {
			_ = send([]byte(": the store cannot be read; reconnect with Last-Event-ID\n\n"))
			return
		}
	}

	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			out.gone = true
			return
		case <-sub.Cut:
			// Send what was handed over before the cut, then say why.
			for drain(); out.pending > 0; drain() {
				if !out.flush() {
					return
				}
			}
			_ = send([]byte(": cut off: this stream fell behind or the server is stopping; reconnect with Last-Event-ID\n\n"))
			return
		case it := <-sub.C:
			if cur.Less(it.Event.ID) { // else sent from the backlog
				add(it)
				cur = it.Event.ID
			}
			if drain(); !out.flush() {
				return
			}
		case <-beat.C:
			if !send([]byte(": heartbeat\n\n")) {
				return
			}
		}
	}
}

// streamOut is where a stream's bytes go: the response (HTTP/2, and
// HTTP/1.1 when the connection cannot be taken over), or the taken-over
// HTTP/1.1 connection itself, in chunks of the chunked body its header
// announced. Either way a stream keeps no buffer of its own between
// batches.
type streamOut struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	conn  net.Conn
	chunk *[]byte // the batch being written on conn, from chunkPool

	pending  int // bytes written since the last flush
	deadline time.Time
	err      error
	gone     bool // the client left
}

// chunkHead is the room left at the head of a chunk for its size line.
const chunkHead = 18

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkHead, 4<<10); return &b }}

// setDeadline moves the write deadline on once a third of it has passed,
// not at every write (a system call): a write still has at least
// 2/3·streamWrite, more than the heartbeat's interval, and a stream that
// cannot write for 2/3·streamWrite to streamWrite ends.
func (o *streamOut) setDeadline() {
	if now := time.Now(); o.deadline.Sub(now) < streamWrite*2/3 {
		o.deadline = now.Add(streamWrite)
		if o.conn != nil {
			_ = o.conn.SetWriteDeadline(o.deadline)
		} else {
			_ = o.rc.SetWriteDeadline(o.deadline)
		}
	}
}

func (o *streamOut) write(b []byte) {
	if o.err != nil {
		return
	}
	o.pending += len(b)
	if o.conn == nil {
		o.setDeadline()
		_, o.err = o.w.Write(b)
		return
	}
	if o.chunk == nil {
		o.chunk = chunkPool.Get().(*[]byte)
		*o.chunk = (*o.chunk)[:chunkHead]
	}
	*o.chunk = append(*o.chunk, b...)
}

// flush sends what was written since the last flush; it reports whether
// the stream can still write.
func (o *streamOut) flush() bool {
	n := o.pending
	o.pending = 0
	if o.err != nil {
		return false
	}
	if o.conn == nil {
		if n > 0 {
			o.err = o.rc.Flush()
		}
		return o.err == nil
	}
	if o.chunk == nil {
		return true
	}
	buf := *o.chunk
	// The chunk's size line ends right before its data.
	var hb [chunkHead]byte
	head := strconv.AppendInt(hb[:0], int64(len(buf)-chunkHead), 16)
	head = append(head, '\r', '\n')
	start := chunkHead - len(head)
	copy(buf[start:], head)
	buf = append(buf, '\r', '\n')
	o.setDeadline()
	_, o.err = o.conn.Write(buf[start:])
	*o.chunk = buf[:0]
	if cap(buf) <= 64<<10 {
		chunkPool.Put(o.chunk)
	}
	o.chunk = nil
	return o.err == nil
}

// WaitStreams waits, up to ctx, for the HTTP/1.1 streams that left
// net/http (streamEvents) to end: the server's Shutdown does not wait for
// them, and the hub's Close cuts them off.
func (s *Server) WaitStreams(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.streams.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// end closes a taken-over connection, after the last chunk unless the
// client left or a write failed.
func (o *streamOut) end() {
	if o.conn == nil {
		return
	}
	if o.err == nil && !o.gone {
		_ = o.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = o.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = o.conn.Close()
}

// canStream is what a stream of r's principal would be refused with now
// (subscribeError), or nil.
func (s *Server) canStream(r *http.Request) error {
	if s.deps.Events == nil {
		return yard.Errorf(yard.EUNAVAILABLE, "This server does not stream events.")
	}
	if err := s.deps.Events.Room(yard.PrincipalFromContext(r.Context()).UserID, true); err != nil {
		return subscribeError(err)
	}
	return nil
}

// subscribeError maps a refused subscription to its answer: 429 past the
// person's limit, 503 past the process's, both with Retry-After.
func subscribeError(err error) error {
	switch {
	case errors.Is(err, events.ErrTooMany):
		return &yard.Error{Code: yard.ERATELIMIT, Message: "You hold as many event streams as one person may; close one first.", RetryAfter: 30}
	case errors.Is(err, events.ErrFull), errors.Is(err, events.ErrClosed):
		return &yard.Error{Code: yard.EUNAVAILABLE, Message: "This server holds as many event streams as it may; try again later or another server.", RetryAfter: 5}
	}
	return err
}

// streamContext is the request's context without the store wait's
// deadline (serve): a stream or a wait lasts longer than a store call may,
// and ends when the client leaves.
func streamContext(r *http.Request) context.Context {
	if info, ok := r.Context().Value(routeKey).(*routeInfo); ok && info.base != nil {
		return context.WithValue(info.base, routeKey, info)
	}
	return r.Context()
}

// preferredWait returns N of Prefer: wait=N (RFC 7240 §4.3), capped at
// maxWait, and whether it was asked.
func preferredWait(r *http.Request) (int, bool) {
	val, ok := preference(r, "wait")
	if !ok {
		return 0, false
	}
	// Digits only; a number too long for an int is still more than the
	// cap.
	if val == "" || strings.Trim(val, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(val)
	if err != nil {
		n = maxWait
	}
	return min(n, maxWait), true
}

// waitForBark holds a GET of an unfinished bark until it finishes or wait
// seconds pass (Prefer: wait), woken by the bark's events on any process;
// it returns the bark as it is then, and false when the process had no
// room for another wait (the answer is then immediate).
func (s *Server) waitForBark(w http.ResponseWriter, r *http.Request, b *yard.Bark, owner string, wait int) (*yard.Bark, bool, error) {
	ctx := streamContext(r)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the server's read time-out is not a wait's bound
	_ = rc.SetWriteDeadline(time.Now().Add(time.Duration(wait)*time.Second + streamWrite))
	subject := yard.BarkPath(b.DogID, b.ID)
	sub, err := s.deps.Events.Subscribe(ctx, "", false, func(e *yard.Event) bool {
		return e.Subject == subject && (e.Type == yard.EventBarkSucceeded || e.Type == yard.EventBarkFailed ||
			e.Type == yard.EventBarkCanceled || e.Type == yard.EventBarkDeleted)
	}, events.OwnedBy(owner)) // a bark's events are its dog's owner's
	if err != nil {
		return b, false, nil // no room to wait: answer at once
	}
	defer s.deps.Events.Unsubscribe(sub)
	// It may have finished before the subscription.
	if b, err = s.db.events.FindBark(ctx, b.DogID, b.ID); err != nil || b.Finished() {
		return b, true, err
	}
	timer := time.NewTimer(time.Duration(wait) * time.Second)
	defer timer.Stop()
	select {
	case <-sub.C:
	case <-sub.Cut:
	case <-timer.C:
	case <-ctx.Done():
		return b, true, ctx.Err()
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err = s.db.events.FindBark(rctx, b.DogID, b.ID)
	return b, true, err
}
