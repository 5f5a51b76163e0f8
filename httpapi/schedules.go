package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/yard-api/yard"
)

// Bark schedules (docs/barks.md): the PATCH of a dog that holds one
// (patchSchedule) and the /bark-schedule resource.

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
	// A value that is no HTTP date is ignored (RFC 9110 §13.1.4), which
	// leaves the change without the precondition it needs.
	date, err := http.ParseTime(r.Header.Get("If-Unmodified-Since"))
	if err != nil {
		s.error(w, r, yard.Errorf(yard.EPRECONDREQUIRED, "A change of the bark schedule needs If-Unmodified-Since, an HTTP date (RFC 9110 §5.6.7): the date the request was first sent, so it is applied once."))
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
	s.fireIfDue(r, d.ID, change, now)
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
func (s *Server) handlePostSchedule(w http.ResponseWriter, r *http.Request, d *yard.Dog) {
	in, err := decode[scheduleInput](r)
	var token string
	if err == nil {
		token, err = parseToken(in.Token)
	}
	if err == nil && in.Previous != nil {
		err = yard.Invalid("The bark schedule is malformed.", yard.FieldError{Field: "previous", Message: "is read-only"})
	}
	now := s.db.barks.Clock()
	var change yard.ScheduleChange
	if err == nil {
		change, _, err = parseSchedule(in, now)
	}
	if err == nil {
		_, err = s.db.barks.SetScheduleByToken(r.Context(), d.ID, token, change, now)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.fireIfDue(r, d.ID, change, now)
	w.WriteHeader(http.StatusResetContent)
}

// fireIfDue fires a schedule just set to start now (next 0), so that its
// first bark shows in the schedule (last, previous) by the time the change
// is answered (docs/barks.md). Should that fail, the scheduler's next tick
// fires it.
func (s *Server) fireIfDue(r *http.Request, dogID string, c yard.ScheduleChange, now time.Time) {
	if c.Frequency > 0 && !c.Next.After(now) && s.deps.Barks != nil {
		_, _ = s.deps.Barks.Tick(r.Context(), dogID)
	}
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
	var f float64
	var err error
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &tok)
	} else if err = json.Unmarshal(raw, &f); err == nil {
		tok = strconv.FormatFloat(f, 'g', -1, 64) // 1, 1.0 and 1e0 are one token
	}
	if err != nil || tok == "" || len(tok) > 200 {
		return "", yard.Invalid("The bark schedule's token is not valid.", yard.FieldError{Field: "token", Message: "must be a number or a string of 1-200 characters naming this change"})
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
func (s *Server) handleGetSchedule(w http.ResponseWriter, r *http.Request, d *yard.Dog) {
	if d.Schedule == nil {
		s.error(w, r, yard.Errorf(yard.ENOTFOUND, "The dog has no bark schedule."))
		return
	}
	writeRepresentation(w, r, http.StatusOK, newScheduleView(d.Schedule), d.UpdatedAt)
}

func newScheduleView(sc *yard.BarkSchedule) scheduleView {
	return scheduleView{Last: TimestampPtr(sc.Last), Next: TimestampPtr(sc.Next), Frequency: sc.Frequency}
}

// handleDeleteSchedule stops the schedule: 204; 404 without one.
func (s *Server) handleDeleteSchedule(w http.ResponseWriter, r *http.Request, d *yard.Dog) {
	var err error
	if d.Schedule != nil {
		// Against the validators of GET /bark-schedule.
		err = writePreconditions(r, etagOf(newScheduleView(d.Schedule)), d.UpdatedAt, "bark schedule")
	}
	if err == nil {
		err = s.db.barks.StopSchedule(r.Context(), d.ID)
	}
	s.writeNoContent(w, r, err)
}
