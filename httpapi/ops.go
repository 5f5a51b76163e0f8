package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yard-api/yard"
)

// opsStore is what the operations endpoints need of the store; *store.DB
// is one.
type opsStore interface {
	Engine() string
	Pending(ctx context.Context) (bool, error)
	Reachable(ctx context.Context) error
}

//go:embed openapi/*.json
var openapiFS embed.FS

//go:embed docs
var docsFS embed.FS

// handleIndex lists links to every resource of the API.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	links := map[string]string{
		"self":    s.url("/"),
		"openapi": s.url("/openapi.json"),
		"docs":    s.url("/docs"),
		"health":  s.url("/healthz"),
		"ready":   s.url("/readyz"),
		"metrics": s.url("/metrics"),
	}
	// One resource a path, in the order of its first route, with the
	// methods of all its routes.
	var resources []map[string]any
	at := map[string]int{}
	for _, rt := range s.routes {
		p := strings.TrimSuffix(rt.Pattern, "{$}")
		if rt.Method == "" || p == "/" || strings.HasPrefix(p, "/docs/") {
			continue
		}
		i, ok := at[p]
		if !ok {
			i, at[p] = len(resources), len(resources)
			resources = append(resources, map[string]any{"href": s.url(p), "templated": strings.Contains(p, "{"), "methods": []string(nil)})
		}
		resources[i]["methods"] = append(resources[i]["methods"].([]string), rt.Method)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name":      "yard",
		"version":   s.deps.Version,
		"_links":    links,
		"resources": resources,
	})
}

// OpenAPI returns the OpenAPI 3.1 document of the API: base.json with the
// paths and schemas of every other fragment in openapi/ merged in, and the
// server URL set to the base URL.
// It is built once, on first use, and safe to call from any goroutine.
func (s *Server) OpenAPI() ([]byte, error) { return s.openapi() }

// buildOpenAPI builds the document OpenAPI returns.
func (s *Server) buildOpenAPI() ([]byte, error) {
	var doc map[string]any
	raw, _ := openapiFS.ReadFile("openapi/base.json") // embedded: none is a document that does not parse
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("openapi/base.json: %w", err)
	}
	paths := doc["paths"].(map[string]any)
	components := doc["components"].(map[string]any)
	entries, _ := fs.ReadDir(openapiFS, "openapi")
	for _, e := range entries {
		if e.Name() == "base.json" {
			continue
		}
		raw, _ := openapiFS.ReadFile("openapi/" + e.Name())
		var frag struct {
			Paths      map[string]map[string]any `json:"paths"`
			Components map[string]map[string]any `json:"components"`
			Tags       []any                     `json:"tags"`
		}
		if err := json.Unmarshal(raw, &frag); err != nil {
			return nil, fmt.Errorf("openapi/%s: %w", e.Name(), err)
		}
		mergeObjects(paths, frag.Paths)
		mergeObjects(components, frag.Components)
		if len(frag.Tags) > 0 {
			tags, _ := doc["tags"].([]any)
			doc["tags"] = append(tags, frag.Tags...)
		}
	}
	// Every operation can answer 400 (two Authorization headers; an expired
	// access token where credentials are taken: spec, Errors; docs/auth.md)
	// and 503, every write 413; those that take credentials also list the
	// signed-request query variables and 429.
	credParams, err := credentialParams(s.deps.Auth.QueryVars(), components)
	if err != nil {
		return nil, err
	}
	for _, item := range paths {
		for method, op := range item.(map[string]any) {
			o, _ := op.(map[string]any)
			resp, ok := o["responses"].(map[string]any)
			if !ok {
				continue
			}
			// Two Authorization headers are 400 on every operation, public
			// ones included, before routing (docs/auth.md, "Which
			// credentials count").
			addResponse(resp, "400", "BadRequest")
			// A body over 1 MiB is 413 before routing, whatever the
			// operation takes (docs/api.md, "Strict input").
			if method == "post" || method == "put" || method == "patch" || method == "delete" {
				addResponse(resp, "413", "TooLarge")
			}
			// First, so that its 503 names busy password hashing too.
			if _, has401 := resp["401"]; has401 {
				addCredentialParams(o, resp, credParams)
			}
			// Any operation may meet a store that cannot be reached
			// (docs/api.md, "503 Service Unavailable").
			addResponse(resp, "503", "Unavailable")
		}
	}
	doc["servers"] = []any{map[string]any{"url": s.deps.BaseURL}}
	doc["info"].(map[string]any)["version"] = s.deps.Version
	body, err := marshalJSON(doc) // no HTML escaping
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = json.Indent(&buf, body, "", "  ")
	return buf.Bytes(), err
}

// mergeObjects copies each object of src into the object of the same name
// in dst, or puts it there when dst has none.
func mergeObjects(dst map[string]any, src map[string]map[string]any) {
	for name, m := range src {
		if obj, ok := dst[name].(map[string]any); ok {
			maps.Copy(obj, m)
		} else {
			dst[name] = m
		}
	}
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := s.OpenAPI()
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(doc)
}

// handleDocs serves the interactive API reference, built in the browser
// from /openapi.json: /docs is its page, /docs/{asset} the assets, all
// embedded, no CDN.
func (s *Server) handleDocs(w http.ResponseWriter, r *http.Request) {
	name := cmp.Or(r.PathValue("asset"), "index.html")
	b, err := docsFS.ReadFile("docs/" + path.Base(name))
	if err != nil {
		s.error(w, r, yard.Errorf(yard.ENOTFOUND, "No such documentation asset."))
		return
	}
	w.Header().Set("Content-Type", cmp.Or(mime.TypeByExtension(path.Ext(name)), "application/octet-stream"))
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'")
	_, _ = w.Write(b)
}

var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} — yard problem types</title></head>
<body><h1>{{.Title}}</h1><p>HTTP status {{.Status}}.</p><p>{{.About}}</p>
<p>yard answers errors with RFC 9457 problem details (<code>application/problem+json</code>) whose
<code>type</code> is the address of this page.</p>
<h2>All problem types</h2><ul>{{range .All}}<li><a href="{{.Slug}}">{{.Slug}}</a> ({{.Status}}): {{.Title}}</li>{{end}}</ul>
</body></html>`))

// handleProblem explains a problem type.
func (s *Server) handleProblem(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	all := slices.SortedFunc(maps.Values(problemKinds), func(a, b problemKind) int { return strings.Compare(a.Slug, b.Slug) })
	i := slices.IndexFunc(all, func(k problemKind) bool { return k.Slug == slug })
	if i < 0 {
		s.error(w, r, yard.Errorf(yard.ENOTFOUND, "No problem type %q.", slug))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = problemPage.Execute(w, struct {
		problemKind
		All []problemKind
	}{all[i], all})
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 when the store is reachable and migrated.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if s.outage.Down() {
		// In an outage: ready again only once the store answers reads and
		// can begin a write.
		if err := s.db.ops.Reachable(ctx); err != nil {
			s.error(w, r, s.unreachable(err))
			return
		}
		s.storeBack()
	}
	// Reading the migration state is the reachability check too.
	pending, err := s.db.ops.Pending(ctx)
	if err != nil {
		s.error(w, r, s.unreachable(err))
		return
	}
	if pending {
		s.error(w, r, yard.Errorf(yard.EUNAVAILABLE, "Migrations are not done."))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "store": s.db.ops.Engine(), "carSearch": s.carSearchPath()})
}

// Metrics serves the process's Prometheus metrics without credentials,
// for a listener only the host reaches (serve's --debug-addr).
func (s *Server) Metrics() http.Handler {
	return promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{})
}
