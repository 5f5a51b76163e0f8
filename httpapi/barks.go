package httpapi

import (
	"bytes"
	"context"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// barkStore is what the bark, schedule and bark-task endpoints need of the
// store; *store.DB is one.
type barkStore interface {
	ApplySchedulePatch(ctx context.Context, dogID string, p yard.SchedulePatch) (differs bool, err error)
	// Clock returns the store's time (tests set it).
	Clock() time.Time
	FindBark(ctx context.Context, dogID, id string) (*yard.Bark, error)
	FindBarks(ctx context.Context, f yard.BarkFilter) ([]*yard.Bark, int, error)
	FindDogCore(ctx context.Context, id string) (*yard.Dog, error)
	LastBark(ctx context.Context, dogID string) (time.Time, error)
	SetScheduleByToken(ctx context.Context, dogID, token string, c yard.ScheduleChange, received time.Time) (applied bool, err error)
	StopSchedule(ctx context.Context, dogID string) error
}

// BarkRunner is what the bark endpoints need of the bark runner (package
// jobs' *Service).
type BarkRunner interface {
	// Bark makes dog d bark with effect, now or as a task (async, and
	// every fetch-code bark); a synchronous effect that failed returns
	// the bark, stored failed, with an EUNAVAILABLE error.
	Bark(ctx context.Context, d *yard.Dog, effect string, async bool) (*yard.Bark, error)
	// Cancel cancels a pending or running bark, or deletes a finished
	// record; anything else is ECONFLICT.
	Cancel(ctx context.Context, dogID, id string) error
	// CheckCodeURL applies the operator's fetch policy to a codeUrl.
	CheckCodeURL(u string) error
	// Tick fires the dog's schedule if a slot of it is due.
	Tick(ctx context.Context, dogID string) (int, error)
}

// barkView is a bark task, and for the record effect the bark record
// (docs/barks.md).
type barkView struct {
	ID         string    `json:"id"`
	Dog        string    `json:"dog"`
	Effect     string    `json:"effect"`
	Status     string    `json:"status"`
	Async      bool      `json:"async"`
	Source     string    `json:"source"`
	CreatedAt  string    `json:"createdAt"`
	StartedAt  *string   `json:"startedAt"`
	FinishedAt *string   `json:"finishedAt"`
	Error      *string   `json:"error"`
	Output     string    `json:"output"`
	Timestamp  *string   `json:"timestamp,omitempty"`
	Attempts   int       `json:"attempts"`
	Slot       *string   `json:"slot,omitempty"`
	Links      barkLinks `json:"_links"`

	dogURL, selfURL string
}

type barkLinks struct {
	Self link `json:"self"`
	Dog  link `json:"dog"`
}

func (s *Server) newBarkView(b *yard.Bark) barkView {
	v := barkView{ID: b.ID, Dog: b.DogID, Effect: b.Effect, Status: b.Status, Async: b.Async, Source: b.Source,
		CreatedAt: Timestamp(b.CreatedAt), StartedAt: TimestampPtr(b.StartedAt), FinishedAt: TimestampPtr(b.FinishedAt),
		Error: nonZero(b.Error), Output: b.Output, Attempts: b.Attempts, dogURL: s.url(yard.DogPath(b.DogID)), selfURL: s.url(yard.BarkPath(b.DogID, b.ID))}
	if b.Effect == yard.EffectRecord && b.Status == yard.BarkSucceeded {
		v.Timestamp = TimestampPtr(b.Timestamp)
	}
	if b.Source == yard.BarkSourceSchedule {
		v.Slot = TimestampPtr(b.Slot)
	}
	v.Links = barkLinks{Self: link{v.selfURL}, Dog: link{v.dogURL}}
	return v
}

// barksReady answers 503 when the server runs without bark workers.
func (s *Server) barksReady(w http.ResponseWriter, r *http.Request) bool {
	if s.deps.Barks == nil {
		s.error(w, r, yard.Errorf(yard.EUNAVAILABLE, "This server does not run bark tasks."))
		return false
	}
	return true
}

// barkRequest is the optional body of POST /barks.
type barkRequest struct {
	Effect *string `json:"effect"`
}

// preference returns the value of the preference name in the request's
// Prefer headers (RFC 7240 §2: "name" or "name=value", with parameters
// after ";"), unquoted, and whether it is there.
func preference(r *http.Request, name string) (string, bool) {
	for _, h := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(h, ",") {
			tok, _, _ := strings.Cut(p, ";")
			tok, val, _ := strings.Cut(tok, "=")
			if strings.EqualFold(strings.TrimSpace(tok), name) {
				return strings.Trim(strings.TrimSpace(val), `"`), true
			}
		}
	}
	return "", false
}

// wantsHTML reports whether the Accept header ranks text/html above JSON
// (RFC 9110 §12.5.1); ties go to JSON.
func wantsHTML(r *http.Request) bool {
	html, js := -1.0, -1.0
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
			if strings.EqualFold(k, "q") {
				if n, err := strconv.ParseFloat(v, 64); err == nil {
					q = n
				}
			}
		}
		switch mt {
		case "text/html":
			html = max(html, q)
		case "application/json":
			js = max(js, q)
		case "*/*", "application/*":
			js = max(js, min(q, 0.99)) // an explicit type beats a wildcard of equal q
		}
	}
	return html > 0 && html > js
}

