package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/conform"
)

// fault is a deliberate defect put in front of a correct server: an
// http.Handler middleware. parts are the parts of the kit run against it
// (all when nil).
type fault struct {
	name  string
	parts []string
	wrap  func(http.Handler) http.Handler
}

// answer is a buffered response a fault may change.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// editAnswer buffers the answers to the requests match accepts (never a
// stream) and lets edit change them before they are sent.
func editAnswer(match func(*http.Request) bool, edit func(*http.Request, *answer)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if (match != nil && !match(r)) || strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			a := &answer{rec.Code, rec.Header().Clone(), rec.Body.Bytes()}
			edit(r, a)
			a.header.Del("Content-Length")
			for k, v := range a.header {
				w.Header()[k] = v
			}
			w.WriteHeader(a.status)
			_, _ = w.Write(a.body)
		})
	}
}

// editRequest changes requests before the server sees them.
func editRequest(edit func(*http.Request)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			edit(r)
			next.ServeHTTP(w, r)
		})
	}
}

func statusMap(m map[int]int) func(http.Handler) http.Handler {
	return editAnswer(nil, func(_ *http.Request, a *answer) {
		if to, ok := m[a.status]; ok {
			a.status = to
		}
	})
}

func dropHeaders(names ...string) func(http.Handler) http.Handler {
	return editAnswer(nil, func(_ *http.Request, a *answer) {
		for _, n := range names {
			a.header.Del(n)
		}
	})
}

func pathPrefix(prefixes ...string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) })
	}
}

func replaceBody(old, new string) func(*http.Request, *answer) {
	return func(_ *http.Request, a *answer) { a.body = bytes.ReplaceAll(a.body, []byte(old), []byte(new)) }
}

// renameMembers renames members of every JSON object in a JSON body.
func renameMembers(names map[string]string) func(*http.Request, *answer) {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				if n, ok := names[k]; ok {
					k = n
				}
				out[k] = walk(e)
			}
			return out
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return func(_ *http.Request, a *answer) {
		if !strings.Contains(a.header.Get("Content-Type"), "json") {
			return
		}
		var v any
		if json.Unmarshal(a.body, &v) != nil {
			return
		}
		a.body, _ = json.Marshal(walk(v))
	}
}

// hasCredentials reports whether a request carries credentials of any scheme.
func hasCredentials(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || r.URL.Query().Get("signature") != "" ||
		strings.Contains(r.Header.Get("Cookie"), "sessionToken=") || r.Header.Get("X-Password") != ""
}

