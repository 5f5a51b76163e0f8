package console

import (
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
	cl.section = "events"
	q := r.URL.Query()
	var chosen []string
	for _, t := range q["types"] {
		for part := range strings.SplitSeq(t, ",") {
			if part = strings.TrimSpace(part); part != "" {
				chosen = append(chosen, part)
			}
		}
	}
	page := eventsPage{After: q.Get("after"), Chosen: strings.Join(chosen, ","), MaxShow: 100}
	for i, t := range eventTypes {
		page.Types = append(page.Types, typeChoice{Type: t, ID: "type-" + strconv.Itoa(i), Chosen: slices.Contains(chosen, t)})
	}
	api := url.Values{"max": {strconv.Itoa(page.MaxShow)}}
	if page.Chosen != "" {
		api.Set("types", page.Chosen)
	}
	if page.After != "" {
		api.Set("after", page.After)
	}
	var body struct {
		Items []event `json:"items"`
		Next  string  `json:"next"`
	}
	status := http.StatusOK
	res := cl.do("GET", "/v1/events?"+api.Encode(), nil, nil)
	if !res.decode(&body) {
		cl.problemOf(res)
		status = res.Status
	}
	page.Events, page.Next = body.Items, body.Next
	for i, ev := range page.Events {
		page.Events[i].Link = subjectLink(c.cfg.BaseURL, ev.Subject, ev.Type)
	}
	if page.Next == "" {
		page.Next = page.After
	}
	self := url.Values{}
	if page.Chosen != "" {
		self.Set("types", page.Chosen)
	}
	if len(page.Events) == page.MaxShow && page.Next != "" {
		self.Set("after", page.Next)
		page.Newer = Prefix + "events?" + self.Encode()
		self.Del("after")
	}
	page.Refresh = r.URL.RequestURI()
	stream := url.Values{}
	if page.Chosen != "" {
		stream.Set("types", page.Chosen)
	}
	if page.Next != "" {
		stream.Set("after", page.Next)
	}
	page.Stream = "/v1/events"
	if len(stream) > 0 {
		page.Stream += "?" + stream.Encode()
	}
	cl.scripted(page.Stream, "text/event-stream")
	c.render(w, r, cl, status, "events", "Events", page)
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
	EventID   string  `json:"eventId"`
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
	cl.section = "webhooks"
	status := http.StatusOK
	if r.Method == http.MethodPost {
		var types []string
		for _, t := range strings.Split(r.PostForm.Get("types"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
		body := map[string]any{"url": strings.TrimSpace(r.PostForm.Get("url"))}
		if len(types) > 0 {
			body["types"] = types
		}
		var h webhook
		if res := cl.do("POST", "/v1/webhooks", body, nil); res.decode(&h) {
			cl.notice = "Created the webhook."
			cl.secret = &secret{Label: "Its signing secret (shown once)", Value: h.Secret}
		} else {
			cl.problemOf(res)
			status = res.Status
		}
	}
	hooks, pg := readList[webhook](cl, r, "/v1/webhooks", Prefix+"webhooks?", &status)
	c.render(w, r, cl, status, "webhooks", "Webhooks", struct {
		Webhooks []webhook
		Pager    pager
	}{hooks, pg})
}

// handleWebhook is one webhook with its latest deliveries; it is enabled,
// disabled (PATCH) or deleted (DELETE) here.
func (c *Console) handleWebhook(cl *call, w http.ResponseWriter, r *http.Request) {
	cl.section = "webhooks"
	id := r.PathValue("webhook_id")
	api := "/v1/webhooks/" + seg(id)
	status := http.StatusOK
	if r.Method == http.MethodPost {
		var res result
		switch op := r.PostForm.Get("op"); op {
		case "enable", "disable":
			res = cl.do("PATCH", api, map[string]any{"enabled": op == "enable"}, map[string]string{"Content-Type": "application/merge-patch+json"})
			if res.ok() {
				cl.notice = "The webhook is " + op + "d."
			}
		case "delete":
			res = cl.do("DELETE", api, nil, nil)
			if res.ok() {
				c.render(w, r, cl, http.StatusOK, "message", "Webhook deleted",
					message{Text: "The webhook is deleted.", Link: Prefix + "webhooks", LinkLabel: "Back to the webhooks"})
				return
			}
		default:
			res = result{Status: http.StatusBadRequest}
		}
		if !res.ok() {
			cl.problemOf(res)
			status = res.Status
		}
	}
	var h webhook
	res := cl.do("GET", api, nil, nil)
	if !res.decode(&h) {
		cl.problemOf(res)
		c.render(w, r, cl, res.Status, "error", "Webhook not shown", errorPage{Detail: "The webhook could not be read."})
		return
	}
	var ds struct {
		Items []delivery `json:"items"`
	}
	cl.do("GET", api+"/deliveries?max=20", nil, nil).decode(&ds)
	c.render(w, r, cl, status, "webhook", "Webhook", struct {
		Hook       webhook
		Deliveries []delivery
		Self       string
	}{h, ds.Items, Prefix + "webhooks/" + seg(id)})
}
