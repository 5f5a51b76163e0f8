package httpapi_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/notify/smtptest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// barkEnv is an API with bark tasks: mail to a real SMTP server, text
// messages to the outbox, fetches with real git. Tests run the workers by
// hand (drain) so every state can be observed.
type barkEnv struct {
	*apitest.Env
	// repos is the directory file:// codeUrls may point into.
	repos string
	svc   *jobs.Service
	smtp  *smtptest.Server
	texts *notify.TextOutbox
	data  string
}

func startBarks(t *testing.T, db *store.DB, opts ...apitest.Option) *barkEnv {
	t.Helper()
	mails := smtptest.Start(t, smtptest.Options{User: "yard", Pass: "mailpw"})
	mailer, err := notify.ParseSMTPURL("smtp://yard:mailpw@" + mails.Addr)
	if err != nil {
		t.Fatal(err)
	}
	mailer.TLSConfig = &tls.Config{RootCAs: mails.Roots}
	data, repos := t.TempDir(), t.TempDir()
	texts := &notify.TextOutbox{Dir: filepath.Join(data, "outbox", "sms")}
	fetcher := &fetch.Runner{Timeout: time.Minute, Policy: &fetch.Policy{AllowDirs: []string{repos}}}
	svc := jobs.New(jobs.Config{DB: db, Poll: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond,
		Effects: &jobs.Effects{Mailer: mailer, Texter: texts, Fetcher: fetcher, Users: db,
			DataDir: data, From: "yard@yard.test", Domain: "yard.test"}})
	env := apitest.Start(t, db, append([]apitest.Option{func(d *httpapi.Deps) { d.Barks = svc }}, opts...)...)
	return &barkEnv{Env: env, repos: repos, svc: svc, smtp: mails, texts: texts, data: data}
}

func (e *barkEnv) drain(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		ran, err := e.svc.RunOne(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return n
		}
		n++
	}
}

func (e *barkEnv) dog(t *testing.T, user string, body map[string]any) (id, uri string) {
	t.Helper()
	resp := e.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: user, Password: pw, Body: body})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %s", resp.StatusCode, resp.Body)
	}
	id = resp.Map(t)["id"].(string)
	return id, "/v1/dogs/" + id + "/"
}

func (e *barkEnv) barkCount(t *testing.T, uri string) float64 {
	t.Helper()
	return e.Do(apitest.Request{Path: uri, User: "alice", Password: pw}).Map(t)["barkCount"].(float64)
}

// localRepo makes a repository with one commit under root and returns
// its file:// URL and the commit.
func localRepo(t *testing.T, root string) (string, string) {
	t.Helper()
	dir, err := os.MkdirTemp(root, "repo-")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "--quiet"}, {"commit", "--quiet", "--allow-empty", "-m", "woof"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.org"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + dir, strings.TrimSpace(string(out))
}

