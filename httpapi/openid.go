package httpapi

import (
	"errors"
	"html/template"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/openid"
)

// The OpenID 2.0 provider (docs/auth.md, OpenID 2.0; spec, Authentication
// endpoints): discovery at /openid (OP identifier) and /openid/id/{name}
// (each user's claimed identifier), and the provider endpoint
// /openid/login. Direct requests (associate, check_authentication) are
// answered in key-value form, indirect ones by redirects to the relying
// party's return_to; people see the pages of package pages (sign-in,
// confirmation, errors). Protocol errors take the protocol's own form,
// never a problem body: a relying party parses key-value form and a
// browser follows redirects.

// OpenIDEndpoint is the path of the provider endpoint (routes.go): the
// Endpoint of the openid.Provider given in Deps.OpenID is the base URL
// followed by it.
const OpenIDEndpoint = "/openid/login"

// openID returns the provider, or an error when the server runs without
// one.
func (s *Server) openID() (*openid.Provider, error) {
	if s.deps.OpenID == nil {
		return nil, yard.Errorf(yard.EUNAVAILABLE, "This server does not offer this authentication scheme.")
	}
	return s.deps.OpenID, nil
}

// openidClaimedID is the claimed identifier of the user with that name.
func (s *Server) openidClaimedID(name string) string {
	return s.url("/openid/id/" + url.PathEscape(name))
}

// wantsXRDS reports whether a discovery request asks for the XRDS
// document: by Accept (Yadis 1.0 §6.2.4) or by ?format=xrds (the address
// X-XRDS-Location gives).
func wantsXRDS(r *http.Request) (bool, error) {
	if f, ok := r.URL.Query()["format"]; ok {
		if len(f) != 1 || f[0] != "xrds" {
			return false, yard.Invalid("The format query parameter takes only xrds.", yard.FieldError{Field: "format", Message: "must be xrds"})
		}
		return true, nil
	}
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "application/xrds+xml" && params["q"] != "0" {
			return true, nil
		}
	}
	return false, nil
}

