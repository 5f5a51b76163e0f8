package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"math"
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

func barkPath(dogID, id string) string { return "/v1/dogs/" + dogID + "/barks/" + id }

func (s *Server) newBarkView(b *yard.Bark) barkView {
	v := barkView{ID: b.ID, Dog: b.DogID, Effect: b.Effect, Status: b.Status, Async: b.Async, Source: b.Source,
		CreatedAt: Timestamp(b.CreatedAt), StartedAt: TimestampPtr(b.StartedAt), FinishedAt: TimestampPtr(b.FinishedAt),
		Output: b.Output, Attempts: b.Attempts, dogURL: s.url(dogPath(b.DogID)), selfURL: s.url(barkPath(b.DogID, b.ID))}
	if b.Error != "" {
		v.Error = &b.Error
	}
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

// prefers reports whether the request's Prefer header (RFC 7240 §2) holds
// the preference name.
func prefers(r *http.Request, name string) bool {
	_, ok := preference(r, name)
	return ok
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
	accept := r.Header.Get("Accept")
	if accept == "" {
		return false
	}
	html, js := -1.0, -1.0
	for _, part := range strings.Split(accept, ",") {
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

// handleCreateBark makes a dog bark: POST /v1/dogs/{dog_id}/barks.
func (s *Server) handleCreateBark(w http.ResponseWriter, r *http.Request) {
	s.bark(w, r, true)
}

// handleBarkNow is the single bark: POST /v1/dogs/{dog_id}/bark barks now,
// synchronously (fetch-code stays asynchronous).
func (s *Server) handleBarkNow(w http.ResponseWriter, r *http.Request) {
	s.bark(w, r, false)
}

func (s *Server) bark(w http.ResponseWriter, r *http.Request, mayAsync bool) {
	if !s.barksReady(w, r) {
		return
	}
	d, err := s.db.barks.FindDogCore(r.Context(), r.PathValue("dog_id"))
	if err == nil {
		err = canUseDog(r, d)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	in, err := decodeOptional[barkRequest](r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	effect := d.BarkEffect
	if in.Effect != nil {
		if !yard.ValidEffect(*in.Effect) {
			s.error(w, r, yard.Invalid("Unknown bark effect.", yard.FieldError{Field: "effect", Message: "must be one of email, email-count, record, fetch-code"}))
			return
		}
		effect = *in.Effect
	}
	asyncAsked := mayAsync && prefers(r, "respond-async")
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

// handleGetBark answers the state of a bark (docs/barks.md): 200 with the task
// while it runs; once finished, 303 to the dog for a succeeded email-count
// bark and for a fetch-code bark that changed the dog, else 200.
func (s *Server) handleGetBark(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
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
	writeRepresentation(w, r, v, modified)
}

// handleDeleteBark cancels a pending or running bark, or deletes a finished
// record (204); anything else is 409.
func (s *Server) handleDeleteBark(w http.ResponseWriter, r *http.Request) {
	if !s.barksReady(w, r) {
		return
	}
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if err := s.deps.Barks.Cancel(r.Context(), d.ID, r.PathValue("bark_id")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleListBarks pages a dog's barks, newest first.
func (s *Server) handleListBarks(w http.ResponseWriter, r *http.Request) {
	pg, err := s.pageOf(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	barks, total, err := s.db.barks.FindBarks(r.Context(), yard.BarkFilter{DogID: d.ID, Offset: pg.Offset, Limit: pg.Max})
	if err != nil {
		s.error(w, r, err)
		return
	}
	views := make([]barkView, 0, len(barks))
	if pg.Max > 0 {
		for _, b := range barks {
			views = append(views, s.newBarkView(b))
		}
	}
	s.writePage(w, r, views, total, pg)
}

// handleLastBark answers {"timestamp"} of the dog's last bark, 404 when it
// never barked.
func (s *Server) handleLastBark(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	t, err := s.db.barks.LastBark(r.Context(), d.ID)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeRepresentation(w, r, map[string]string{"timestamp": Timestamp(t)}, t)
}

// ---- schedules ----

// scheduleInput is the schedule object of a PATCH (barks) or of POST
// /bark-schedule.
type scheduleInput struct {
	Token     json.RawMessage `json:"token"`
	Next      json.RawMessage `json:"next"`
	Frequency json.RawMessage `json:"frequency"`
	// Previous is response-only; it is accepted (and ignored) so that the
	// barks object of a GET can be sent back.
	Previous json.RawMessage `json:"previous"`
}

// parseSchedule checks a schedule object: 400 for malformed values, 403
// (schedule refused) for a frequency under one minute. It reports whether
// the stored representation will differ from what was sent (next 0 or in
// Unix seconds, a stopped schedule), which makes a PATCH answer 205.
func parseSchedule(in scheduleInput, now time.Time) (yard.ScheduleChange, bool, error) {
	var c yard.ScheduleChange
	var fields []yard.FieldError
	var freq float64
	raw := bytes.TrimSpace(in.Frequency)
	if len(raw) == 0 || string(raw) == "null" {
		fields = append(fields, yard.FieldError{Field: "frequency", Message: "is required: minutes between barks, 0 to stop"})
	} else if err := json.Unmarshal(raw, &freq); err != nil || math.IsNaN(freq) {
		fields = append(fields, yard.FieldError{Field: "frequency", Message: "must be a number of minutes"})
	} else if freq >= 1 && freq != math.Trunc(freq) {
		fields = append(fields, yard.FieldError{Field: "frequency", Message: "must be a whole number of minutes"})
	} else if freq > 1e7 {
		fields = append(fields, yard.FieldError{Field: "frequency", Message: "must be at most 10000000 minutes"})
	}
	differs := false
	if len(fields) == 0 && freq == 0 {
		differs = true // the schedule is removed from the representation
	} else if len(fields) == 0 || len(bytes.TrimSpace(in.Next)) > 0 {
		t, err := ParseTimestamp(in.Next, now)
		if err != nil {
			fields = append(fields, yard.FieldError{Field: "next", Message: err.Error()})
		} else {
			c.Next = t.Truncate(time.Millisecond)
			n := bytes.TrimSpace(in.Next)
			// Stored otherwise than sent: 0, Unix seconds, finer than
			// milliseconds, or another offset than Z (stored in UTC).
			if n[0] != '"' || string(n) == `"0"` || !t.Equal(c.Next) || !bytes.HasSuffix(n, []byte(`Z"`)) {
				differs = true
			}
		}
	}
	if len(fields) > 0 {
		return c, false, yard.Invalid("The bark schedule is malformed.", fields...)
	}
	if freq != 0 && freq < 1 {
		return c, false, yard.Errorf(yard.ESCHEDULEREFUSED, "The frequency must be at least 1 minute (%g was sent); 0 stops the schedule.", freq)
	}
	c.Frequency = int(freq)
	return c, differs, nil
}

// patchSchedule handles a PATCH of a dog whose body holds barks
// (docs/barks.md): If-Unmodified-Since is required (428); a repeat of the last applied
// request is answered as before without applying it again; a date older
// than the dog's last change is 412; a refused schedule 403; else 204, or
// 205 when the stored representation differs from what was sent.
func (s *Server) patchSchedule(w http.ResponseWriter, r *http.Request, v *dogVersion, d *yard.Dog, body []byte, barks json.RawMessage, fields yard.DogUpdate) {
	ius := r.Header.Get("If-Unmodified-Since")
	if ius == "" {
		s.error(w, r, yard.Errorf(yard.EPRECONDREQUIRED, "A change of the bark schedule needs If-Unmodified-Since: the date the request was first sent, so it is applied once."))
		return
	}
	date, err := http.ParseTime(ius)
	if err != nil {
		s.error(w, r, yard.Invalid("If-Unmodified-Since is not an HTTP date.", yard.FieldError{Field: "If-Unmodified-Since", Message: "must be an HTTP date (RFC 9110 §5.6.7)"}))
		return
	}
	now := s.db.barks.Clock()
	field := "barks."
	if v == dogV2 {
		field = "schedule."
	}
	var change yard.ScheduleChange
	differs := true
	if string(bytes.TrimSpace(barks)) != "null" { // null removes the schedule (RFC 7396)
		in, err := unmarshalStrict[scheduleInput](barks)
		if err != nil {
			s.error(w, r, prefixField(err, field))
			return
		}
		if in.Token != nil {
			s.error(w, r, yard.Invalid("The bark schedule is malformed.", yard.FieldError{Field: field + "token", Message: "is a field of POST /bark-schedule, not of the dog"}))
			return
		}
		change, differs, err = parseSchedule(in, now)
		if err != nil {
			s.error(w, r, prefixField(err, field))
			return
		}
	}
	differs, err = s.db.barks.ApplySchedulePatch(r.Context(), d.ID, yard.SchedulePatch{Date: date, Hash: requestHash(body),
		Change: change, Received: now, Differs: differs, Fields: fields})
	if err != nil {
		s.error(w, r, err)
		return
	}
	v.headers(s, w, d)
	// The store does not return the dog the schedule changed: read it.
	if after, err := s.loadDogFor(r); err == nil {
		s.dogValidators(w, v, after)
	}
	if differs {
		w.WriteHeader(http.StatusResetContent)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// requestHash identifies a schedule PATCH for its repeats (docs/barks.md):
// the SHA-256 of its JSON body in a canonical form (keys sorted, white
// space and the spelling of numbers not counted), so a client that
// serialises the same request again is still recognised. The body was
// decoded strictly before, so it parses.
func requestHash(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			body = b
		}
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// prefixField names the fields of a validation error inside an object.
func prefixField(err error, prefix string) error {
	if e, ok := err.(*yard.Error); ok && len(e.Fields) > 0 {
		c := *e
		c.Fields = nil
		for _, f := range e.Fields {
			c.Fields = append(c.Fields, yard.FieldError{Field: prefix + f.Field, Message: f.Message})
		}
		return &c
	}
	return err
}

// handlePostSchedule sets the schedule through the bark-schedule resource:
// 205; a token already applied to this dog changes nothing (205 again).
func (s *Server) handlePostSchedule(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	in, err := decode[scheduleInput](r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	token, err := parseToken(in.Token)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if in.Previous != nil {
		s.error(w, r, yard.Invalid("The bark schedule is malformed.", yard.FieldError{Field: "previous", Message: "is read-only"}))
		return
	}
	now := s.db.barks.Clock()
	change, _, err := parseSchedule(in, now)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if _, err := s.db.barks.SetScheduleByToken(r.Context(), d.ID, token, change, now); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusResetContent)
}

// parseToken reads the idempotency token: a number (or a string) of at most
// 200 characters.
func parseToken(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	bad := yard.Invalid("The bark schedule needs a token.", yard.FieldError{Field: "token", Message: "is required: a number (or string) naming this change, so a repeat is applied once"})
	if len(raw) == 0 || string(raw) == "null" {
		return "", bad
	}
	var tok string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &tok); err != nil {
			return "", bad
		}
	} else {
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			return "", bad
		}
		f, err := n.Float64()
		if err != nil {
			return "", bad
		}
		tok = strconv.FormatFloat(f, 'g', -1, 64) // 1, 1.0 and 1e0 are one token
	}
	if tok == "" || len(tok) > 200 {
		return "", bad
	}
	return tok, nil
}

// scheduleView is the bark-schedule resource.
type scheduleView struct {
	Last      *string `json:"last"`
	Next      *string `json:"next"`
	Frequency int     `json:"frequency"`
}

// handleGetSchedule answers {"last","next","frequency"}; 404 without a
// schedule.
func (s *Server) handleGetSchedule(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if d.Schedule == nil {
		s.error(w, r, yard.Errorf(yard.ENOTFOUND, "The dog has no bark schedule."))
		return
	}
	writeRepresentation(w, r, newScheduleView(d.Schedule), d.UpdatedAt)
}

func newScheduleView(sc *yard.BarkSchedule) scheduleView {
	return scheduleView{Last: TimestampPtr(sc.Last), Next: TimestampPtr(sc.Next), Frequency: sc.Frequency}
}

// handleDeleteSchedule stops the schedule: 204; 404 without one.
func (s *Server) handleDeleteSchedule(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadDogFor(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if d.Schedule != nil {
		// Against the validators of GET /bark-schedule.
		if err := writePreconditions(r, etagOf(newScheduleView(d.Schedule)), d.UpdatedAt, "bark schedule"); err != nil {
			s.error(w, r, err)
			return
		}
	}
	if err := s.db.barks.StopSchedule(r.Context(), d.ID); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
