package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
)

// The stream of GET /v1/events (Accept: text/event-stream, docs/events.md):
// the events after the client's place from the store, then the live ones
// from the hub, written as Server-Sent Events.

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
	f := yard.EventFilter{After: cur, Resume: q.hasAfter, Limit: defaultEventMax, Match: keep, Owner: ownedBy(p)}
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
			s.streams.Go(func() {
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
			})
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
			default:
				return
			}
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
	return subscribeError(s.deps.Events.Room(yard.PrincipalFromContext(r.Context()).UserID, true))
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