func faults(adminPassword string) []fault {
	// all is every part but the events, whose checks wait for events to
	// arrive: a fault that breaks them there only makes the run wait;
	// faults of their own cover them.
	all := []string{"discovery", "dogs", "versions", "barks", "schedules", "cars", "searches", "orders", "basic", "digest",
		"sessions", "token-pair", "pk-token", "signed", "oauth1", "openid", "webhooks", "hostile"}
	return []fault{
		{"created-as-ok", all, statusMap(map[int]int{201: 200})},
		{"index-and-health-broken", []string{"discovery"}, editAnswer(func(r *http.Request) bool {
			return r.URL.Path == "/" || r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
		}, func(r *http.Request, a *answer) {
			if r.URL.Path == "/" {
				a.header.Set("Content-Type", "text/html")
				a.body = []byte("<html><body>yard</body></html>")
				return
			}
			a.status = 503
		})},
		{"no-content-as-ok", all, statusMap(map[int]int{204: 200})},
		{"accepted-as-ok", []string{"barks", "events"}, statusMap(map[int]int{202: 200})},
		{"reset-as-no-content", []string{"schedules"}, statusMap(map[int]int{205: 204})},
		{"redirects-as-found", all, statusMap(map[int]int{303: 302, 308: 301})},
		{"client-errors-as-400", all, statusMap(map[int]int{401: 400, 403: 400, 404: 400, 405: 400, 406: 400, 409: 400, 412: 400, 413: 400, 415: 400, 428: 400})},
		{"bad-request-as-422", all, statusMap(map[int]int{400: 422})},
		{"no-location", all, dropHeaders("Location")},
		{"no-link", []string{"dogs", "versions", "cars"}, dropHeaders("Link")},
		{"no-next-link", []string{"dogs", "cars"}, editAnswer(nil, func(_ *http.Request, a *answer) {
			var kept []string
			for _, l := range strings.Split(a.header.Get("Link"), ", <") {
				if !strings.Contains(l, `rel="next"`) && !strings.Contains(l, `rel="prev"`) {
					kept = append(kept, l)
				}
			}
			a.header.Set("Link", strings.Join(kept, ", <"))
		})},
		{"problem-as-json", all, editAnswer(nil, func(_ *http.Request, a *answer) {
			ct := a.header.Get("Content-Type")
			a.header.Set("Content-Type", strings.Replace(strings.Replace(ct, "problem+json", "json", 1), "problem+xml", "xml", 1))
		})},
		{"problem-type-blank", all, editAnswer(nil, func(_ *http.Request, a *answer) {
			if strings.HasPrefix(a.header.Get("Content-Type"), "application/problem+json") {
				var m map[string]any
				if json.Unmarshal(a.body, &m) == nil {
					m["type"] = "about:blank"
					a.body, _ = json.Marshal(m)
				}
			}
		})},
		{"no-www-authenticate", []string{"discovery", "basic", "digest", "token-pair"}, dropHeaders("WWW-Authenticate")},
		{"headers-dropped", []string{"discovery", "dogs", "barks", "orders", "hostile"}, dropHeaders("X-Request-Id", "Strict-Transport-Security", "ETag", "Last-Modified", "Allow", "Vary", "Accept-Patch")},
		{"credentials-unchecked", []string{"basic", "digest", "sessions", "token-pair", "pk-token", "signed", "oauth1", "searches", "orders"}, editAnswer(hasCredentials, func(_ *http.Request, a *answer) {
			if a.status == 401 {
				a.status, a.body = 200, []byte("{}")
				a.header.Set("Content-Type", "application/json")
			}
		})},
		{"renamed-fields", all, editAnswer(nil, renameMembers(map[string]string{
			"timestamp": "time", "barkCount": "bark_count", "total": "count", "canceled": "cancelled", "carCount": "cars",
			"token_type": "tokenType", "refresh_expires_in": "refreshExpiresIn", "apiKey": "api_key", "specversion": "specVersion",
			"frequency": "every", "owner": "ownerId", "_links": "links", "secret": "signingSecret", "token": "jwt",
			"garage": "garageId", "effect": "kind", "enabled": "active", "keys": "keySet", "access_token": "accessToken",
			"refresh_token": "refreshToken", "offset": "start", "last": "lastBark", "items": "results", "errors": "invalid",
			"status": "state", "openapi": "swagger", "barks": "schedule", "subject": "about", "customerId": "customer",
			"name": "title", "email": "mail", "color": "colour", "make": "brand", "max": "limit", "barkEffect": "effectOfBark"}))},
		{"xml-ignored", []string{"orders", "hostile"}, editRequest(func(r *http.Request) {
			if strings.Contains(r.Header.Get("Accept"), "xml") {
				r.Header.Set("Accept", "application/json")
			}
		})},
		{"xml-labelled-json", []string{"orders"}, editAnswer(nil, func(_ *http.Request, a *answer) {
			if strings.HasPrefix(a.header.Get("Content-Type"), "application/xml") {
				a.header.Set("Content-Type", "application/json")
			}
		})},
		{"put-create-as-replace", []string{"dogs", "cars"}, editAnswer(func(r *http.Request) bool { return r.Method == "PUT" }, func(_ *http.Request, a *answer) {
			if a.status == 201 {
				a.status = 200
			}
		})},
		{"query-dropped", []string{"cars", "searches", "hostile"}, editRequest(func(r *http.Request) {
			if r.Method == "GET" && (strings.HasPrefix(r.URL.Path, "/cars") || strings.HasPrefix(r.URL.Path, "/search")) {
				r.URL.RawQuery = ""
			}
		})},
		{"prefer-ignored", []string{"barks", "events"}, editRequest(func(r *http.Request) { r.Header.Del("Prefer") })},
		{"if-unmodified-since-ignored", []string{"schedules"}, editRequest(func(r *http.Request) { r.Header.Del("If-Unmodified-Since") })},
		{"schedule-token-replaced", []string{"schedules"}, editRequest(func(r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/bark-schedule") && r.Method == "POST" {
				var m map[string]any
				b := new(bytes.Buffer)
				_, _ = b.ReadFrom(r.Body)
				if json.Unmarshal(b.Bytes(), &m) == nil {
					m["token"] = time.Now().UnixNano()
					nb, _ := json.Marshal(m)
					b = bytes.NewBuffer(nb)
				}
				r.Body, r.ContentLength = http.NoBody, int64(b.Len())
				r.Body = readCloser{b}
			}
		})},
		{"stream-refused", []string{"events"}, editRequest(func(r *http.Request) {
			if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				r.Header.Set("Accept", "application/json")
			}
		})},
		{"events-hidden", []string{"events"}, editAnswer(pathPrefix("/v1/events"), func(_ *http.Request, a *answer) {
			a.body = []byte(`{"items":[],"next":""}`)
		})},
		{"events-leak", []string{"events"}, editRequest(func(r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/events") {
				r.SetBasicAuth("admin", adminPassword)
			}
		})},
		{"webhook-secret-changed", []string{"webhooks"}, editAnswer(pathPrefix("/v1/webhooks"), func(_ *http.Request, a *answer) {
			var m map[string]any
			if json.Unmarshal(a.body, &m) == nil && m["secret"] != nil {
				m["secret"] = "whsec_" + base64.StdEncoding.EncodeToString([]byte("not the secret the server signs with"))
				a.body, _ = json.Marshal(m)
			}
		})},
		{"jwks-altered", []string{"pk-token"}, editAnswer(pathPrefix("/.well-known/jwks.json"), func(_ *http.Request, a *answer) {
			var m map[string]any
			if json.Unmarshal(a.body, &m) == nil {
				keys, _ := m["keys"].([]any)
				for _, k := range keys {
					if km, ok := k.(map[string]any); ok {
						km["x"] = base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
					}
				}
				a.body, _ = json.Marshal(m)
			}
		})},
		{"openid-altered", []string{"openid"}, editAnswer(pathPrefix("/openid"), func(r *http.Request, a *answer) {
			a.body = bytes.ReplaceAll(a.body, []byte("http://specs.openid.net/auth/2.0/server"), []byte("http://specs.openid.net/auth/2.0/signon"))
			a.body = bytes.ReplaceAll(a.body, []byte("is_valid:false"), []byte("is_valid:true"))
			a.body = bytes.ReplaceAll(a.body, []byte("assoc_type:HMAC-SHA256"), []byte("assoc_type:HMAC-SHA1"))
			a.header.Del("X-XRDS-Location")
			if loc := a.header.Get("Location"); loc != "" {
				a.header.Set("Location", strings.Replace(loc, "openid.mode=setup_needed", "openid.mode=cancel", 1))
			}
		})},
		{"oauth-unconfirmed", []string{"oauth1"}, editAnswer(pathPrefix("/oauth/request_token"), replaceBody("oauth_callback_confirmed=true", "oauth_callback_confirmed=false"))},
		{"digest-md5-dropped", []string{"digest"}, editAnswer(nil, func(_ *http.Request, a *answer) {
			var kept []string
			for _, v := range a.header.Values("WWW-Authenticate") {
				if !strings.Contains(v, "MD5") {
					kept = append(kept, v)
				}
			}
			a.header["Www-Authenticate"] = kept
		})},
		{"cookie-flags-dropped", []string{"sessions"}, editAnswer(nil, func(_ *http.Request, a *answer) {
			for i, v := range a.header.Values("Set-Cookie") {
				a.header["Set-Cookie"][i] = strings.NewReplacer("; Secure", "", "; HttpOnly", "").Replace(v)
			}
		})},
		{"head-refused", []string{"discovery", "openid"}, editAnswer(func(r *http.Request) bool { return r.Method == "HEAD" }, func(_ *http.Request, a *answer) {
			a.status = 405
		})},
		{"max-not-cut", []string{"cars"}, editAnswer(nil, replaceBody(`"max":100`, `"max":1000`))},
		{"path-cleaned-in-front", []string{"discovery", "hostile"}, editRequest(func(r *http.Request) {
			p := path.Clean(r.URL.Path)
			if strings.HasSuffix(r.URL.Path, "/") && p != "/" {
				p += "/"
			}
			r.URL.Path, r.URL.RawPath = p, ""
		})},
		{"request-id-always-echoed", []string{"hostile", "discovery"}, editAnswer(nil, func(r *http.Request, a *answer) {
			if id := r.Header.Get("X-Request-Id"); id != "" {
				a.header.Set("X-Request-Id", id)
			} else {
				a.header.Del("X-Request-Id")
			}
		})},
	}
}

