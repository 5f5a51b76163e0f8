package conform

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// kit is the state of one run: the server, the administrator, what the
// kit created (to remove it at the end) and the fixtures checks share.
type kit struct {
	base   *url.URL
	hc     *http.Client
	cfg    Config
	prefix string // every name the kit gives starts with it
	admin  *person
	undo   []undo

	owner, other *person // people the kit created
	dogURL       string  // a dog of owner's
	carSet       *carSet
	recv         *receiver
}

// person is someone the kit signs in as.
type person struct {
	id, name, password string
}

// undo is one removal to make at the end of the run.
type undo struct {
	what   string
	method string
	target string
	opts   []opt
	ok     []int // statuses that mean it is gone
}

func newKit(base *url.URL, hc *http.Client, cfg Config) *kit {
	cfg.UserAgent = cmp.Or(cfg.UserAgent, "yard-conform")
	return &kit{base: base, hc: hc, cfg: cfg, prefix: "conform-" + randomHex(4),
		admin: &person{name: cfg.Admin, password: cfg.AdminPassword}}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// signIn makes sure the server answers and the administrator signs in:
// any failure here is a setup error (exit status 2).
func (k *kit) signIn(ctx context.Context) error {
	if _, err := k.send(ctx, "GET", "/healthz"); err != nil {
		return setupErr("cannot reach %s: %v", k.base, err)
	}
	r, err := k.send(ctx, "GET", "/v1/people?max=1", basic(k.admin))
	if err != nil {
		return setupErr("cannot reach %s: %v", k.base, err)
	}
	switch r.Status {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized:
		return setupErr("cannot sign in to %s as %q: the server answered 401 (wrong name or password)", k.base, k.admin.name)
	case http.StatusForbidden:
		return setupErr("%q signed in to %s but is not an administrator (403)", k.admin.name, k.base)
	case http.StatusTooManyRequests:
		return setupErr("cannot sign in to %s as %q: too many failed sign-ins (429, Retry-After %s)", k.base, k.admin.name, r.Header.Get("Retry-After"))
	default:
		return setupErr("cannot sign in to %s as %q: GET /v1/people answered %d", k.base, k.admin.name, r.Status)
	}
}

// created records what to remove at the end of the run.
func (k *kit) created(what, method, target string, opts []opt, ok ...int) {
	if len(ok) == 0 {
		ok = []int{204, 200, 404}
	}
	k.undo = append(k.undo, undo{what: what, method: method, target: target, opts: opts, ok: ok})
}

// createdAnyway records the removal of target, as who, when a request
// the server should have refused created it (201) all the same.
func (t *T) createdAnyway(r *Resp, what, target string, who opt) {
	if r.Status == 201 {
		t.k.created(what, "DELETE", target, []opt{who})
	}
}

// cleanup removes what the kit created, newest first, and returns what it
// could not remove.
func (k *kit) cleanup(ctx context.Context) []string {
	var left []string
	for i := len(k.undo) - 1; i >= 0; i-- {
		u := k.undo[i]
		r, err := k.send(ctx, u.method, u.target, u.opts...)
		switch {
		case err != nil:
			left = append(left, fmt.Sprintf("%s (%s %s): %v", u.what, u.method, u.target, err))
		case !slices.Contains(u.ok, r.Status):
			left = append(left, fmt.Sprintf("%s (%s %s): status %d", u.what, u.method, u.target, r.Status))
		}
	}
	k.undo = nil
	if k.recv != nil {
		k.recv.close()
	}
	return left
}

// newPerson creates a person (a plain user) named prefix-role.
func (t *T) newPerson(role string) *person {
	k := t.k
	p := &person{name: k.prefix + "-" + role, password: "pw-" + randomHex(12)}
	r := t.Do("POST", "/v1/people", basic(k.admin), jsonBody(map[string]any{
		"name": p.name, "password": p.password, "email": p.name + "@example.com"}))
	t.Status(r, 201)
	p.id = r.Str("id")
	t.Check(p.id != "", "the created person has no id")
	k.created("person "+p.name, "DELETE", "/v1/people/"+url.PathEscape(p.id), []opt{basic(k.admin)})
	return p
}

// owner is the person who owns the kit's dogs, orders and keys.
func (t *T) owner() *person { return t.person(&t.k.owner, "owner") }

// other is a second person, who must not reach the owner's things.
func (t *T) other() *person { return t.person(&t.k.other, "other") }

// person is *p, created with the role when it is first asked for.
func (t *T) person(p **person, role string) *person {
	if *p == nil {
		*p = t.newPerson(role)
	}
	return *p
}

// newDog creates a dog of the owner's and returns its URL.
func (t *T) newDog() string {
	body := map[string]any{"name": t.k.prefix + "-dog", "email": t.k.prefix + "-dog@example.com"}
	r := t.Expect(201, "POST", "/v1/dogs", basic(t.owner()), jsonBody(body))
	loc := t.Location(r, "")
	t.k.created("dog "+loc, "DELETE", loc, []opt{basic(t.k.admin)})
	return loc
}

// dog is a dog of the owner's that checks share (effect record).
func (t *T) dog() string {
	if t.k.dogURL == "" {
		t.k.dogURL = t.newDog()
	}
	return t.k.dogURL
}

// path is the path of an absolute URL the server gave.
func (t *T) path(u string) string {
	p, err := url.Parse(u)
	t.Check(err == nil, "bad URL %q", u)
	return p.EscapedPath()
}