func TestBarkResponses(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)
		repo, head := localRepo(t, env.repos)
		dogID, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": repo})
		barks := dogURI + "barks"
		dogURL := regexp.QuoteMeta(env.URL + dogURI)
		barkURL := "^" + regexp.QuoteMeta(env.URL+barks+"/") + "[0-9a-f-]{36}$"
		as := func(r apitest.Request) apitest.Request { r.User, r.Password = "alice", pw; return r }
		async := map[string]string{"Prefer": "respond-async"}
		html := map[string]string{"Prefer": "respond-async", "Accept": "text/html"}

		run(t, env.Env, []scenario{
			{"email, synchronous: 200", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "email"}}), 200,
				map[string]string{"Location": "-", "Preference-Applied": "-"}, []string{`"status":"succeeded"`, `"effect":"email"`}},
			{"email, asynchronous: 202 with a link", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "email"}, Headers: async}), 202,
				map[string]string{"Location": barkURL, "Preference-Applied": "^respond-async$"}, []string{`"status":"pending"`, `"_links"`, `"href":"` + env.URL + barks + "/"}},
			{"asynchronous, HTML body", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "email"}, Headers: html}), 202,
				map[string]string{"Location": barkURL, "Content-Type": "^text/html"}, []string{`<a href="` + env.URL + barks + "/"}},
			{"email-count, synchronous: 303 to the dog", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "email-count"}}), 303,
				map[string]string{"Location": "^" + dogURL + "$"}, []string{`"href":"` + env.URL + dogURI + `"`}},
			{"email-count, HTML body", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "email-count"}, Headers: map[string]string{"Accept": "text/html,*/*;q=0.8"}}), 303,
				map[string]string{"Location": "^" + dogURL + "$", "Content-Type": "^text/html"}, []string{`<a href="` + env.URL + dogURI + `"`}},
			{"record (the dog's effect), synchronous: 201", as(apitest.Request{Method: "POST", Path: barks}), 201,
				map[string]string{"Location": barkURL}, []string{`"timestamp":"`}},
			{"record, asynchronous: 202", as(apitest.Request{Method: "POST", Path: barks, Headers: async}), 202,
				map[string]string{"Location": barkURL, "Preference-Applied": "respond-async"}, nil},
			{"fetch-code is always asynchronous", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "fetch-code"}}), 202,
				map[string]string{"Location": barkURL, "Preference-Applied": "-"}, nil},
			{"unknown effect", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "howl"}}), 400, nil, []string{`"field":"effect"`}},
			{"unknown field", as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"volume": 11}}), 400, nil, []string{`"field":"volume"`}},
			{"malformed body", as(apitest.Request{Method: "POST", Path: barks, Body: `{"effect":`}), 400, nil, []string{"malformed"}},
			{"another user's dog", apitest.Request{Method: "POST", Path: barks, User: "bob", Password: pw}, 403, nil, []string{"forbidden"}},
			{"no credentials", apitest.Request{Method: "POST", Path: barks}, 401, nil, nil},
			{"missing dog", as(apitest.Request{Method: "POST", Path: "/v1/dogs/nope/barks"}), 404, nil, nil},
			{"missing bark", as(apitest.Request{Path: barks + "/nope"}), 404, nil, nil},
		})
		// Sync: email 1, email-count 2; async pending: 2 email, 1 record, 1 fetch-code.
		if got := env.barkCount(t, dogURI); got != 3 {
			t.Fatalf("barkCount after the synchronous barks: got %v, want 3", got)
		}
		if n := len(env.smtp.Messages()); n != 3 {
			t.Fatalf("SMTP server received %d messages, want 3", n)
		}
		m := env.smtp.Messages()[0]
		if m.To != "rex@example.org" || !m.Authed || !regexp.MustCompile(`^<bark-[0-9a-f-]{36}@yard.test>$`).MatchString(m.Header().Get("Message-Id")) {
			t.Errorf("delivered message: to %s, authed %v, Message-ID %s", m.To, m.Authed, m.Header().Get("Message-Id"))
		}

		// email-count asynchronous: 202, GET 200 while pending, then 303.
		resp := env.Do(as(apitest.Request{Method: "POST", Path: barks, Body: map[string]any{"effect": "email-count"}, Headers: async}))
		if resp.StatusCode != 202 {
			t.Fatalf("async email-count: %d", resp.StatusCode)
		}
		ecTask := strings.TrimPrefix(resp.Header.Get("Location"), env.URL)
		resp = env.Do(as(apitest.Request{Path: ecTask}))
		if resp.StatusCode != 200 || resp.Map(t)["status"] != "pending" {
			t.Fatalf("pending task: %d %s", resp.StatusCode, resp.Body)
		}
		// A pending task can be canceled; it then never runs.
		resp = env.Do(as(apitest.Request{Method: "POST", Path: barks, Headers: async}))
		canceled := strings.TrimPrefix(resp.Header.Get("Location"), env.URL)
		if r := env.Do(as(apitest.Request{Method: "DELETE", Path: canceled})); r.StatusCode != 204 {
			t.Fatalf("cancel pending: %d %s", r.StatusCode, r.Body)
		}
		if n := env.drain(t); n != 5 {
			t.Fatalf("ran %d tasks, want 5", n)
		}
		run(t, env.Env, []scenario{
			{"finished email-count task: 303 to the dog", as(apitest.Request{Path: ecTask}), 303, map[string]string{"Location": "^" + dogURL + "$"}, nil},
			{"canceled task", as(apitest.Request{Path: canceled}), 200, nil, []string{`"status":"canceled"`}},
			{"canceled task cannot be deleted", as(apitest.Request{Method: "DELETE", Path: canceled}), 409, nil, []string{"conflict"}},
		})
		if got := env.barkCount(t, dogURI); got != 5 {
			t.Fatalf("barkCount after the async barks: got %v, want 5", got)
		}

		// fetch-code: 303 once the dog changed, codeRevision, text message.
		list := env.Do(as(apitest.Request{Path: barks + "?max=100"})).Map(t)
		var fetchTask, emailTask, recordTask string
		for _, it := range list["items"].([]any) {
			b := it.(map[string]any)
			switch {
			case b["effect"] == "fetch-code":
				fetchTask = barks + "/" + b["id"].(string)
			case b["effect"] == "email" && b["async"] == false:
				emailTask = barks + "/" + b["id"].(string)
			case b["effect"] == "record" && b["status"] == "succeeded":
				recordTask = barks + "/" + b["id"].(string)
			}
		}
		if list["total"] != 10.0 {
			t.Errorf("barks total: got %v, want 10", list["total"])
		}
		resp = env.Do(as(apitest.Request{Path: fetchTask}))
		if resp.StatusCode != 303 || resp.Header.Get("Location") != env.URL+dogURI {
			t.Fatalf("finished fetch-code: got %d %s", resp.StatusCode, resp.Body)
		}
		dog := env.Do(as(apitest.Request{Path: dogURI})).Map(t)
		if dog["codeRevision"] != head {
			t.Errorf("codeRevision: got %v, want %s", dog["codeRevision"], head)
		}
		if _, err := os.Stat(filepath.Join(env.data, "dogs", dogID, "code", ".git")); err != nil {
			t.Errorf("code not fetched into DATA/dogs/{id}/code: %v", err)
		}
		sms, _ := os.ReadDir(env.texts.Dir)
		if len(sms) != 1 {
			t.Errorf("text messages: got %d, want 1", len(sms))
		}

		// A record is kept; deleting it leaves barkCount alone.
		resp = env.Do(as(apitest.Request{Path: recordTask}))
		if resp.StatusCode != 200 || resp.Map(t)["timestamp"] == nil {
			t.Fatalf("record: %d %s", resp.StatusCode, resp.Body)
		}
		run(t, env.Env, []scenario{
			{"a finished email task cannot be deleted", as(apitest.Request{Method: "DELETE", Path: emailTask}), 409, nil, []string{"conflict"}},
			{"bob cannot delete alice's record", apitest.Request{Method: "DELETE", Path: recordTask, User: "bob", Password: pw}, 403, nil, nil},
			{"delete a record", as(apitest.Request{Method: "DELETE", Path: recordTask}), 204, nil, nil},
			{"deleted record", as(apitest.Request{Path: recordTask}), 404, nil, nil},
			{"paging", as(apitest.Request{Path: barks + "?offset=2&max=3"}), 200, map[string]string{"Link": `rel="next"`}, []string{`"offset":2`, `"max":3`, `"total":9`}},
		})
		if got := env.barkCount(t, dogURI); got != 5 {
			t.Errorf("barkCount after deleting a record: got %v, want 5", got)
		}
	})
}