var hypertext = template.Must(template.New("bark").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><p>{{.Text}} <a href="{{.Href}}">{{.Href}}</a></p></body></html>
`))

// writeHypertext writes the short hypertext body of a 202 or 303: HTML when
// the client prefers it, else the bark as JSON with its links.
func (s *Server) writeHypertext(w http.ResponseWriter, r *http.Request, status int, title, text, href string, v barkView) {
	w.Header().Add("Vary", "Accept")
	if wantsHTML(r) {
		var buf bytes.Buffer
		_ = hypertext.Execute(&buf, map[string]string{"Title": title, "Text": text, "Href": href})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
		return
	}
	writeJSON(w, status, v)
}

// handleBark makes a dog bark: POST /v1/dogs/{dog_id}/barks (mayAsync),
// and the single bark, POST /v1/dogs/{dog_id}/bark, which barks now,
// synchronously (fetch-code stays asynchronous).
func (s *Server) handleBark(mayAsync bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.barksReady(w, r) {
			return
		}
		d, err := s.db.barks.FindDogCore(r.Context(), r.PathValue("dog_id"))
		if err == nil {
			err = canUseDog(r, d)
		}
		var in barkRequest
		if err == nil {
			in, err = decodeOptional[barkRequest](r)
		}
		if err == nil && in.Effect != nil && !yard.ValidEffect(*in.Effect) {
			err = yard.Invalid("Unknown bark effect.", yard.FieldError{Field: "effect", Message: "must be one of email, email-count, record, fetch-code"})
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		effect := d.BarkEffect
		setIf(&effect, in.Effect)
		_, asyncAsked := preference(r, "respond-async")
		asyncAsked = asyncAsked && mayAsync
		w.Header().Add("Vary", "Prefer")
		b, err := s.deps.Barks.Bark(r.Context(), d, effect, asyncAsked)
		if err != nil {
			s.error(w, r, err)
			return
		}
		v := s.newBarkView(b)
		switch {
		case b.Async:
			// RFC 7240 §4.1: the request is accepted; poll the task.
			if asyncAsked {
				w.Header().Set("Preference-Applied", "respond-async")
			}
			w.Header().Set("Location", v.selfURL)
			s.writeHypertext(w, r, http.StatusAccepted, "Bark accepted", "The bark runs in the background; follow its task at", v.selfURL, v)
		case b.Effect == yard.EffectEmailCount:
			// The dog changed (barkCount): see it.
			w.Header().Set("Location", v.dogURL)
			s.writeHypertext(w, r, http.StatusSeeOther, "Dog changed", "The dog barked and its barkCount changed; see", v.dogURL, v)
		case b.Effect == yard.EffectRecord:
			w.Header().Set("Location", v.selfURL)
			writeJSON(w, http.StatusCreated, v)
		default:
			writeJSON(w, http.StatusOK, v)
		}
	}
}

// handleGetBark answers the state of a bark (docs/barks.md): 200 with the task
// while it runs; once finished, 303 to the dog for a succeeded email-count
// bark and for a fetch-code bark that changed the dog, else 200.
func (s *Server) handleGetBark(w http.ResponseWriter, r *http.Request, d *yard.Dog) {
	b, err := s.db.barks.FindBark(r.Context(), d.ID, r.PathValue("bark_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	if wait, ok := preferredWait(r); ok && s.deps.Events != nil {
		// RFC 7240 §4.3: hold the answer until the bark finishes
		// (docs/events.md, "Waiting for a bark").
		applied := true
		if !b.Finished() && wait > 0 {
			if b, applied, err = s.waitForBark(w, r, b, d.Owner, wait); err != nil {
				s.error(w, r, err)
				return
			}
		}
		if applied {
			w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(wait))
		}
	}
	v := s.newBarkView(b)
	w.Header().Set("Cache-Control", "no-cache")
	if b.Status == yard.BarkSucceeded && (b.Effect == yard.EffectEmailCount || (b.Effect == yard.EffectFetchCode && b.DogChanged)) {
		w.Header().Set("Location", v.dogURL)
		s.writeHypertext(w, r, http.StatusSeeOther, "Dog changed", "The bark finished and changed the dog; see", v.dogURL, v)
		return
	}
	modified := b.CreatedAt
	if !b.FinishedAt.IsZero() {
		modified = b.FinishedAt
	} else if !b.StartedAt.IsZero() {
		modified = b.StartedAt
	}
	writeRepresentation(w, r, http.StatusOK, v, modified)
}

// handleDeleteBark cancels a pending or running bark, or deletes a finished
// record (204); anything else is 409.
func (s *Server) handleDeleteBark(w http.ResponseWriter, r *http.Request) {
	if !s.barksReady(w, r) {
		return
	}
	d, err := s.loadDogFor(r)
	if err == nil {
		err = s.deps.Barks.Cancel(r.Context(), d.ID, r.PathValue("bark_id"))
	}
	s.writeNoContent(w, r, err)
}

// handleListBarks pages a dog's barks, newest first.
func (s *Server) handleListBarks(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, func(ctx context.Context, pg yard.Page) ([]*yard.Bark, int, error) {
		d, err := s.loadDogFor(r)
		if err != nil {
			return nil, 0, err
		}
		return s.db.barks.FindBarks(ctx, yard.BarkFilter{DogID: d.ID, Offset: pg.Offset, Limit: pg.Max})
	}, s.newBarkView)
}

// handleLastBark answers {"timestamp"} of the dog's last bark, 404 when it
// never barked.
func (s *Server) handleLastBark(w http.ResponseWriter, r *http.Request, d *yard.Dog) {
	t, err := s.db.barks.LastBark(r.Context(), d.ID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeRepresentation(w, r, http.StatusOK, map[string]string{"timestamp": Timestamp(t)}, t)
}
