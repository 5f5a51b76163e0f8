package httpapi

import (
	"context"
	"net/http"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
)

// personStore is what the people endpoints need of the store; *store.DB is
// one.
type personStore interface {
	CreateUser(ctx context.Context, u *yard.User, creds *yard.Credentials) error
	DeleteUser(ctx context.Context, id string) error
	FindUserByID(ctx context.Context, id string) (*yard.User, error)
	FindUsers(ctx context.Context, f yard.UserFilter) ([]*yard.User, int, error)
	SetCredentials(ctx context.Context, userID string, c *yard.Credentials) error
	UpdateUser(ctx context.Context, id string, upd yard.UserUpdate) (*yard.User, error)
}

// personView is the representation of a person.
type personView struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Email    string   `json:"email"`
	Phone    string   `json:"phone"`
	Roles    []string `json:"roles"`
	Disabled bool     `json:"disabled"`
	// Password is present only in the answer to a create that generated it.
	Password string `json:"password,omitempty"`
}

func newPersonView(u *yard.User) personView {
	return personView{ID: u.ID, Name: u.Name, Email: u.Email, Phone: u.Phone, Roles: u.Roles, Disabled: u.Disabled}
}

type personCreate struct {
	ID       *string   `json:"id"` // read-only: refused (the server chooses)
	Name     string    `json:"name"`
	Email    string    `json:"email"`
	Phone    string    `json:"phone"`
	Roles    *[]string `json:"roles"` // absent: ["user"]; empty: refused
	Disabled bool      `json:"disabled"`
	Password string    `json:"password"`
}