type readCloser struct{ *bytes.Buffer }

func (readCloser) Close() error { return nil }

// TestConformFaults runs the kit against yard behind one deliberate fault
// at a time (chosen per run by the kit's User-Agent) and scores how many of
// the kit's checks some fault makes fail: every check must be able to fail.
func TestConformFaults(t *testing.T) {
	t.Parallel()
	var byName map[string]http.Handler
	var proxy http.Handler
	lb := newBalancer(t, func(p http.Handler) http.Handler {
		proxy = p
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h, ok := byName[strings.TrimPrefix(r.Header.Get("User-Agent"), "yard-conform/")]; ok {
				h.ServeHTTP(w, r)
				return
			}
			proxy.ServeHTTP(w, r)
		})
	})
	s := startInProcess(t, "--data", t.TempDir(), "--base-url", lb.URL, "--login-rate", "0", "--webhook-allow-host", "127.0.0.1")
	all := faults(s.Password)
	byName = map[string]http.Handler{}
	lb.start(t, s.URL)
	for _, f := range all {
		byName[f.name] = f.wrap(proxy)
	}
	hc := lb.client()
	defer hc.CloseIdleConnections()
	kit := func(name string, parts []string) *conform.Report {
		rep, err := conform.Run(context.Background(), conform.Config{URL: lb.URL, Admin: "admin", AdminPassword: s.Password,
			Client: hc, Only: parts, Timeout: 3 * time.Minute, UserAgent: "yard-conform/" + name})
		if err != nil {
			t.Errorf("fault %s: %v", name, err)
			return &conform.Report{}
		}
		return rep
	}
	clean := kit("clean", nil)
	passing := map[string]bool{}
	for _, r := range clean.Results {
		if r.Status != conform.Passed {
			t.Errorf("without a fault: %s %s: %s", r.ID, r.Status, r.Message)
			continue
		}
		passing[r.ID] = true
	}
	// broad faults break the kit's own set-up (a person or a dog it
	// creates), so every check after it fails: the strict score leaves
	// them out.
	broad := []string{"created-as-ok", "no-location"}
	caughtBy := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, f := range all {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rep := kit(f.name, f.parts)
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, r := range rep.Results {
				if r.Status == conform.Failed && passing[r.ID] {
					caughtBy[r.ID] = append(caughtBy[r.ID], f.name)
					n++
				}
			}
			if n == 0 {
				t.Errorf("fault %s: no check failed", f.name)
			}
		})
	}
	wg.Wait()
	var missed, onlyBroad []string
	strict := 0
	for id := range passing {
		if len(caughtBy[id]) == 0 {
			missed = append(missed, id)
		}
		if slices.ContainsFunc(caughtBy[id], func(f string) bool { return !slices.Contains(broad, f) }) {
			strict++
		} else if len(caughtBy[id]) > 0 {
			onlyBroad = append(onlyBroad, id)
		}
	}
	sort.Strings(onlyBroad)
	sort.Strings(missed)
	score := float64(len(passing)-len(missed)) / float64(len(passing))
	t.Logf("fault score: %d of %d checks (%.1f%%) fail under at least one of %d faults", len(passing)-len(missed), len(passing), 100*score, len(all))
	t.Logf("strict fault score (the faults %s left out): %d of %d checks (%.1f%%)", strings.Join(broad, ", "), strict, len(passing), 100*float64(strict)/float64(len(passing)))
	if len(onlyBroad) > 0 {
		t.Logf("caught only by a fault that breaks the set-up: %s", strings.Join(onlyBroad, ", "))
	}
	for _, id := range missed {
		t.Logf("not caught: %s: no fault of this test breaks what it checks", id)
	}
	if score < 0.9 || float64(strict)/float64(len(passing)) < 0.9 {
		t.Errorf("fault score %.1f%%, strict %d of %d: want at least 90%% each", 100*score, strict, len(passing))
	}
	if testing.Verbose() {
		var b strings.Builder
		for _, id := range slices.Sorted(func(yield func(string) bool) {
			for id := range caughtBy {
				if !yield(id) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "%s: %s\n", id, strings.Join(caughtBy[id], ", "))
		}
		t.Log("caught by:\n" + b.String())
	}
}
