package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
)

// maxAnswer bounds the body of an API answer the console reads.
const maxAnswer = 4 << 20

// apiCall is one API request behind a page, as its panel shows it.
type apiCall struct {
	Method, URL string
	Status      int // 0 for a stream the page's script opens
	Duration    time.Duration
	Curl        string
}

// call is one console request: the person, the API calls made for it so
// far, and what the page says of them.
type call struct {
	c       *Console
	r       *http.Request
	user    *yard.Principal
	calls   []apiCall
	notice  string
	problem string
	secret  *secret
	section string
	status  int // the page's status: 200, or the first refusal's
}

// result is an API answer.
type result struct {
	Status int
	Header http.Header
	Body   []byte
}

// ok reports a 2xx answer.
func (r result) ok() bool { return r.Status >= 200 && r.Status < 300 }

// decode reads a 2xx JSON answer into v, reporting success. The structs
// that mirror the API's JSON name only the members a page shows.
func (r result) decode(v any) bool {
	return r.ok() && json.Unmarshal(r.Body, v) == nil
}

// problemText is the title and detail of an RFC 9457 answer, or its
// status.
func (r result) problemText() string {
	var p struct {
		Title  string `xml:"title"`
		Detail string `xml:"detail"`
		Errors []struct{ Field, Detail, Message string }
	}
	if strings.Contains(r.Header.Get("Content-Type"), "xml") {
		_ = xml.Unmarshal(r.Body, &p) // RFC 9457 appendix B
	} else {
		_ = json.Unmarshal(r.Body, &p)
	}
	var b strings.Builder
	b.WriteString(http.StatusText(r.Status))
	if p.Title != "" && p.Title != http.StatusText(r.Status) {
		b.WriteString(": " + p.Title)
	}
	if p.Detail != "" {
		b.WriteString(" — " + p.Detail)
	}
	for _, e := range p.Errors {
		msg := cmp.Or(e.Detail, e.Message)
		if e.Field != "" || msg != "" {
			b.WriteString(" (" + e.Field + ": " + msg + ")")
		}
	}
	return b.String()
}

// problemOf records r's problem for the page.
func (cl *call) problemOf(r result) {
	cl.problem = "The API answered " + r.problemText()
}

// refused records r's problem for the page and, unless an earlier
// refusal on the page set one, its status.
func (cl *call) refused(r result) {
	cl.problemOf(r)
	if cl.status == http.StatusOK {
		cl.status = r.Status
	}
}

// accepted decodes a 2xx JSON answer into v, reporting success; a
// refusal becomes the page's problem and status (refused).
func (cl *call) accepted(r result, v any) bool {
	if r.decode(v) {
		return true
	}
	cl.refused(r)
	return false
}

// noteOK sets the page's notice when r is a 2xx answer, and returns r.
func (cl *call) noteOK(r result, notice string) result {
	if r.ok() {
		cl.notice = notice
	}
	return r
}

// do sends one request to the public API in-process, as the signed-in
// person (their session cookie), and records it for the page's panel.
// body, when not nil, is sent as JSON, or as is when it is a []byte (with
// the Content-Type header gives).
func (cl *call) do(method, path string, body any, header map[string]string) result {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		raw, _ = json.Marshal(body)
		if header["Content-Type"] == "" {
			h := map[string]string{"Content-Type": "application/json"}
			maps.Copy(h, header)
			header = h
		}
	}
	return cl.send(request{method: method, path: path, body: raw, header: header, session: true})
}

// request is one in-process API request.
type request struct {
	method, path string
	body         []byte
	header       map[string]string
	// session carries the person's console session cookie; without it
	// the request carries only the credentials header names (the
	// authentication lab's).
	session bool
	// curl, when set, is the command the panel shows instead of the one
	// built from the request (a scheme's own options, never a secret).
	curl string
	// shown, when set, is the path the panel shows instead of path (a
	// path that names a secret, such as a session's key).
	shown string
}

// send serves q through the API's handler and records it.
func (cl *call) send(q request) result {
	target := cl.c.cfg.BaseURL + q.path
	req, err := http.NewRequestWithContext(cl.r.Context(), q.method, target, bytes.NewReader(q.body))
	if err != nil {
		return result{Status: http.StatusBadRequest}
	}
	req.RequestURI = req.URL.RequestURI()
	req.Host = cl.r.Host
	req.TLS = cl.r.TLS
	req.RemoteAddr = cl.r.RemoteAddr
	req.Header.Set("Accept", "application/json")
	for k, v := range q.header {
		req.Header.Set(k, v)
	}
	if ck, err := cl.r.Cookie(auth.SessionCookie); err == nil && q.session {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	rec := &recorder{h: http.Header{}}
	start := time.Now()
	cl.c.cfg.API.ServeHTTP(rec, req)
	d := time.Since(start)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	// Built from the request only when the call has no command of its
	// own: the lab's requests carry secrets a built one would show.
	cmd := q.curl
	if cmd == "" {
		cmd = curl(cl.user.Name, q.method, target, req.Header, q.body)
	}
	shown := cl.c.cfg.BaseURL + cmp.Or(q.shown, q.path)
	cl.calls = append(cl.calls, apiCall{Method: q.method, URL: shown, Status: rec.status, Duration: d, Curl: cmd})
	return result{Status: rec.status, Header: rec.h, Body: rec.body.Bytes()}
}

// scripted records a request the page's script makes (the event stream,
// a list it reads again): its panel shows it with a curl command, without
// a status.
func (cl *call) scripted(path, accept string) string {
	target := cl.c.cfg.BaseURL + path
	cl.calls = append(cl.calls, apiCall{Method: "GET", URL: target,
		Curl: curl(cl.user.Name, "GET", target, http.Header{"Accept": {accept}}, nil)})
	return path
}

// curl is a command that repeats a request: the person's name for Basic
// (curl asks for the password), never their session or a secret.
func curl(user, method, target string, h http.Header, body []byte) string {
	var b strings.Builder
	b.WriteString("curl -i")
	if method == "GET" && h.Get("Accept") == "text/event-stream" {
		b.WriteString(" -N")
	}
	b.WriteString(" -u " + shellQuote(user))
	if method != "GET" {
		b.WriteString(" -X " + method)
	}
	for _, k := range []string{"Accept", "Content-Type", "Prefer", "If-Unmodified-Since"} {
		if v := h.Get(k); v != "" && !(k == "Accept" && v == "application/json") {
			b.WriteString(" -H " + shellQuote(k+": "+v))
		}
	}
	if len(body) > 0 {
		b.WriteString(" -d " + shellQuote(string(body)))
	}
	b.WriteString(" " + shellQuote(target))
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:@=,+", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// recorder is the response writer an in-process API call is served into.
type recorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len()+len(b) > maxAnswer {
		return 0, io.ErrShortWrite
	}
	return r.body.Write(b)
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// atoiDefault reads a small non-negative number, or def.
func atoiDefault(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil || len(s) > 9 || strings.ContainsFunc(s, func(c rune) bool { return c < '0' || c > '9' }) {
		return def
	}
	return n
}