// handleCreatePerson creates a person (admin). Without a password in the
// body one is generated and returned once.
func (s *Server) handleCreatePerson(w http.ResponseWriter, r *http.Request) {
	in, err := decode[personCreate](r)
	if err == nil && in.ID != nil {
		err = yard.Invalid("A person's id is chosen by the server.", yard.FieldError{Field: "id", Message: "is read-only; leave it out"})
	}
	generated := in.Password == ""
	if err == nil && generated {
		in.Password = auth.GeneratePassword()
	} else if err == nil {
		err = auth.ValidatePassword(in.Password)
	}
	roles := []string{yard.RoleUser}
	setIf(&roles, in.Roles) // empty: refused by ValidateUser, as by a PATCH
	u := &yard.User{Name: in.Name, Email: in.Email, Phone: in.Phone, Roles: roles, Disabled: in.Disabled}
	if err == nil {
		err = yard.ValidateUser(u)
	}
	var creds *yard.Credentials
	if err == nil {
		creds, err = s.hashing().Credentials(r.Context(), u.Name, in.Password)
	}
	if err == nil {
		err = s.db.people.CreateUser(r.Context(), u, creds)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	v := newPersonView(u)
	if generated {
		v.Password = in.Password
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", s.url("/v1/people/"+u.ID))
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) handleListPeople(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, func(ctx context.Context, p yard.Page) ([]*yard.User, int, error) {
		return s.db.people.FindUsers(ctx, yard.UserFilter{Offset: p.Offset, Limit: max(p.Max, 0)})
	}, newPersonView)
}

// personFor loads the person of the path if the caller is that person or an
// admin; others get 403.
func (s *Server) personFor(r *http.Request) (*yard.User, error) {
	p := yard.PrincipalFromContext(r.Context())
	id := r.PathValue("person_id")
	if id != p.UserID && !p.IsAdmin() {
		return nil, yard.Errorf(yard.EFORBIDDEN, "A person may read and change only their own record.")
	}
	return s.db.people.FindUserByID(r.Context(), id)
}

func (s *Server) handleGetPerson(w http.ResponseWriter, r *http.Request, u *yard.User) {
	writeRepresentation(w, r, http.StatusOK, newPersonView(u), u.UpdatedAt)
}

type personPatch struct {
	sent     `json:"-"`
	ID       *string   `json:"id"` // read-only: may be sent back as read
	Name     *string   `json:"name"`
	Email    *string   `json:"email"`
	Phone    *string   `json:"phone"`
	Roles    *[]string `json:"roles"`
	Disabled *bool     `json:"disabled"`
	Password *string   `json:"password"`
}

// handlePatchPerson changes a person (JSON merge patch, RFC 7396). A person
// may change their own e-mail, phone and password; roles, disabled and the
// name are for admins.
func (s *Server) handlePatchPerson(w http.ResponseWriter, r *http.Request, u *yard.User) {
	in, err := decode[personPatch](r)
	if err == nil && in.ID != nil && *in.ID != u.ID {
		err = yard.Invalid("The id in the body differs from the URI.", yard.FieldError{Field: "id", Message: "is read-only: it must equal the id in the URI"})
	}
	// A merge patch null removes a member (RFC 7396): e-mail and phone can
	// be removed, the other fields cannot.
	if err == nil {
		err = in.refuseNulls("email", "phone")
	}
	if err == nil {
		err = writePreconditions(r, etagOf(newPersonView(u)), u.UpdatedAt, "person")
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	in.Email, in.Phone = in.orEmpty(in.Email, "email"), in.orEmpty(in.Phone, "phone")
	switch p := yard.PrincipalFromContext(r.Context()); {
	case !p.IsAdmin() && (in.Roles != nil || in.Disabled != nil || in.Name != nil):
		err = yard.Errorf(yard.EFORBIDDEN, "Only administrators may change a name, roles or disabled.")
	case in.Password != nil:
		err = auth.ValidatePassword(*in.Password)
	case in.Name != nil && *in.Name != u.Name:
		// Digest HA1 values include the user name: a rename needs a new password.
		err = yard.Invalid("A new name needs a new password.", yard.FieldError{Field: "password", Message: "is required when the name changes"})
	}
	// Validate everything before writing anything.
	probe := *u
	setIf(&probe.Name, in.Name)
	setIf(&probe.Email, in.Email)
	setIf(&probe.Phone, in.Phone)
	setIf(&probe.Roles, in.Roles)
	if err == nil {
		err = yard.ValidateUser(&probe)
	}
	var creds *yard.Credentials
	if err == nil && in.Password != nil {
		creds, err = s.hashing().Credentials(r.Context(), probe.Name, *in.Password)
	}
	var updated *yard.User
	if err == nil {
		updated, err = s.db.people.UpdateUser(r.Context(), u.ID, yard.UserUpdate{Name: in.Name, Email: in.Email, Phone: in.Phone, Roles: in.Roles, Disabled: in.Disabled})
	}
	if err == nil && creds != nil {
		err = s.db.people.SetCredentials(r.Context(), u.ID, creds)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.forgetUser(u.ID)
	writeRepresentation(w, r, http.StatusOK, newPersonView(updated), updated.UpdatedAt)
}

func (s *Server) handleDeletePerson(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("person_id")
	var err error
	if id == yard.PrincipalFromContext(r.Context()).UserID {
		err = yard.Errorf(yard.ECONFLICT, "An administrator cannot delete their own record.")
	} else if err = s.db.people.DeleteUser(r.Context(), id); err == nil {
		s.forgetUser(id)
	}
	s.writeNoContent(w, r, err)
}

// forgetUser drops what the authentication schemes keep of a person who
// changed or is gone (cached credentials, sessions' users).
func (s *Server) forgetUser(id string) {
	if s.basic != nil {
		s.basic.Invalidate(id)
	}
	if s.deps.Kit != nil {
		s.deps.Kit.ForgetUser(id)
	}
}

// hashing is the gate of the process's password hashes: the kit's, else
// the Basic scheme's (a server wired with Basic alone).
func (s *Server) hashing() *auth.HashGate {
	if s.deps.Kit != nil && s.deps.Kit.Hashing != nil {
		return s.deps.Kit.Hashing
	}
	if s.basic != nil {
		return s.basic.Hashing
	}
	return nil
}