func TestSingleBark(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)
		_, uri := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		bark := uri + "bark"
		as := func(r apitest.Request) apitest.Request { r.User, r.Password = "alice", pw; return r }
		run(t, env.Env, []scenario{
			{"never barked", as(apitest.Request{Path: bark}), 404, nil, []string{"never barked"}},
			{"bark now", as(apitest.Request{Method: "POST", Path: bark}), 201, map[string]string{"Location": "/barks/"}, []string{`"timestamp"`}},
			{"Prefer is not for the single bark", as(apitest.Request{Method: "POST", Path: bark, Headers: map[string]string{"Prefer": "respond-async"}}), 201, map[string]string{"Preference-Applied": "-"}, nil},
			{"last bark", as(apitest.Request{Path: bark}), 200, nil, []string{`"timestamp":"20`}},
			{"DELETE is not an endpoint", as(apitest.Request{Method: "DELETE", Path: bark}), 405, map[string]string{"Allow": "GET"}, nil},
			{"bob", apitest.Request{Method: "POST", Path: bark, User: "bob", Password: pw}, 403, nil, nil},
		})
		if got := env.barkCount(t, uri); got != 2 {
			t.Errorf("barkCount: got %v, want 2", got)
		}
	})
}

func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

func TestScheduleViews(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		env.CreateUser("bob", pw)
		_, uri := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		as := func(r apitest.Request) apitest.Request { r.User, r.Password = "alice", pw; return r }
		sched := uri + "bark-schedule"
		future := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		first := httpDate(time.Now().Add(time.Second))
		body := map[string]any{"barks": map[string]any{"next": future.Format(time.RFC3339Nano), "frequency": 15}}
		iusFirst := map[string]string{"If-Unmodified-Since": first}

		run(t, env.Env, []scenario{
			{"no schedule yet", as(apitest.Request{Path: sched}), 404, nil, nil},
			{"barks need If-Unmodified-Since", as(apitest.Request{Method: "PATCH", Path: uri, Body: body}), 428, nil, []string{"precondition-required"}},
			{"bad date", as(apitest.Request{Method: "PATCH", Path: uri, Body: body, Headers: map[string]string{"If-Unmodified-Since": "yesterday"}}), 428, nil, []string{"precondition-required"}},
			{"malformed schedule", as(apitest.Request{Method: "PATCH", Path: uri, Body: map[string]any{"barks": map[string]any{"next": "soon", "frequency": "often"}}, Headers: iusFirst}), 400, nil,
				[]string{`"field":"barks.frequency"`, `"field":"barks.next"`}},
			{"unknown schedule field", as(apitest.Request{Method: "PATCH", Path: uri, Body: map[string]any{"barks": map[string]any{"next": 0, "frequency": 5, "loud": true}}, Headers: iusFirst}), 400, nil, []string{"barks.loud"}},
			{"frequency under a minute", as(apitest.Request{Method: "PATCH", Path: uri, Body: map[string]any{"barks": map[string]any{"next": 0, "frequency": 0.5}}, Headers: iusFirst}), 403, nil,
				[]string{"schedule-refused", "at least 1 minute"}},
			{"next in the past", as(apitest.Request{Method: "PATCH", Path: uri, Body: map[string]any{"barks": map[string]any{"next": "2001-01-01T00:00:00Z", "frequency": 5}}, Headers: iusFirst}), 403, nil,
				[]string{"schedule-refused", "in the past"}},
			{"not the owner", apitest.Request{Method: "PATCH", Path: uri, User: "bob", Password: pw, Body: body, Headers: iusFirst}, 403, nil, nil},
			{"applied: 204, with the dog's validators", as(apitest.Request{Method: "PATCH", Path: uri, Body: body, Headers: iusFirst}), 204,
				map[string]string{"ETag": `^"[^"]+"$`, "Last-Modified": "GMT$"}, nil},
			{"the repeat is answered as the first", as(apitest.Request{Method: "PATCH", Path: uri, Body: body, Headers: iusFirst}), 204, nil, nil},
			{"another change with an old date: 412", as(apitest.Request{Method: "PATCH", Path: uri, Body: map[string]any{"barks": map[string]any{"next": 0, "frequency": 1}},
				Headers: map[string]string{"If-Unmodified-Since": httpDate(time.Now().Add(-time.Hour))}}), 412, nil, []string{"precondition-failed"}},
		})
		dog := env.Do(as(apitest.Request{Path: uri})).Map(t)
		b, _ := dog["barks"].(map[string]any)
		if b == nil || b["frequency"] != 15.0 || b["next"] != httpapi.Timestamp(future) {
			t.Fatalf("barks in the dog: got %v", dog["barks"])
		}
		if p, ok := b["previous"].([]any); !ok || len(p) != 0 {
			t.Errorf("previous: got %v, want []", b["previous"])
		}

		// next: 0 is resolved to the receive time: 205.
		// A new HTTP date, a second after the first one.
		second := map[string]string{"If-Unmodified-Since": httpDate(time.Now().Add(2 * time.Second))}
		now0 := map[string]any{"barks": map[string]any{"next": 0, "frequency": 1}}
		run(t, env.Env, []scenario{
			{"next 0: 205", as(apitest.Request{Method: "PATCH", Path: uri, Body: now0, Headers: second}), 205,
				map[string]string{"ETag": `^"[^"]+"$`, "Last-Modified": "GMT$"}, nil},
			{"repeat: 205 again", as(apitest.Request{Method: "PATCH", Path: uri, Body: now0, Headers: second}), 205, nil, nil},
			{"bark-schedule GET", as(apitest.Request{Path: sched}), 200, nil, []string{`"frequency":1`}},
		})
		// The same request serialised again (other spacing, other key
		// order) is a repeat too: next stays the first receive time.
		before := env.Do(as(apitest.Request{Path: sched})).Map(t)["next"]
		time.Sleep(5 * time.Millisecond)
		run(t, env.Env, []scenario{
			{"repeat serialised again: 205, nothing applied", as(apitest.Request{Method: "PATCH", Path: uri,
				Body: `{ "barks" : { "frequency" : 1.0, "next" : 0 } }`, Headers: second}), 205, nil, nil},
		})
		if after := env.Do(as(apitest.Request{Path: sched})).Map(t)["next"]; after != before {
			t.Fatalf("a repeat serialised again was applied: next %v, then %v", before, after)
		}
		// next 0 fired as the change was answered, once: the repeats did
		// not apply again, and the scheduler finds nothing more due.
		if n, err := env.svc.Tick(context.Background(), ""); err != nil || n != 0 {
			t.Fatalf("scheduled barks left to the scheduler: got %d (%v), want 0", n, err)
		}
		env.drain(t)
		if got := env.barkCount(t, uri); got != 1 {
			t.Errorf("barkCount: got %v, want 1", got)
		}
		sv := env.Do(as(apitest.Request{Path: sched})).Map(t)
		last, _ := time.Parse(time.RFC3339, sv["last"].(string))
		next, _ := time.Parse(time.RFC3339, sv["next"].(string))
		if !next.Equal(last.Add(time.Minute)) {
			t.Errorf("bark-schedule: next %v is not last %v + 1 minute", sv["next"], sv["last"])
		}
		dog = env.Do(as(apitest.Request{Path: uri})).Map(t)
		if p := dog["barks"].(map[string]any)["previous"].([]any); len(p) != 1 || p[0] != sv["last"] {
			t.Errorf("previous: got %v, want [%v]", p, sv["last"])
		}

		// The bark-schedule resource: token makes a repeat harmless.
		post := map[string]any{"token": 42, "next": 0, "frequency": 60}
		run(t, env.Env, []scenario{
			{"POST schedule", as(apitest.Request{Method: "POST", Path: sched, Body: post}), 205, nil, nil},
			{"same token again", as(apitest.Request{Method: "POST", Path: sched, Body: map[string]any{"token": 42, "next": 0, "frequency": 5}}), 205, nil, nil},
			{"token required", as(apitest.Request{Method: "POST", Path: sched, Body: map[string]any{"next": 0, "frequency": 5}}), 400, nil, []string{`"field":"token"`, "is required"}},
			{"token not valid", as(apitest.Request{Method: "POST", Path: sched, Body: map[string]any{"token": []int{1}, "next": 0, "frequency": 5}}), 400, nil, []string{`"field":"token"`, "must be a number or a string"}},
			{"refused frequency", as(apitest.Request{Method: "POST", Path: sched, Body: map[string]any{"token": 43, "next": 0, "frequency": -3}}), 403, nil, []string{"schedule-refused"}},
			{"bob", apitest.Request{Method: "POST", Path: sched, User: "bob", Password: pw, Body: map[string]any{"token": 44, "next": 0, "frequency": 5}}, 403, nil, nil},
			{"GET schedule", as(apitest.Request{Path: sched}), 200, nil, []string{`"frequency":60`}},
		})
		// Token 42 (next 0) fired as it was answered: last is set, next
		// is last + 60 minutes, and the scheduler finds nothing due.
		sv = env.Do(as(apitest.Request{Path: sched})).Map(t)
		last, _ = time.Parse(time.RFC3339, fmt.Sprint(sv["last"]))
		next, _ = time.Parse(time.RFC3339, fmt.Sprint(sv["next"]))
		if last.IsZero() || !next.Equal(last.Add(time.Hour)) {
			t.Errorf("token 42 (next 0): the schedule is %v, want last set and next = last + 60 minutes", sv)
		}
		if n, _ := env.svc.Tick(context.Background(), ""); n != 0 {
			t.Errorf("a tick after token 42 fired %d barks", n)
		}
		run(t, env.Env, []scenario{
			{"DELETE schedule", as(apitest.Request{Method: "DELETE", Path: sched}), 204, nil, nil},
			{"gone", as(apitest.Request{Path: sched}), 404, nil, nil},
			{"DELETE again", as(apitest.Request{Method: "DELETE", Path: sched}), 404, nil, nil},
		})
		dog = env.Do(as(apitest.Request{Path: uri})).Map(t)
		if _, ok := dog["barks"]; ok {
			t.Errorf("a stopped schedule still shows: %v", dog["barks"])
		}
		_ = yard.BarkPending
	})
}

