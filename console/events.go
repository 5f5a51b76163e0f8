package console

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// eventTypes are the type filters the events page offers (docs/events.md,
// "Types"): prefixes with ".*".
var eventTypes = []string{"bark.*", "dog.*", "order.*", "webhook.*", "car.*", "garage.*"}

// event is a CloudEvent as GET /v1/events shows it.
type event struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Time    string `json:"time"`
	Subject string `json:"subject"`
	Link    string `json:"-"` // the console's page of the subject, if any
}

// subjectLink is the console page of an event's subject (an absolute URL
// of the API), or "" when the console has none or it was deleted.
func subjectLink(base, subject, typ string) string {
	path, ok := strings.CutPrefix(subject, base)
	if !ok || strings.HasSuffix(typ, ".deleted") {
		return ""
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "v1" && parts[1] == "dogs":
		return Prefix + "dogs/" + parts[2] + "/"
	case len(parts) == 2 && (parts[0] == "order" || parts[0] == "orders"):
		return Prefix + "orders/" + parts[1]
	case len(parts) == 2 && (parts[0] == "cars" || parts[0] == "car"):
		return Prefix + "cars/" + parts[1]
	case len(parts) == 2 && (parts[0] == "garages" || parts[0] == "garage"):
		return Prefix + "garages/" + parts[1]
	case len(parts) == 3 && parts[0] == "v1" && parts[1] == "webhooks":
		return Prefix + "webhooks/" + parts[2]
	}
	return ""
}

// commaList splits comma-separated values into their non-empty,
// trimmed parts.
func commaList(values ...string) []string {
	var out []string
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

type eventsPage struct {
	Events  []event
	Types   []typeChoice
	Chosen  string // the types= filter, comma-separated
	After   string // where this page starts
	Next    string // the id the page ends with: the stream resumes after it
	Newer   string // a link to the events after this page, when it is full
	Stream  string // the API path of the stream the script opens
	Refresh string // this page again: what came since, without scripts
	MaxShow int
}

// typeChoice is one checkbox of the type filter.
type typeChoice struct {
	Type   string
	ID     string
	Chosen bool
}

// handleEvents is the person's events: the page after an id (GET
// /v1/events as JSON, types filtered), then, with scripts on, the stream
// from where the page ends (GET /v1/events as text/event-stream with
// after=): a reload renders everything after the same start again and
// resumes the stream after it, so nothing is lost or shown twice.
func (c *Console) handleEvents(cl *call, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	chosen := commaList(q["types"]...)
	page := eventsPage{After: q.Get("after"), Chosen: strings.Join(chosen, ","), MaxShow: 100}
	for i, t := range eventTypes {
		page.Types = append(page.Types, typeChoice{Type: t, ID: "type-" + strconv.Itoa(i), Chosen: slices.Contains(chosen, t)})
	}
	// The types and a start, as the API's queries (and this page's) take them.
	query := func(after string) url.Values {
		v := url.Values{}
		if page.Chosen != "" {
			v.Set("types", page.Chosen)
		}
		if after != "" {
			v.Set("after", after)
		}
		return v
	}
	api := query(page.After)
	api.Set("max", strconv.Itoa(page.MaxShow))
	var body struct {
		Items []event `json:"items"`
		Next  string  `json:"next"`
	}
	cl.accepted(cl.do("GET", "/v1/events?"+api.Encode(), nil, nil), &body)
	page.Events, page.Next = body.Items, cmp.Or(body.Next, page.After)
	for i, ev := range page.Events {
		page.Events[i].Link = subjectLink(c.cfg.BaseURL, ev.Subject, ev.Type)
	}
	if len(page.Events) == page.MaxShow && page.Next != "" {
		page.Newer = Prefix + "events?" + query(page.Next).Encode()
	}
	page.Refresh = r.URL.RequestURI()
	page.Stream = "/v1/events"
	if stream := query(page.Next); len(stream) > 0 {
		page.Stream += "?" + stream.Encode()
	}
	cl.scripted(page.Stream, "text/event-stream")
	c.render(w, r, cl, cl.status, "events", "Events", page)
}

// webhook is a subscription as GET /v1/webhooks/{webhook_id} shows it.
type webhook struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Types          []string `json:"types"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabledReason"`
	FailingSince   *string  `json:"failingSince"`
	CreatedAt      string   `json:"createdAt"`
	Secret         string   `json:"secret"`
}

// delivery is one attempt to deliver an event to a webhook.
type delivery struct {
	EventType string  `json:"eventType"`
	Attempt   int     `json:"attempt"`
	Status    string  `json:"status"`
	Code      *int    `json:"code"`
	Error     *string `json:"error"`
	Time      string  `json:"time"`
}

// handleWebhooks lists the person's webhooks (GET /v1/webhooks) and
// creates one (POST /v1/webhooks; its secret is shown once).
func (c *Console) handleWebhooks(cl *call, w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body := map[string]any{"url": strings.TrimSpace(r.PostForm.Get("url"))}
		if types := commaList(r.PostForm.Get("types")); len(types) > 0 {
			body["types"] = types
		}
		var h webhook
		if cl.accepted(cl.do("POST", "/v1/webhooks", body, nil), &h) {
			cl.notice = "Created the webhook."
			cl.secret = &secret{Label: "Its signing secret (shown once)", Value: h.Secret}
		}
	}
	hooks := readList[webhook](cl, r, "/v1/webhooks", Prefix+"webhooks?")
	c.render(w, r, cl, cl.status, "webhooks", "Webhooks", hooks)
}

// handleWebhook is one webhook with its latest deliveries; it is enabled,
// disabled (PATCH) or deleted (DELETE) here.
func (c *Console) handleWebhook(cl *call, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("webhook_id")
	api := "/v1/webhooks/" + seg(id)
	if r.Method == http.MethodPost {
		res := result{Status: http.StatusBadRequest}
		switch op := r.PostForm.Get("op"); op {
		case "enable", "disable":
			res = cl.noteOK(cl.do("PATCH", api, map[string]any{"enabled": op == "enable"}, mergePatch), "The webhook is "+op+"d.")
		case "delete":
			if res = cl.do("DELETE", api, nil, nil); res.ok() {
				c.deleted(w, r, cl, "webhook", "webhooks")
				return
			}
		}
		if !res.ok() {
			cl.refused(res)
		}
	}
	var h webhook
	if _, ok := c.read(w, r, cl, api, &h, "webhook"); !ok {
		return
	}
	var ds items[delivery]
	cl.do("GET", api+"/deliveries?max=20", nil, nil).decode(&ds)
	c.render(w, r, cl, cl.status, "webhook", "Webhook", struct {
		Hook       webhook
		Deliveries []delivery
		Self       string
	}{h, ds.Items, Prefix + "webhooks/" + seg(id)})
}
