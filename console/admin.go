package console

import (
	"bytes"
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// routeCount is the requests of one route.
type routeCount struct {
	Route string
	Count float64
}

// opsPage is the administrator's view of the running server.
type opsPage struct {
	Health, Ready string
	Store, Search string
	Requests      float64
	ByClass       []routeCount // 2xx, 3xx, 4xx, 5xx
	TopRoutes     []routeCount
	Gauges        []routeCount // a few process gauges
	Backups       list[backup] // backups.go: newest first
}

// handleOps is the store's health (GET /healthz, GET /readyz), a
// summary of the metrics (GET /metrics): requests by status class, the
// busiest routes, a few gauges; and the backups, listed and made now
// (backups.go). Administrators only.
func (c *Console) handleOps(cl *call, w http.ResponseWriter, r *http.Request) {
	page := opsPage{Backups: c.backups(cl, r)}
	var h, rd struct{ Status, Store, CarSearch string }
	if res := cl.do("GET", "/healthz", nil, nil); res.decode(&h) {
		page.Health = h.Status
	} else {
		page.Health = http.StatusText(res.Status)
	}
	res := cl.do("GET", "/readyz", nil, nil)
	if res.decode(&rd) {
		page.Ready, page.Store, page.Search = rd.Status, rd.Store, rd.CarSearch
	} else {
		page.Ready = strconv.Itoa(res.Status) + " " + res.problemText()
	}
	mres := cl.do("GET", "/metrics", nil, map[string]string{"Accept": "text/plain"})
	if !mres.ok() {
		cl.problemOf(mres)
	}
	// The text exposition format, read by Prometheus's own parser; a
	// body it cannot read (a refusal) leaves the counts at zero.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, _ := parser.TextToMetricFamilies(bytes.NewReader(mres.Body))
	classes := map[string]float64{}
	routes := map[string]float64{}
	for _, m := range families["yard_http_requests_total"].GetMetric() {
		v := m.GetCounter().GetValue()
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		page.Requests += v
		if s := labels["status"]; s != "" {
			classes[s[:1]+"xx"] += v
		}
		routes[labels["method"]+" "+labels["route"]] += v
	}
	// In the order of the exposition, which sorts the names.
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_open_fds", "process_resident_memory_bytes"} {
		for _, m := range families[name].GetMetric() {
			page.Gauges = append(page.Gauges, routeCount{name, m.GetGauge().GetValue()})
		}
	}
	for _, k := range []string{"2xx", "3xx", "4xx", "5xx"} {
		page.ByClass = append(page.ByClass, routeCount{k, classes[k]})
	}
	for k, v := range routes {
		page.TopRoutes = append(page.TopRoutes, routeCount{k, v})
	}
	slices.SortFunc(page.TopRoutes, func(a, b routeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Route, b.Route))
	})
	page.TopRoutes = page.TopRoutes[:min(10, len(page.TopRoutes))]
	c.render(w, r, cl, cl.status, "ops", "Server", page)
}

// consumer is an OAuth 1.0a consumer as GET /oauth/consumers shows it.
type consumer struct {
	Key         string  `json:"key"`
	Secret      string  `json:"secret"`
	Name        string  `json:"name"`
	CallbackURL *string `json:"callbackUrl"`
	CreatedAt   string  `json:"createdAt"`
}

// authorization is an application a person allowed (OAuth 1.0a).
type authorization struct {
	ID           string `json:"id"`
	ConsumerName string `json:"consumerName"`
	UserID       string `json:"userId"`
	CreatedAt    string `json:"createdAt"`
}

// handleConsumers lists, registers (secret shown once) and deletes OAuth
// 1.0a consumers, and lists the authorizations people gave them.
// Administrators only.
func (c *Console) handleConsumers(cl *call, w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		res := result{Status: http.StatusBadRequest}
		switch r.PostForm.Get("op") {
		case "create":
			body := map[string]any{"name": strings.TrimSpace(r.PostForm.Get("name"))}
			if cb := strings.TrimSpace(r.PostForm.Get("callbackUrl")); cb != "" {
				body["callbackUrl"] = cb
			}
			var k consumer
			if res = cl.do("POST", "/oauth/consumers", body, nil); res.decode(&k) {
				cl.notice = "Registered " + k.Name + "."
				cl.secret = &secret{Label: "Key " + k.Key + ", secret (shown once)", Value: k.Secret}
			}
		case "delete":
			res = cl.noteOK(cl.do("DELETE", "/oauth/consumers/"+seg(r.PostForm.Get("key")), nil, nil), "Deleted the consumer.")
		case "revoke":
			res = cl.noteOK(cl.do("DELETE", "/oauth/authorizations/"+seg(r.PostForm.Get("id")), nil, nil), "Revoked the authorization.")
		}
		if !res.ok() {
			cl.refused(res)
		}
	}
	var cs items[consumer]
	if res := cl.do("GET", "/oauth/consumers?max=100", nil, nil); !res.decode(&cs) {
		cl.problemOf(res)
		cl.status = res.Status // the list's refusal, over the form's
	}
	var as items[authorization]
	cl.do("GET", "/oauth/authorizations?max=100", nil, nil).decode(&as)
	c.render(w, r, cl, cl.status, "consumers", "OAuth consumers", struct {
		Consumers      []consumer
		Authorizations []authorization
	}{cs.Items, as.Items})
}

// handlePeople lists the people (GET /v1/people) and creates one (POST
// /v1/people; the password the server makes is shown once). Administrators
// only.
func (c *Console) handlePeople(cl *call, w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		f := r.PostForm
		body := map[string]any{"name": strings.TrimSpace(f.Get("name")), "email": strings.TrimSpace(f.Get("email"))}
		if p := strings.TrimSpace(f.Get("phone")); p != "" {
			body["phone"] = p
		}
		if f.Get("admin") != "" {
			body["roles"] = []string{"admin", "user"}
		}
		var p person
		if cl.accepted(cl.do("POST", "/v1/people", body, nil), &p) {
			cl.notice = "Created " + p.Name + "."
			cl.secret = &secret{Label: "Password of " + p.Name + " (shown once)", Value: p.Password}
		}
	}
	people := readList[person](cl, r, "/v1/people", Prefix+"admin/people?")
	c.render(w, r, cl, cl.status, "people", "People", people)
}