// 100 concurrent barks, synchronous and asynchronous, count exactly 100
// each.
func TestConcurrentBarksCountExactly(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		_, uri := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		for _, async := range []bool{false, true} {
			var wg sync.WaitGroup
			codes := make([]int, 100)
			for i := range 100 {
				wg.Go(func() {
					r := apitest.Request{Method: "POST", Path: uri + "barks", User: "alice", Password: pw}
					if async {
						r.Headers = map[string]string{"Prefer": "respond-async"}
					}
					codes[i] = env.Do(r).StatusCode
				})
			}
			wg.Wait()
			want := 201
			if async {
				want = 202
				env.drain(t)
			}
			for i, c := range codes {
				if c != want {
					t.Fatalf("bark %d: got %d, want %d", i, c, want)
				}
			}
		}
		if got := env.barkCount(t, uri); got != 200 {
			t.Fatalf("barkCount after 100 synchronous and 100 asynchronous concurrent barks: got %v, want 200", got)
		}
	})
}

// v2 writes the same schedule under the name schedule.
func TestScheduleThroughV2(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		id, uri := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		as := func(r apitest.Request) apitest.Request { r.User, r.Password = "alice", pw; return r }
		ius := map[string]string{"If-Unmodified-Since": httpDate(time.Now().Add(time.Second))}
		run(t, env.Env, []scenario{
			{"v2 PATCH needs If-Unmodified-Since", as(apitest.Request{Method: "PATCH", Path: "/v2/dogs/" + id, Body: map[string]any{"schedule": map[string]any{"next": 0, "frequency": 10}}}), 428, nil, nil},
			{"v2 malformed", as(apitest.Request{Method: "PATCH", Path: "/v2/dogs/" + id, Body: map[string]any{"schedule": map[string]any{"next": 0, "frequency": "x"}}, Headers: ius}), 400, nil, []string{`"field":"schedule.frequency"`}},
			{"v2 PATCH schedule", as(apitest.Request{Method: "PATCH", Path: "/v2/dogs/" + id, Body: map[string]any{"schedule": map[string]any{"next": 0, "frequency": 10}}, Headers: ius}), 205, nil, nil},
			{"v2 shows it", as(apitest.Request{Path: "/v2/dogs/" + id}), 200, nil, []string{`"schedule":{`, `"frequency":10`}},
			{"v1 shows it", as(apitest.Request{Path: uri}), 200, nil, []string{`"barks":{`, `"frequency":10`}},
		})
	})
}

// A synchronous email the mail server refuses is 503 with a problem, and
// the task is stored failed; nothing counts.
func TestSyncEmailRefused(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		_, uri := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org", "barkEffect": "email-count"})
		env.smtp.FailNext(1)
		run(t, env.Env, []scenario{
			{"refused", apitest.Request{Method: "POST", Path: uri + "barks", User: "alice", Password: pw}, 503, nil, []string{"could not be delivered"}},
			{"stored failed", apitest.Request{Path: uri + "barks", User: "alice", Password: pw}, 200, nil, []string{`"status":"failed"`, `"total":1`}},
		})
		if got := env.barkCount(t, uri); got != 0 {
			t.Errorf("barkCount: got %v, want 0", got)
		}
	})
}
