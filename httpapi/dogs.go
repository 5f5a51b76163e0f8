package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
)

// dogStore is what the dog endpoints need of the store; *store.DB is one.
type dogStore interface {
	CreateDog(ctx context.Context, d *yard.Dog) error
	DeleteDog(ctx context.Context, id string) error
	FindDogByID(ctx context.Context, id string) (*yard.Dog, error)
	FindDogs(ctx context.Context, f yard.DogFilter) ([]*yard.Dog, int, error)
	UpdateDog(ctx context.Context, id string, upd yard.DogUpdate) (*yard.Dog, error)
}

// dogView is the v1 representation of a dog (docs/barks.md).
type dogView struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Email        string     `json:"email"`
	Owner        string     `json:"owner"`
	BarkCount    int64      `json:"barkCount"`
	BarkEffect   string     `json:"barkEffect"`
	CodeURL      string     `json:"codeUrl"`
	CodeRevision string     `json:"codeRevision"`
	Barks        *barksView `json:"barks,omitempty"`
}

// barksView is the bark schedule inside the dog representation.
type barksView struct {
	Next      *string  `json:"next"`
	Frequency int      `json:"frequency"`
	Previous  []string `json:"previous"`
}

func newDogView(d *yard.Dog) dogView {
	v := dogView{ID: d.ID, Name: d.Name, Email: d.Email, Owner: d.Owner, BarkCount: d.BarkCount,
		BarkEffect: d.BarkEffect, CodeURL: yard.DisplayCodeURL(d.CodeURL), CodeRevision: d.CodeRevision}
	if sc := d.Schedule; sc != nil {
		b := &barksView{Next: TimestampPtr(sc.Next), Frequency: sc.Frequency, Previous: []string{}}
		for _, t := range sc.Previous {
			b.Previous = append(b.Previous, Timestamp(t))
		}
		v.Barks = b
	}
	return v
}

// checkCodeURL applies the operator's fetch policy to a codeUrl being
// written: 400 naming codeUrl, nothing stored (docs/barks.md, "Where
// fetches may go"). The store checks the form again on every write.
func (s *Server) checkCodeURL(u *string) error {
	if u == nil || *u == "" {
		return nil
	}
	check := (&fetch.Policy{}).CheckURL
	if s.deps.Barks != nil {
		check = s.deps.Barks.CheckCodeURL
	}
	if err := check(*u); err != nil {
		return yard.Invalid("The codeUrl cannot be used.", yard.FieldError{Field: "codeUrl", Message: err.Error()})
	}
	return nil
}

// dogVersion is one version of the dog resource: both read and write the
// same store, and differ only in representation and paths (docs/barks.md).
type dogVersion struct {
	// path is the URI path of a dog.
	path func(id string) string
	// view renders a dog.
	view func(s *Server, d *yard.Dog) any
	// decode reads a request body into the version-neutral dogWrite.
	decode func(r *http.Request) (dogWrite, error)
	// headers sets the headers every response about a dog carries.
	headers func(s *Server, w http.ResponseWriter, d *yard.Dog)
	// listHeaders, when set, sets the headers of the dog list; its Link
	// joins the paging links.
	listHeaders func(s *Server, w http.ResponseWriter)
}

var dogV1 = &dogVersion{
	path:   yard.DogPath,
	view:   func(_ *Server, d *yard.Dog) any { return newDogView(d) },
	decode: decode[dogWrite],
	headers: func(s *Server, w http.ResponseWriter, d *yard.Dog) {
		w.Header().Set("Link", "<"+s.url("/v2/dogs/"+d.ID)+`>; rel="successor-version"`)
	},
	listHeaders: func(s *Server, w http.ResponseWriter) {
		w.Header().Set("Link", "<"+s.url("/v2/dogs")+`>; rel="successor-version"`)
	},
}

