package conform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Resp is a response with its body read.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
	req    *http.Request
	obj    map[string]any
	// exchange is the request and the response as a report shows them.
	exchange string
}

// JSON decodes the body as a JSON object (nil when it is not one).
func (r *Resp) JSON() map[string]any {
	if r.obj == nil {
		_ = json.Unmarshal(r.Body, &r.obj)
	}
	return r.obj
}

// Str is the string member name of the JSON body ("" when absent).
func (r *Resp) Str(name string) string {
	s, _ := r.JSON()[name].(string)
	return s
}

// Num is the number member name of the JSON body (-1 when absent).
func (r *Resp) Num(name string) float64 {
	n, ok := r.JSON()[name].(float64)
	if !ok {
		return -1
	}
	return n
}

// MediaType is the response's media type without parameters.
func (r *Resp) MediaType() string {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt
}

// opt changes a request before it is sent.
type opt func(*http.Request, *reqBody)

type reqBody struct {
	b     []byte
	ctype string
}

// jsonBody sends v as JSON.
func jsonBody(v any) opt {
	return func(_ *http.Request, rb *reqBody) {
		b, _ := json.Marshal(v)
		rb.b, rb.ctype = b, "application/json"
	}
}

// rawBody sends b with the content type (none when ctype is "").
func rawBody(ctype string, b []byte) opt {
	return func(_ *http.Request, rb *reqBody) { rb.b, rb.ctype = b, ctype }
}

// formBody sends the values as an HTML form.
func formBody(v url.Values) opt {
	return rawBody("application/x-www-form-urlencoded", []byte(v.Encode()))
}

// header sets a request header.
func header(name, value string) opt {
	return func(r *http.Request, _ *reqBody) { r.Header.Set(name, value) }
}

// basic authenticates with the person's name and password.
func basic(p *person) opt {
	return func(r *http.Request, _ *reqBody) { r.SetBasicAuth(p.name, p.password) }
}

// bearer sends the token as a bearer token.
func bearer(token string) opt { return header("Authorization", "Bearer "+token) }

// writeTimeout bounds a request that may change the server once the
// run's time-out has passed (Do).
const writeTimeout = 30 * time.Second

// abs makes target (a path or an absolute URL) absolute under the base URL.
func (k *kit) abs(target string) string {
	if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "http://") {
		return target
	}
	return k.base.String() + target
}

