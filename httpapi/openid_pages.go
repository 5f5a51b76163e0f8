package httpapi

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/pages"
)

// openidStore is what the OpenID provider's endpoints and pages need of
// the store (its associations and nonces are the provider's own,
// openid.Provider.Store); *store.DB is one.
type openidStore interface {
	FindOpenIDApproval(ctx context.Context, userID, realm string) (*yard.OpenIDApproval, error)
	FindUserByID(ctx context.Context, id string) (*yard.User, error)
	FindUserByName(ctx context.Context, name string) (*yard.User, error)
	SaveOpenIDApproval(ctx context.Context, a *yard.OpenIDApproval) error
}

// The people's side of the OpenID provider: checkid_setup and
// checkid_immediate (GET /openid/login) and the form of the confirmation
// and wrong-user pages (POST /openid/confirm), on the sign-in, consent,
// wrong-user and error pages of package pages. A request that cannot be
// answered by a redirect (no usable return_to, or one outside the realm)
// gets an HTML error page; any other answer goes back to return_to.

// openidRedirect sends the browser to return_to with the message's fields
// added to its query (OpenID 2.0 §5.2.1), with 303 See Other.
func openidRedirect(w http.ResponseWriter, returnTo string, m openid.Message) {
	u, _ := url.Parse(returnTo) // openid.ParseCheckID parsed it (ValidReturnTo)
	q := u.Query()
	for k, v := range m {
		q.Set("openid."+k, v)
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Location", u.String())
	w.WriteHeader(http.StatusSeeOther)
}

// openidRequest reads a checkid request from query or form fields. When it
// returns nil the answer has been written: 503 on a server without the
// provider, an error page, or an indirect error at return_to.
func (s *Server) openidRequest(p *pages.Pages, w http.ResponseWriter, r *http.Request, v url.Values) *openid.CheckIDRequest {
	if _, err := s.openID(); err != nil {
		s.error(w, r, err)
		return nil
	}
	m, err := openid.FromValues(v)
	if err != nil {
		p.Error(w, r, http.StatusBadRequest, "Bad OpenID request", "The request repeats a field: "+err.Error()+".")
		return nil
	}
	switch m["mode"] {
	case openid.ModeCheckIDSetup, openid.ModeCheckIDImmediate:
	case "":
		p.Error(w, r, http.StatusBadRequest, "Not an OpenID request",
			"This is the OpenID provider endpoint of yard. Sites you sign in to with your yard identity send you here; it has nothing to show on its own.")
		return nil
	case openid.ModeAssociate, openid.ModeCheckAuthentication:
		writeKV(w, http.StatusBadRequest, openid.DirectError("associate and check_authentication are direct requests: POST them."))
		return nil
	default:
		p.Error(w, r, http.StatusBadRequest, "Bad OpenID request", "This provider does not know the mode "+m["mode"]+".")
		return nil
	}
	req, err := openid.ParseCheckID(m)
	if errors.Is(err, openid.ErrNoReturn) {
		p.Error(w, r, http.StatusBadRequest, "Cannot sign in to this site",
			"The site that sent you here made a request yard cannot answer safely: "+err.Error()+".")
		return nil
	}
	if err != nil {
		openidRedirect(w, req.ReturnTo, openid.IndirectError(err.Error()))
		return nil
	}
	return req
}

// openidUser returns the signed-in user who may answer req, or nil when
// the answer has been written (sign-in, setup_needed, or an error page).
func (s *Server) openidUser(p *pages.Pages, w http.ResponseWriter, r *http.Request, req *openid.CheckIDRequest) *yard.User {
	pr, err := p.User(r)
	var u *yard.User
	if err == nil && pr != nil {
		u, err = s.db.openid.FindUserByID(r.Context(), pr.UserID)
	}
	switch {
	case err != nil:
		p.Internal(w, r, err)
	case u != nil && (req.Identity == openid.IdentifierSelect || req.Identity == s.openidClaimedID(u.Name)):
		return u
	case req.Immediate():
		openidRedirect(w, req.ReturnTo, openid.Negative(req))
	case u == nil:
		s.openidSignIn(p, w, r, req, "")
	default:
		s.openidWrongUser(p, w, r, req, u)
	}
	return nil
}

// openidSignIn sends the browser to the sign-in form (303), with the name
// filled in when not "", which comes back to the request (as a GET); or,
// when the request is too long to carry, shows why. The way back is a
// local path of at most pages.MaxNext characters.
func (s *Server) openidSignIn(p *pages.Pages, w http.ResponseWriter, r *http.Request, req *openid.CheckIDRequest, username string) {
	next, ok := openidWayBack(req)
	if !ok {
		p.Error(w, r, http.StatusBadRequest, "Request too long",
			"The site that sent you here made a request too long to carry through the sign-in page. Sign in to yard first, then try again.")
		return
	}
	w.Header().Set("Location", s.url(pages.SignInURLAs(next, username)))
	w.WriteHeader(http.StatusSeeOther)
}

// openidWayBack is the local path that repeats req, and whether the
// sign-in form can carry it.
func openidWayBack(req *openid.CheckIDRequest) (string, bool) {
	next := OpenIDEndpoint + "?" + req.Message.Values().Encode()
	return next, pages.LocalPath(next) != ""
}

// openidUserName returns the name of the yard user whose claimed
// identifier is id, or "" when id is not one of this provider's.
func (s *Server) openidUserName(id string) string {
	rest, ok := strings.CutPrefix(id, s.url("/openid/id/"))
	if !ok {
		return ""
	}
	name, err := url.PathUnescape(rest)
	if err != nil || name == "" || strings.ContainsAny(name, "/?#") {
		return ""
	}
	return name
}

// openidHidden carries a checkid request through a page's form, as
// hidden openid.* fields in sorted order.
func openidHidden(req *openid.CheckIDRequest) []pages.Field {
	hidden := make([]pages.Field, 0, len(req.Message))
	for _, k := range slices.Sorted(maps.Keys(req.Message)) {
		hidden = append(hidden, pages.Field{Name: "openid." + k, Value: req.Message[k]})
	}
	return hidden
}

// openidWrongUser answers a checkid_setup for another identifier than the
// signed-in user's with the wrong-user page: it names both, and its form
// (POST /openid/confirm) offers to sign in as someone else
// (decision=switch) or to cancel (decision=deny, a negative assertion,
// OpenID 2.0 §10.2).
func (s *Server) openidWrongUser(p *pages.Pages, w http.ResponseWriter, r *http.Request, req *openid.CheckIDRequest, u *yard.User) {
	wanted, detail := s.openidUserName(req.Identity), req.Identity
	if wanted == "" {
		wanted, detail = req.Identity, ""
	}
	p.WrongUser(w, r, pages.WrongUser{
		Party: req.Realm.String(), Wanted: wanted, WantedDetail: detail, User: u.Name,
		Action: "/openid/confirm", Hidden: openidHidden(req), RedirectTo: []string{req.ReturnTo},
	})
}

// sregShare returns the Simple Registration values of u of the requested
// fields that are allowed. yard users have one name, which is both the
// nickname and the full name.
func sregShare(u *yard.User, req *openid.CheckIDRequest, allowed func(field string) bool) map[string]string {
	all := map[string]string{"nickname": u.Name, "fullname": u.Name}
	if u.Email != "" {
		all["email"] = u.Email
	}
	out := map[string]string{}
	for _, f := range req.SReg.Fields() {
		if v, ok := all[f]; ok && allowed(f) {
			out[f] = v
		}
	}
	return out
}

// assertTo signs a positive assertion for u and redirects to return_to.
func (s *Server) assertTo(p *pages.Pages, w http.ResponseWriter, r *http.Request, req *openid.CheckIDRequest, u *yard.User, sreg map[string]string) {
	prov, err := s.openID()
	if err == nil {
		var m openid.Message
		if m, err = prov.Assert(r.Context(), req, s.openidClaimedID(u.Name), sreg); err == nil {
			openidRedirect(w, req.ReturnTo, m)
			return
		}
	}
	p.Internal(w, r, err)
}

// handleOpenIDCheckID is GET /openid/login: checkid_setup and
// checkid_immediate (OpenID 2.0 §9). Without a session, setup signs the
// user in first and immediate answers setup_needed; a realm the user chose
// to remember is answered at once, else setup asks on the confirmation
// page.
func (s *Server) handleOpenIDCheckID(p *pages.Pages, w http.ResponseWriter, r *http.Request) {
	req := s.openidRequest(p, w, r, r.URL.Query())
	if req == nil {
		return
	}
	u := s.openidUser(p, w, r, req)
	if u == nil {
		return
	}
	approval, err := s.db.openid.FindOpenIDApproval(r.Context(), u.ID, req.Realm.String())
	switch {
	case err == nil:
		s.assertTo(p, w, r, req, u, sregShare(u, req, func(f string) bool { return slices.Contains(approval.SReg, f) }))
		return
	case yard.ErrorCode(err) != yard.ENOTFOUND:
		p.Internal(w, r, err)
		return
	}
	if req.Immediate() {
		openidRedirect(w, req.ReturnTo, openid.Negative(req))
		return
	}
	hidden := openidHidden(req)
	details := []string{"It will know you by the identifier " + s.openidClaimedID(u.Name) + "."}
	if req.SReg != nil && req.SReg.PolicyURL != "" {
		details = append(details, "Its privacy policy: "+req.SReg.PolicyURL)
	}
	var boxes []pages.Checkbox
	labels := map[string]string{"nickname": "Share my nickname", "email": "Share my e-mail address", "fullname": "Share my full name"}
	asked := sregShare(u, req, func(string) bool { return true })
	for _, f := range openid.SRegFields { // in the order of the fields
		if v, ok := asked[f]; ok {
			boxes = append(boxes, pages.Checkbox{Name: "sreg_" + f, Label: labels[f] + " (" + v + ")", Checked: true})
		}
	}
	boxes = append(boxes, pages.Checkbox{Name: "remember", Label: "Remember my answer for this site"})
	p.Consent(w, r, pages.Consent{
		Title: "Sign in to another site?", Party: req.Realm.String(), Question: "asks you to sign in with your yard identity.",
		User: u.Name, Details: details, Action: "/openid/confirm", Hidden: hidden, Checkboxes: boxes,
		AllowLabel: "Sign in", DenyLabel: "Cancel", RedirectTo: []string{req.ReturnTo},
	})
}

// handleOpenIDConfirm is POST /openid/confirm, the form of the
// confirmation and wrong-user pages (CSRF and cross-site checks done by the
// pages' middleware): Sign in (decision=allow) redirects to return_to with
// a signed positive assertion and the shared Simple Registration fields,
// remembering the answer for the realm if asked; Cancel (deny) sends
// openid.mode=cancel; Sign in as someone else (switch) ends the session
// and sends the browser to the sign-in form, which comes back to the same
// checkid_setup.
func (s *Server) handleOpenIDConfirm(p *pages.Pages, w http.ResponseWriter, r *http.Request) {
	form := maps.Clone(r.PostForm)
	maps.DeleteFunc(form, func(k string, _ []string) bool { return len(k) <= 7 || k[:7] != "openid." })
	req := s.openidRequest(p, w, r, form)
	if req == nil {
		return
	}
	if req.Immediate() {
		p.Error(w, r, http.StatusBadRequest, "Bad OpenID request", "checkid_immediate requests are not confirmed on a page.")
		return
	}
	switch r.PostForm.Get("decision") {
	case "deny":
		// A negative assertion (OpenID 2.0 §10.2) says nothing of who is
		// signed in: it needs no session.
		openidRedirect(w, req.ReturnTo, openid.Negative(req))
		return
	case "switch":
		// The session ends only when the sign-in form can come back.
		if _, ok := openidWayBack(req); ok {
			if err := p.SignOut(w, r); err != nil {
				p.Internal(w, r, err)
				return
			}
		}
		s.openidSignIn(p, w, r, req, s.openidUserName(req.Identity))
		return
	case "allow":
	default:
		p.Error(w, r, http.StatusBadRequest, "Bad request", "Choose Sign in, Cancel or Sign in as someone else.")
		return
	}
	u := s.openidUser(p, w, r, req)
	if u == nil {
		return
	}
	sreg := sregShare(u, req, func(f string) bool { return r.PostForm.Get("sreg_"+f) == "on" })
	if r.PostForm.Get("remember") == "on" {
		shared := slices.DeleteFunc(slices.Clone(openid.SRegFields), func(f string) bool {
			_, ok := sreg[f]
			return !ok
		})
		if err := s.db.openid.SaveOpenIDApproval(r.Context(), &yard.OpenIDApproval{UserID: u.ID, Realm: req.Realm.String(),
			SReg: shared, CreatedAt: s.deps.Kit.Now()}); err != nil {
			p.Internal(w, r, err)
			return
		}
	}
	s.assertTo(p, w, r, req, u, sreg)
}
