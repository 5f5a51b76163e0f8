package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard/internal/weblink"
)

// effects are the bark effects (docs/barks.md, "The effects").
var effects = []string{"record", "email", "email-count", "fetch-code"}

// mergePatch is the header of a JSON merge patch (RFC 7396).
var mergePatch = map[string]string{"Content-Type": "application/merge-patch+json"}

// person is a person as GET /v1/people/{id} shows them.
type person struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Email    string   `json:"email"`
	Roles    []string `json:"roles"`
	Disabled bool     `json:"disabled"`
	Password string   `json:"password"`
}

// dog is a dog as GET /v1/dogs/{dog_id}/ shows it.
type dog struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Email        string `json:"email"`
	BarkCount    int64  `json:"barkCount"`
	BarkEffect   string `json:"barkEffect"`
	CodeURL      string `json:"codeUrl"`
	CodeRevision string `json:"codeRevision"`
	Barks        *struct {
		Next      *string `json:"next"`
		Frequency int     `json:"frequency"`
	} `json:"barks"` // the schedule
}

// task is a bark task as GET …/barks shows it.
type task struct {
	ID        string `json:"id"`
	Effect    string `json:"effect"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
}

// Open reports whether the task may still be canceled.
func (t task) Open() bool { return t.Status == "pending" || t.Status == "running" }

// pager is a page of a collection: its place and the console links to
// the API's first, prev, next and last pages.
type pager struct {
	Offset, Max, Total      int
	First, Prev, Next, Last string
}

// newPager reads the first, prev, next and last links of the API's RFC
// 8288 Link header into console links: prefix (a console path and "?",
// or its query and "&") then the offset the link names and max.
func newPager(prefix string, res result, offset, max, total int) pager {
	p := pager{Offset: offset, Max: max, Total: total}
	targets := weblink.Targets(res.Header)
	for rel, link := range map[string]*string{"first": &p.First, "prev": &p.Prev, "next": &p.Next, "last": &p.Last} {
		target, ok := targets[rel]
		u, err := url.Parse(target)
		if ok && err == nil {
			*link = prefix + "offset=" + strconv.Itoa(atoiDefault(u.Query().Get("offset"), 0)) + "&max=" + strconv.Itoa(max)
		}
	}
	return p
}

// items is the body of an API list: a page of items and, where the API
// counts them, their total.
type items[T any] struct {
	Items []T `json:"items"`
	Total int `json:"total"`
}

// readList reads the page of the API list at path (no query) that the
// console page's own offset and max name, and its pager over the console
// page self (a console path and "?"). A refusal becomes the page's problem
// and, unless an earlier call on the page set one, its status.
func readList[T any](cl *call, r *http.Request, path, self string) list[T] {
	offset, max := paging(r)
	var body items[T]
	res := cl.do("GET", path+"?offset="+strconv.Itoa(offset)+"&max="+strconv.Itoa(max), nil, nil)
	cl.accepted(res, &body)
	return list[T]{Items: body.Items, Pager: newPager(self, res, offset, max, body.Total)}
}

// list is a page of an API list as a console page shows it: the items and
// the pager over them.
type list[T any] struct {
	Items []T
	Pager pager
}

// paging reads offset and max of a console list page.
func paging(r *http.Request) (offset, max int) {
	q := r.URL.Query()
	offset, max = atoiDefault(q.Get("offset"), 0), atoiDefault(q.Get("max"), 20)
	if max < 1 || max > 100 {
		max = 20
	}
	return offset, max
}

type dogsPage struct {
	List list[dog]
	Form dogForm
}

// dogForm is what the create and edit forms hold, and the JSON body they
// send (its members in the order the page's curl command shows them).
type dogForm struct {
	BarkEffect string `json:"barkEffect,omitempty"`
	CodeURL    string `json:"codeUrl,omitempty"`
	Email      string `json:"email"`
	Name       string `json:"name"`
}

func readDogForm(r *http.Request) dogForm {
	f := r.PostForm
	return dogForm{Name: strings.TrimSpace(f.Get("name")), Email: strings.TrimSpace(f.Get("email")),
		BarkEffect: f.Get("barkEffect"), CodeURL: strings.TrimSpace(f.Get("codeUrl"))}
}

// handleDogs is the person's dogs, a page at a time (GET /v1/dogs), and
// the form that creates one (POST /v1/dogs).
func (c *Console) handleDogs(cl *call, w http.ResponseWriter, r *http.Request) {
	var page dogsPage
	if r.Method == http.MethodPost {
		page.Form = readDogForm(r)
		if res := cl.noteOK(cl.do("POST", "/v1/dogs", page.Form, nil), "Created the dog "+page.Form.Name+"."); res.ok() {
			page.Form = dogForm{}
		} else {
			cl.refused(res)
		}
	}
	page.List = readList[dog](cl, r, "/v1/dogs", Prefix+"dogs?")
	c.render(w, r, cl, cl.status, "dogs", "Dogs", page)
}

type dogPage struct {
	Dog      dog
	TaskList []task
	Tasks    string // the API path of the dog's tasks, which the script reads
	Events   string // the event stream the page's script follows
	Self     string // this page's path
}

// handleDog is one dog: its representation, its tasks and schedule, and
// the forms that edit, delete and bark it, cancel a task and change the
// schedule.
func (c *Console) handleDog(cl *call, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("dog_id")
	api := "/v1/dogs/" + seg(id) + "/"
	if r.Method == http.MethodPost {
		res, done := c.dogAction(cl, r, api)
		if done {
			c.deleted(w, r, cl, "dog", "dogs")
			return
		}
		if !res.ok() && res.Status != http.StatusSeeOther {
			cl.refused(res)
		}
	}
	var page dogPage
	if _, ok := c.read(w, r, cl, api, &page.Dog, "dog"); !ok {
		return
	}
	var tasks items[task]
	page.Tasks = "/v1/dogs/" + seg(id) + "/barks?max=20"
	if tr := cl.do("GET", page.Tasks, nil, nil); tr.decode(&tasks) {
		page.TaskList = tasks.Items
	}
	page.Self = Prefix + "dogs/" + seg(id) + "/"
	page.Events = cl.scripted("/v1/events?types=bark.*", "text/event-stream")
	cl.scripted(page.Tasks, "application/json")
	c.render(w, r, cl, cl.status, "dog", page.Dog.Name, page)
}

// dogAction runs the form's op against the dog at api; done reports a
// deleted dog.
func (c *Console) dogAction(cl *call, r *http.Request, api string) (res result, done bool) {
	f := r.PostForm
	switch f.Get("op") {
	case "edit":
		res = cl.noteOK(cl.do("PATCH", api, readDogForm(r), mergePatch), "Saved.")
	case "delete":
		res = cl.do("DELETE", api, nil, nil)
		return res, res.ok()
	case "bark":
		var body any
		if e := f.Get("effect"); e != "" {
			body = map[string]string{"effect": e}
		}
		h := map[string]string{}
		if f.Get("async") != "" {
			h["Prefer"] = "respond-async"
		}
		res = cl.do("POST", api+"barks", body, h)
		if res.ok() || res.Status == http.StatusSeeOther {
			cl.notice = "The dog barked (" + strconv.Itoa(res.Status) + " " + http.StatusText(res.Status) + ")."
		}
	case "cancel":
		res = cl.noteOK(cl.do("DELETE", api+"barks/"+seg(f.Get("bark")), nil, nil), "The task is canceled.")
	case "schedule":
		next, err := scheduleNext(f.Get("next"))
		if err != nil {
			cl.problem = "The next bark is not a date and time."
			return result{Status: http.StatusBadRequest}, false
		}
		freq := atoiDefault(f.Get("frequency"), -1)
		// A fresh token: a repeat of the same form post is a new change,
		// as the person asked.
		body := map[string]any{"token": randomHex(12), "next": next, "frequency": freq}
		res = cl.noteOK(cl.do("POST", api+"bark-schedule", body, nil), "The schedule is saved.")
	case "unschedule":
		res = cl.noteOK(cl.do("DELETE", api+"bark-schedule", nil, nil), "The schedule is stopped.")
	default:
		cl.problem = "Unknown action."
		return result{Status: http.StatusBadRequest}, false
	}
	return res, false
}

// scheduleNext reads the schedule form's next bark: empty is now (0), a
// datetime-local value is UTC.
func scheduleNext(s string) (any, error) {
	if s == "" {
		return 0, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Format(time.RFC3339), nil
		}
	}
	_, err := time.Parse(time.RFC3339, s)
	return nil, err
}