// Do sends one request (target is a path under the base URL, or an
// absolute URL), records the exchange and returns the response. A
// transport error fails the check.
//
// A request that may change the server (any method but GET and HEAD) is
// not sent once the run's time-out has passed or the run was interrupted,
// and one under way is let finish (within writeTimeout): its answer says
// what it made, for the kit to remove at the end of the run.
func (t *T) Do(method, target string, opts ...opt) *Resp {
	ctx := t.ctx
	if method != "GET" && method != "HEAD" {
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s %s: not sent: %v", method, target, err)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
	}
	r, err := t.k.send(ctx, method, target, opts...)
	if r != nil {
		t.exchanges = append(t.exchanges, r.exchange)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return r
}

// Expect sends one request like Do and fails the check unless the
// response's status is status.
func (t *T) Expect(status int, method, target string, opts ...opt) *Resp {
	r := t.Do(method, target, opts...)
	t.Status(r, status)
	return r
}

// send sends one request; on a transport error the response holds only
// the exchange.
func (k *kit) send(ctx context.Context, method, target string, opts ...opt) (*Resp, error) {
	req, err := http.NewRequestWithContext(ctx, method, k.abs(target), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", k.cfg.UserAgent)
	var rb reqBody
	for _, o := range opts {
		o(req, &rb)
	}
	if rb.b != nil {
		req.Body = io.NopCloser(bytes.NewReader(rb.b))
		req.ContentLength = int64(len(rb.b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(rb.b)), nil }
		if rb.ctype != "" && req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", rb.ctype)
		}
	}
	resp, err := k.hc.Do(req)
	if err != nil {
		return &Resp{exchange: formatExchange(req, rb.b, nil, nil)}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return &Resp{Status: resp.StatusCode, Header: resp.Header, Body: body, req: req,
		exchange: formatExchange(req, rb.b, resp, body)}, err
}

// Status fails the check unless the response's status is one of want.
func (t *T) Status(r *Resp, want ...int) {
	if !slices.Contains(want, r.Status) {
		// want as "200 or 204"
		alternatives := strings.ReplaceAll(strings.Trim(fmt.Sprint(want), "[]"), " ", " or ")
		t.Fatalf("%s %s: got status %d, want %s", r.req.Method, r.req.URL.RequestURI(), r.Status, alternatives)
	}
}

// Problem fails the check unless the response is an RFC 9457 problem
// with the status and, when slug is not "", a type ending in /problems/slug,
// that names each of fields (FieldNamed).
func (t *T) Problem(r *Resp, status int, slug string, fields ...string) {
	t.Status(r, status)
	t.Check(r.MediaType() == "application/problem+json", "a %d answer: Content-Type %q, want application/problem+json (RFC 9457)", status, r.Header.Get("Content-Type"))
	m := r.JSON()
	t.Check(m != nil, "the problem body is not a JSON object")
	t.Check(r.Num("status") == float64(status), "problem member status is %v, want %d", m["status"], status)
	t.Check(r.Str("title") != "", "problem body without a title")
	typ := r.Str("type")
	t.Check(strings.HasPrefix(typ, "https://") || strings.HasPrefix(typ, "http://"), "problem type %q is not an absolute URL", typ)
	if slug != "" {
		t.Check(strings.HasSuffix(typ, "/problems/"+slug), "problem type %q, want …/problems/%s", typ, slug)
	}
	for _, f := range fields {
		t.FieldNamed(r, f)
	}
}

// FieldNamed fails the check unless the problem body names field in its
// errors list (or, failing that, in its detail).
func (t *T) FieldNamed(r *Resp, field string) {
	if errs, ok := r.JSON()["errors"].([]any); ok {
		for _, e := range errs {
			if m, ok := e.(map[string]any); ok && m["field"] == field {
				return
			}
		}
	}
	t.Check(strings.Contains(r.Str("detail"), field), "the problem does not name the field %q", field)
}

// Location fails unless the response's Location is the absolute URL of
// path under the base URL, and returns it.
func (t *T) Location(r *Resp, path string) string {
	loc := r.Header.Get("Location")
	u, err := url.Parse(loc)
	t.Check(err == nil && u.IsAbs(), "Location %q is not an absolute URL", loc)
	if path != "" {
		t.Check(loc == t.k.abs(path), "Location %q, want %q", loc, t.k.abs(path))
	}
	return loc
}

// Secrets are redacted from every recorded exchange.
var (
	secretHeaders = []string{"Authorization", "Cookie", "Set-Cookie", "X-Password"}
	secretJSON    = regexp.MustCompile(`("(?:password|secret|token|access_token|refresh_token|key|mac_key|oauth_token_secret)"\s*:\s*)"[^"]*"`)
	secretForm    = regexp.MustCompile(`((?:^|[&?;\n])(?:password|signature|oauth_signature|oauth_token_secret|oauth_verifier|mac_key|openid\.sig|csrf_token|secret)[=:])[^&\n;]*`)
)

func redact(s string) string {
	s = secretJSON.ReplaceAllString(s, `$1"[redacted]"`)
	return secretForm.ReplaceAllString(s, "$1[redacted]")
}

// formatExchange renders a request and its response for a report,
// secrets redacted and bodies cut to 2 KiB.
func formatExchange(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", req.Method, redact(req.URL.String()))
	writeHeaders(&b, req.Header)
	writeBody(&b, reqBody)
	if resp == nil {
		b.WriteString("(no response)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "--\n%s %s\n", resp.Proto, resp.Status)
	writeHeaders(&b, resp.Header)
	writeBody(&b, respBody)
	return b.String()
}

func writeHeaders(b *strings.Builder, h http.Header) {
	for _, n := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[n] {
			if slices.Contains(secretHeaders, n) {
				v = redactHeader(n, v)
			}
			fmt.Fprintf(b, "%s: %s\n", n, v)
		}
	}
}

// redactHeader keeps a credential header's scheme word and hides the rest.
func redactHeader(name, v string) string {
	switch name {
	case "Authorization":
		if i := strings.IndexByte(v, ' '); i > 0 {
			return v[:i] + " [redacted]"
		}
	case "Set-Cookie", "Cookie":
		if i := strings.IndexByte(v, '='); i > 0 {
			rest := ""
			if j := strings.IndexByte(v, ';'); j > i && name == "Set-Cookie" {
				rest = v[j:]
			}
			return v[:i+1] + "[redacted]" + rest
		}
	}
	return "[redacted]"
}

func writeBody(b *strings.Builder, body []byte) {
	if len(body) == 0 {
		return
	}
	s := string(body)
	if len(s) > 2048 {
		s = s[:2048] + fmt.Sprintf("… (%d bytes)", len(body))
	}
	b.WriteString("\n" + redact(s) + "\n")
}
