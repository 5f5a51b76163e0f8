package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
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
	if render, ok := eventViews[kind]; ok && !strings.HasSuffix(e.Type, ".deleted") && e.Type != yard.EventCarImported {
		if view := render(s, e.Data); view != nil {
			if b, err := marshalJSON(view); err == nil {
				data = b
			}
		}
	}
	body, _ := marshalJSON(cloudEvent{SpecVersion: "1.0", ID: e.ID.String(), Source: s.deps.BaseURL, Type: e.Type,
		Time: Timestamp(e.Time), Subject: s.url(e.Subject), DataContentType: "application/json", Data: data})
	return body
}

// eventViews render the data of an event by the kind of its resource.
var eventViews = map[string]func(s *Server, data []byte) any{
	"dog":     func(_ *Server, data []byte) any { return viewOf(data, newDogView) },
	"bark":    func(s *Server, data []byte) any { return viewOf(data, s.newBarkView) },
	"order":   func(_ *Server, data []byte) any { return viewOf(data, newOrderDoc) },
	"car":     func(_ *Server, data []byte) any { return viewOf(data, newCarView) },
	"garage":  func(_ *Server, data []byte) any { return viewOf(data, newGarageView) },
	"webhook": func(_ *Server, data []byte) any { return viewOf(data, newWebhookView) },
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

// handleEvents answers GET /v1/events, whose query q is: a stream for a
// client that accepts text/event-stream, else a page of JSON.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, q eventQuery) {
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
	w.Header().Set("Cache-Control", "no-store")
	// Like max=0 on every list (docs/api.md, "Paging"): no items; nothing is
	// read, so next is the place asked for.
	body := eventPage{Items: []json.RawMessage{}, Next: q.after.String()}
	if q.max > 0 {
		p := yard.PrincipalFromContext(r.Context())
		page, err := s.db.events.ReadEvents(r.Context(), yard.EventFilter{After: q.after, Resume: q.hasAfter, Limit: q.max, Match: q.keep(p), Owner: ownedBy(p)})
		if err != nil {
			s.error(w, r, err)
			return
		}
		body.Next = page.Next.String()
		for _, e := range page.Events {
			body.Items = append(body.Items, s.RenderEvent(e))
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// preferredWait returns N of Prefer: wait=N (RFC 7240 §4.3), capped at
// maxWait, and whether it was asked.
func preferredWait(r *http.Request) (int, bool) {
	// Digits only; a number too long for an int is still more than the
	// cap.
	val, ok := preference(r, "wait")
	if !ok || val == "" || strings.Trim(val, "0123456789") != "" {
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