var discoveryPage = template.Must(template.New("discovery").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="X-XRDS-Location" content="{{.XRDS}}">
<link rel="openid2.provider" href="{{.Endpoint}}">
{{if .LocalID}}<link rel="openid2.local_id" href="{{.LocalID}}">
{{end}}<title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1>
<p>{{.Text}}</p>
<p>Relying parties discover the provider at <code>{{.XRDS}}</code>; its endpoint is <code>{{.Endpoint}}</code>.</p>
</body></html>
`))

// writeDiscovery answers a discovery request: the XRDS document, or an
// HTML page pointing to it (X-XRDS-Location header and meta element, and
// HTML-based discovery links, OpenID 2.0 §7.3.3).
func (s *Server) writeDiscovery(w http.ResponseWriter, r *http.Request, self, localID, title, text string) {
	xrds, err := wantsXRDS(r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	endpoint := s.url("/openid/login")
	h := w.Header()
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("X-XRDS-Location", self+"?format=xrds")
	if xrds {
		h.Set("Content-Type", "application/xrds+xml")
		_, _ = w.Write(openid.XRDS(endpoint, localID))
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	_ = discoveryPage.Execute(w, map[string]string{"XRDS": self + "?format=xrds", "Endpoint": endpoint, "LocalID": localID,
		"Title": title, "Text": text})
}

// handleOpenIDDiscovery is GET /openid: the OP identifier (directed
// identity: the user picks who they are when signing in).
func (s *Server) handleOpenIDDiscovery(w http.ResponseWriter, r *http.Request) {
	s.writeDiscovery(w, r, s.url("/openid"), "", "yard OpenID provider",
		"Sign in to other sites with your yard identity: give them this address.")
}

// handleOpenIDIdentity is GET /openid/id/{name}: a user's claimed
// identifier. Its XRDS names the same endpoint with the identifier as
// LocalID, so a relying party can verify an assertion about it.
func (s *Server) handleOpenIDIdentity(w http.ResponseWriter, r *http.Request) {
	u, err := s.db.openid.FindUserByName(r.Context(), r.PathValue("name"))
	if err == nil && u.Disabled {
		err = yard.Errorf(yard.ENOTFOUND, "No such OpenID identifier.")
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	id := s.openidClaimedID(u.Name)
	s.writeDiscovery(w, r, id, id, "OpenID identifier of "+u.Name, "This is the OpenID identifier of the yard user "+u.Name+".")
}

// writeKV writes a direct response in key-value form (OpenID 2.0 §5.1.2):
// 200 on success, 400 for an error.
func writeKV(w http.ResponseWriter, status int, m openid.Message) {
	body, err := m.KV()
	if err != nil {
		status, body = http.StatusInternalServerError, []byte("ns:"+openid.NS+"\nerror:internal error\n")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	noStore(w)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// openidDirectError answers a failed direct request; internal errors are
// logged through the one error path's logger and shown as a fixed text.
func (s *Server) openidDirectError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *openid.ProtocolError
	switch {
	case errors.As(err, &pe) && pe.Unsupported:
		writeKV(w, http.StatusBadRequest, openid.UnsupportedResponse(pe.Message))
	case errors.As(err, &pe):
		writeKV(w, http.StatusBadRequest, openid.DirectError(pe.Message))
	case yard.ErrorCode(err) == yard.EUNAVAILABLE:
		writeKV(w, http.StatusServiceUnavailable, openid.DirectError(yard.ErrorMessage(err)))
	default:
		s.logInternal(w, r, err)
		writeKV(w, http.StatusInternalServerError, openid.DirectError("internal error"))
	}
}

// logInternal logs an internal error of a response that is not a problem
// body, with the request id, as s.error does.
func (s *Server) logInternal(w http.ResponseWriter, r *http.Request, err error) {
	s.deps.Logger.ErrorContext(r.Context(), "internal error", slog.String("request_id", w.Header().Get("X-Request-Id")),
		slog.String("method", logMethod(r)), slog.String("path", logPath(r)), slog.String("error", err.Error()))
}

// readOpenIDForm reads the openid.* fields of a POST body.
func readOpenIDForm(r *http.Request) (openid.Message, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		return nil, &openid.ProtocolError{Message: "A direct request is an application/x-www-form-urlencoded POST body."}
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, &openid.ProtocolError{Message: "The request body cannot be read."}
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, &openid.ProtocolError{Message: "The form body cannot be parsed."}
	}
	m, err := openid.FromValues(form)
	if err != nil {
		return nil, &openid.ProtocolError{Message: err.Error() + "."}
	}
	return m, nil
}

// handleOpenIDPost is POST /openid/login: direct requests (associate,
// check_authentication), and indirect checkid requests a relying party
// sent as a form, which continue as the GET request with the same fields.
func (s *Server) handleOpenIDPost(w http.ResponseWriter, r *http.Request) {
	p, err := s.openID()
	var m openid.Message
	if err == nil {
		m, err = readOpenIDForm(r)
	}
	if err == nil && m["ns"] != openid.NS {
		err = &openid.ProtocolError{Message: "Only OpenID 2.0 requests (openid.ns=" + openid.NS + ") are supported."}
	}
	var resp openid.Message
	switch mode := m["mode"]; {
	case err != nil:
	case mode == openid.ModeAssociate:
		resp, err = p.Associate(r.Context(), m, r.TLS != nil)
	case mode == openid.ModeCheckAuthentication:
		resp, err = p.CheckAuthentication(r.Context(), m)
	case mode == openid.ModeCheckIDSetup || mode == openid.ModeCheckIDImmediate:
		// 303: the browser comes back with GET, under the pages'
		// protections, and the flow is the same as for a redirect.
		w.Header().Set("Location", s.url("/openid/login?"+m.Values().Encode()))
		w.WriteHeader(http.StatusSeeOther)
		return
	default:
		err = &openid.ProtocolError{Message: "Unknown openid.mode " + strings.ToValidUTF8(m["mode"], "?") + " for a direct request."}
	}
	if err != nil {
		s.openidDirectError(w, r, err)
		return
	}
	writeKV(w, http.StatusOK, resp)
}