// dogWrite is the writable part of a dog; the read-only fields of the
// representation (id, barkCount, codeRevision) are accepted so that a
// representation read with GET can be sent back, and must not differ.
type dogWrite struct {
	// sent is the body as received and its null members.
	sent         `json:"-"`
	ID           *string `json:"id"`
	Name         *string `json:"name"`
	Email        *string `json:"email"`
	Owner        *string `json:"owner"`
	BarkEffect   *string `json:"barkEffect"`
	CodeURL      *string `json:"codeUrl"`
	BarkCount    *int64  `json:"barkCount"`
	CodeRevision *string `json:"codeRevision"`
	// Barks is the schedule (PATCH; see patchSchedule), "schedule" in v2.
	Barks json.RawMessage `json:"barks"`
}

// loadDogFor loads the dog of the path for the caller: its owner or an admin.
func (s *Server) loadDogFor(r *http.Request) (*yard.Dog, error) {
	d, err := s.db.dogs.FindDogByID(r.Context(), r.PathValue("dog_id"))
	if err == nil {
		err = canUseDog(r, d)
	}
	return d, err
}

// withDog serves a request on the dog of the path in version v: it loads
// the dog for the caller (404 or 403 otherwise) and hands it to h.
func (s *Server) withDog(v *dogVersion, h func(http.ResponseWriter, *http.Request, *dogVersion, *yard.Dog)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, err := s.loadDogFor(r)
		if err != nil {
			// The version link goes on every answer about the dog,
			// refusals included.
			v.headers(s, w, &yard.Dog{ID: r.PathValue("dog_id")})
			s.error(w, r, err)
			return
		}
		v.headers(s, w, d)
		h(w, r, v, d)
	}
}

// canUseDog allows the dog's owner and admins.
func canUseDog(r *http.Request, d *yard.Dog) error {
	p := yard.PrincipalFromContext(r.Context())
	if p == nil || (p.UserID != d.Owner && !p.IsAdmin()) {
		return yard.Errorf(yard.EFORBIDDEN, "Only the dog's owner or an administrator may do this.")
	}
	return nil
}

// ownedBy is the owner a list p asks for is narrowed to: p, or nil
// (every owner) for an administrator.
func ownedBy(p *yard.Principal) *string {
	if p.IsAdmin() {
		return nil
	}
	return &p.UserID
}

// checkOwner decides the owner of a dog being written: the caller by
// default; only an admin may name someone else.
func checkOwner(r *http.Request, owner *string) (string, error) {
	p := yard.PrincipalFromContext(r.Context())
	if owner == nil || *owner == "" {
		return p.UserID, nil
	}
	if *owner != p.UserID && !p.IsAdmin() {
		return "", yard.Errorf(yard.EFORBIDDEN, "Only an administrator may give a dog to someone else.")
	}
	return *owner, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// forVersion serves the requests of an endpoint in version v with h.
func forVersion(v *dogVersion, h func(http.ResponseWriter, *http.Request, *dogVersion)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { h(w, r, v) }
}

func (s *Server) createDog(w http.ResponseWriter, r *http.Request, v *dogVersion) {
	in, err := v.decode(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.insertDog(w, r, v, "", in)
}

// insertDog creates the dog in (201), at id when the client chose one
// (PUT) or at an id the server chooses when id is "".
func (s *Server) insertDog(w http.ResponseWriter, r *http.Request, v *dogVersion, id string, in dogWrite) {
	// A new dog gets its schedule with PATCH or /bark-schedule.
	f := fieldIf(readOnlyFields(in), in.Barks != nil, "barks", "is set after the dog exists, with PATCH or /bark-schedule")
	var err error
	if len(f) > 0 {
		err = yard.Invalid("Read-only fields cannot be set on create.", f...)
	}
	if err == nil && in.BarkEffect != nil && *in.BarkEffect == "" {
		// Left out, the effect is record; sent empty, it is none of the four.
		err = yard.Invalid("The dog has invalid fields.", yard.FieldError{Field: "barkEffect", Message: "must be one of email, email-count, record, fetch-code"})
	}
	if err == nil {
		err = s.checkCodeURL(in.CodeURL)
	}
	var owner string
	if err == nil {
		owner, err = checkOwner(r, in.Owner)
	}
	d := &yard.Dog{ID: id, Name: deref(in.Name), Email: deref(in.Email), Owner: owner, BarkEffect: deref(in.BarkEffect), CodeURL: deref(in.CodeURL)}
	if err == nil {
		err = s.db.dogs.CreateDog(r.Context(), d)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	v.headers(s, w, d)
	w.Header().Set("Location", s.url(v.path(d.ID)))
	writeRepresentation(w, r, http.StatusCreated, v.view(s, d), d.UpdatedAt)
}

func readOnlyFields(in dogWrite) []yard.FieldError {
	f := fieldIf(nil, in.ID != nil, "id", "is chosen by the server (or by the URI of a PUT)")
	f = fieldIf(f, in.BarkCount != nil, "barkCount", "is read-only")
	return fieldIf(f, in.CodeRevision != nil, "codeRevision", "is read-only")
}

// sameSchedule reports whether a barks object sent in a PUT describes the
// dog's current schedule (so a representation read with GET can be sent
// back unchanged).
func sameSchedule(raw json.RawMessage, d *yard.Dog) bool {
	if string(raw) == "null" {
		return d.Schedule == nil
	}
	var in struct {
		Next      string  `json:"next"`
		Frequency float64 `json:"frequency"`
	}
	if json.Unmarshal(raw, &in) != nil || d.Schedule == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, in.Next)
	return err == nil && t.Equal(d.Schedule.Next) && in.Frequency == float64(d.Schedule.Frequency)
}

func (s *Server) listDogs(w http.ResponseWriter, r *http.Request, v *dogVersion) {
	writePagedList(s, w, r, func(ctx context.Context, pg yard.Page) ([]*yard.Dog, int, error) {
		dogs, total, err := s.db.dogs.FindDogs(ctx, yard.DogFilter{Offset: pg.Offset, Limit: pg.Max, Owner: ownedBy(yard.PrincipalFromContext(ctx))})
		if err == nil && v.listHeaders != nil {
			v.listHeaders(s, w)
		}
		return dogs, total, err
	}, func(d *yard.Dog) any { return v.view(s, d) })
}

// handleDogRedirect sends every method on /v1/dogs/{id} to the dog's
// identity /v1/dogs/{id}/ with 308, which keeps the method and body.
func (s *Server) handleDogRedirect(w http.ResponseWriter, r *http.Request) {
	// The id as a path segment again: what was sent as %3F or %2F stays
	// in the segment rather than becoming a query or another segment.
	id := url.PathEscape(r.PathValue("dog_id"))
	w.Header().Set("Location", s.redirectURL(r, yard.DogPath(id)))
	dogV1.headers(s, w, &yard.Dog{ID: id})
	w.WriteHeader(http.StatusPermanentRedirect)
}

func (s *Server) getDog(w http.ResponseWriter, r *http.Request, v *dogVersion, d *yard.Dog) {
	writeRepresentation(w, r, http.StatusOK, v.view(s, d), d.UpdatedAt)
}

// putDog replaces the writable fields of a dog (200 with the new
// representation), or creates the dog at a client-chosen id (201).
func (s *Server) putDog(w http.ResponseWriter, r *http.Request, v *dogVersion) {
	id := r.PathValue("dog_id")
	in, err := v.decode(r)
	if err == nil && in.ID != nil && *in.ID != id {
		err = yard.Invalid("The id in the body differs from the URI.", yard.FieldError{Field: "id", Message: "must equal the id in the URI"})
	}
	var d *yard.Dog
	if err == nil {
		if d, err = s.db.dogs.FindDogByID(r.Context(), id); yard.ErrorCode(err) == yard.ENOTFOUND {
			s.createDogAt(w, r, v, id, in)
			return
		}
	}
	if err == nil {
		err = canUseDog(r, d)
	}
	if err == nil {
		err = s.checkCodeURL(in.CodeURL)
	}
	if err == nil {
		err = writePreconditions(r, etagOf(v.view(s, d)), d.UpdatedAt, "dog")
	}
	if err == nil && in.Barks != nil && !sameSchedule(in.Barks, d) {
		err = yard.Errorf(yard.ECONFLICT, "PUT does not change the bark schedule; use PATCH with barks or /bark-schedule.")
	}
	if err == nil && ((in.BarkCount != nil && *in.BarkCount != d.BarkCount) || (in.CodeRevision != nil && *in.CodeRevision != d.CodeRevision)) {
		err = yard.Errorf(yard.ECONFLICT, "barkCount and codeRevision are read-only; send the values the server holds or leave them out.")
	}
	var owner string
	if err == nil {
		owner, err = checkOwner(r, in.Owner)
	}
	// A PUT replaces every writable field: one left out is emptied (the
	// effect becomes record; sent empty, it is refused).
	name, email, effect, codeURL := deref(in.Name), deref(in.Email), yard.EffectRecord, deref(in.CodeURL)
	if in.BarkEffect != nil {
		effect = *in.BarkEffect
	}
	if err == nil {
		d, err = s.db.dogs.UpdateDog(r.Context(), id, yard.DogUpdate{Name: &name, Email: &email, Owner: &owner, BarkEffect: &effect, CodeURL: &codeURL})
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	v.headers(s, w, d)
	writeRepresentation(w, r, http.StatusOK, v.view(s, d), d.UpdatedAt)
}

func (s *Server) createDogAt(w http.ResponseWriter, r *http.Request, v *dogVersion, id string, in dogWrite) {
	if !yard.ValidClientID(id) {
		s.error(w, r, yard.Invalid("The id in the URI cannot be used.", yard.FieldError{Field: "id", Message: "must be 1-64 letters, digits, '-', '_' or '.', and not a reserved word"}))
		return
	}
	// A PUT that creates: If-Match names a dog there is not (412),
	// If-None-Match: * holds.
	if err := writePreconditions(r, "", time.Time{}, "dog"); err != nil {
		s.error(w, r, err)
		return
	}
	// The id of the body, if any, equals the URI's (see putDog).
	in.ID = nil
	s.insertDog(w, r, v, id, in)
}

// patchDog applies a JSON merge patch (RFC 7396) to a dog: 204.
func (s *Server) patchDog(w http.ResponseWriter, r *http.Request, v *dogVersion, d *yard.Dog) {
	in, err := v.decode(r)
	// A merge patch null removes a member (RFC 7396): codeUrl and the
	// schedule can be removed, the other fields cannot.
	if err == nil {
		err = in.refuseNulls("codeUrl", "barks", "schedule")
	}
	in.CodeURL = in.orEmpty(in.CodeURL, "codeUrl")
	if f := readOnlyFields(in); err == nil && len(f) > 0 {
		err = yard.Invalid("Read-only fields cannot be changed.", f...)
	}
	if err == nil {
		err = s.checkCodeURL(in.CodeURL)
	}
	if err == nil && in.Owner != nil {
		_, err = checkOwner(r, in.Owner)
	}
	upd := yard.DogUpdate{Name: in.Name, Email: in.Email, Owner: in.Owner, BarkEffect: in.BarkEffect, CodeURL: in.CodeURL}
	if err == nil && in.Barks != nil {
		// The schedule has its own rules for If-Unmodified-Since
		// (docs/barks.md); entity tags hold as for any write.
		if err = writePreconditions(r, etagOf(v.view(s, d)), time.Time{}, "dog"); err == nil {
			s.patchSchedule(w, r, v, d, in.raw, in.Barks, upd)
			return
		}
	}
	if err == nil {
		err = writePreconditions(r, etagOf(v.view(s, d)), d.UpdatedAt, "dog")
	}
	if err == nil {
		d, err = s.db.dogs.UpdateDog(r.Context(), d.ID, upd)
	}
	if err == nil {
		s.dogValidators(w, v, d)
	}
	s.writeNoContent(w, r, err)
}

// dogValidators sets the validators a GET of d answers with, so that the
// next write after a PATCH can be conditional without a read first.
func (s *Server) dogValidators(w http.ResponseWriter, v *dogVersion, d *yard.Dog) {
	if body, err := marshalJSON(v.view(s, d)); err == nil {
		setValidators(w.Header(), body, d.UpdatedAt)
	}
}

func (s *Server) deleteDog(w http.ResponseWriter, r *http.Request, v *dogVersion, d *yard.Dog) {
	err := writePreconditions(r, etagOf(v.view(s, d)), d.UpdatedAt, "dog")
	if err == nil {
		err = s.db.dogs.DeleteDog(r.Context(), d.ID)
	}
	s.writeNoContent(w, r, err)
}
