package conform

import (
	"cmp"
	"net/http"
	"strings"
	"time"
)

// barkCount reads the dog's barkCount.
func (t *T) barkCount(dog string) float64 {
	return t.Expect(200, "GET", dog, basic(t.owner())).Num("barkCount")
}

// bark posts a bark of the effect to the dog.
func (t *T) bark(dog, effect string, opts ...opt) *Resp {
	opts = append([]opt{basic(t.owner()), jsonBody(map[string]any{"effect": effect})}, opts...)
	return t.Do("POST", dog+"barks", opts...)
}

// barked posts a bark like bark, fails the check unless the answer has
// the status, and returns its Location.
func (t *T) barked(dog, effect string, status int, opts ...opt) string {
	r := t.bark(dog, effect, opts...)
	t.Status(r, status)
	return t.Location(r, "")
}

// waitBark polls the bark task until it answers something other than 200
// with status pending or running, for at most 20 s.
func (t *T) waitBark(loc string) *Resp {
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := t.Do("GET", loc, basic(t.owner()), header("Prefer", "wait=5"))
		st := r.Str("status")
		if r.Status != 200 || (st != "pending" && st != "running") || time.Now().After(deadline) {
			return r
		}
	}
}

func barkChecks() []Check {
	const p, doc = "barks", "docs/barks.md#responses-of-post-v1dogsdog_idbarks"
	return []Check{
		def(p, "record", Must, doc, `POST /v1/dogs/{id}/barks {"effect":"record"}, then GET the Location`,
			"201 with Location of the bark; the bark answers 200 with a timestamp; barkCount grows by 1", func(t *T) {
				dog := t.dog()
				n := t.barkCount(dog)
				loc := t.barked(dog, "record", 201)
				t.Check(strings.HasPrefix(loc, dog+"barks/"), "Location %q is not under %sbarks/", loc, dog)
				g := t.Expect(200, "GET", loc, basic(t.owner()))
				_, err := time.Parse(time.RFC3339, g.Str("timestamp"))
				t.Check(err == nil, "the record's timestamp %q is not RFC 3339", g.Str("timestamp"))
				t.Check(t.barkCount(dog) == n+1, "barkCount %v after a record bark, want %v", t.barkCount(dog), n+1)
			}),
		def(p, "email", Must, doc, `POST …/barks {"effect":"email"} (synchronous)`,
			"200; barkCount unchanged", func(t *T) {
				dog := t.dog()
				n := t.barkCount(dog)
				t.Status(t.bark(dog, "email"), 200)
				t.Check(t.barkCount(dog) == n, "barkCount %v after an email bark, want %v (unchanged)", t.barkCount(dog), n)
			}),
		def(p, "email-count", Must, doc, `POST …/barks {"effect":"email-count"} (synchronous)`,
			"303 with Location = the dog's URI; barkCount grows by 1", func(t *T) {
				dog := t.dog()
				n := t.barkCount(dog)
				r := t.bark(dog, "email-count")
				t.Status(r, 303)
				t.Location(r, t.path(dog))
				t.Check(t.barkCount(dog) == n+1, "barkCount %v, want %v", t.barkCount(dog), n+1)
			}),
		def(p, "async", Must, doc, `POST …/barks {"effect":"record"} with Prefer: respond-async, then poll the Location`,
			"202 with Location of the task and a body linking it; the task ends succeeded and answers 200 with a timestamp", func(t *T) {
				dog := t.dog()
				r := t.bark(dog, "record", header("Prefer", "respond-async"))
				t.Status(r, 202)
				loc := t.Location(r, "")
				t.Check(strings.HasPrefix(loc, dog+"barks/"), "Location %q is not under %sbarks/", loc, dog)
				t.Check(strings.Contains(string(r.Body), loc) || strings.Contains(string(r.Body), t.path(loc)), "the 202 body does not link the task %s", loc)
				g := t.waitBark(loc)
				t.Status(g, 200)
				t.Check(g.Str("timestamp") != "", "the finished async record has no timestamp (status %q)", g.Str("status"))
			}),
		def(p, "async-email-count", Must, doc, `POST …/barks {"effect":"email-count"} with Prefer: respond-async, then poll`,
			"202; once finished the task answers 303 to the dog", func(t *T) {
				dog := t.dog()
				g := t.waitBark(t.barked(dog, "email-count", 202, header("Prefer", "respond-async")))
				t.Status(g, 303)
				t.Location(g, t.path(dog))
			}),
		def(p, "fetch-code", Must, doc, `POST …/barks {"effect":"fetch-code"} without Prefer`,
			"202 with Location of the task: fetch-code is always asynchronous", func(t *T) {
				dog := t.dog()
				loc := t.barked(dog, "fetch-code", 202)
				g := t.Do("GET", loc, basic(t.owner()))
				t.Check(g.Status == 200 || g.Status == 303, "GET of the fetch-code task: %d", g.Status)
				t.Check(g.Str("effect") == "fetch-code", "the task's effect is %q", g.Str("effect"))
			}),
		def(p, "bad-effect", Must, "docs/api.md#http", `POST …/barks {"effect":"howl"}`,
			"400 problem naming effect", func(t *T) {
				t.Problem(t.bark(t.dog(), "howl"), 400, "validation", "effect")
			}),
		def(p, "not-owner", Must, "docs/api.md#dogs", "POST …/barks as another person",
			"403 problem", func(t *T) {
				t.Problem(t.Do("POST", t.dog()+"barks", basic(t.other()), jsonBody(map[string]any{"effect": "record"})), 403, "forbidden")
			}),
		def(p, "delete-record", Must, "docs/barks.md#a-bark-task", "DELETE a finished record bark, then GET it",
			"204, then 404; barkCount unchanged", func(t *T) {
				dog := t.dog()
				loc := t.barked(dog, "record", 201)
				n := t.barkCount(dog)
				t.Expect(204, "DELETE", loc, basic(t.owner()))
				t.Expect(404, "GET", loc, basic(t.owner()))
				t.Check(t.barkCount(dog) == n, "barkCount %v after deleting a record, want %v", t.barkCount(dog), n)
			}),
		def(p, "cancel", Must, "docs/barks.md#a-bark-task", `POST …/barks {"effect":"email-count"} with Prefer: respond-async, DELETE the task at once, then GET it and the dog`,
			"204 and the task canceled with barkCount unchanged; or, when it had already finished, 409 and the task succeeded with barkCount +1", func(t *T) {
				dog := t.dog()
				n := t.barkCount(dog)
				loc := t.barked(dog, "email-count", 202, header("Prefer", "respond-async"))
				d := t.Do("DELETE", loc, basic(t.owner()))
				t.Status(d, 204, 409)
				g := t.waitBark(loc)
				switch d.Status {
				case 204:
					t.Status(g, 200)
					t.Check(g.Str("status") == "canceled", "the cancelled task's status is %q", g.Str("status"))
					t.Check(t.barkCount(dog) == n, "barkCount %v after a cancelled email-count bark, want %v", t.barkCount(dog), n)
				case 409:
					t.Status(g, 303)
					t.Check(t.barkCount(dog) == n+1, "barkCount %v after a finished email-count bark, want %v", t.barkCount(dog), n+1)
				}
			}),
		def(p, "delete-finished", Should, "docs/barks.md#a-bark-task", "DELETE a finished email bark",
			"409 problem (the state does not allow it)", func(t *T) {
				r := t.bark(t.dog(), "email")
				t.Status(r, 200)
				loc := cmp.Or(r.Header.Get("Location"), t.dog()+"barks/"+r.Str("id"))
				t.Problem(t.Do("DELETE", loc, basic(t.owner())), 409, "conflict")
			}),
		def(p, "single-bark", Must, "docs/barks.md#responses-of-post-v1dogsdog_idbarks", "POST /v1/dogs/{id}/bark (dog effect record), then GET /bark",
			"201 with Location of the bark; GET answers {\"timestamp\"} of that bark", func(t *T) {
				dog := t.dog()
				r := t.Expect(201, "POST", dog+"bark", basic(t.owner()))
				loc := t.Location(r, "")
				b := t.Do("GET", loc, basic(t.owner()))
				g := t.Expect(200, "GET", dog+"bark", basic(t.owner()))
				t.Check(g.Str("timestamp") != "" && g.Str("timestamp") == b.Str("timestamp"), "GET /bark timestamp %q, want the last bark's %q", g.Str("timestamp"), b.Str("timestamp"))
			}),
		def(p, "single-bark-delete", Must, "docs/barks.md#responses-of-post-v1dogsdog_idbarks", "DELETE /v1/dogs/{id}/bark",
			"405 with Allow naming GET and POST", func(t *T) {
				r := t.Expect(405, "DELETE", t.dog()+"bark", basic(t.owner()))
				allow := r.Header.Get("Allow")
				t.Check(strings.Contains(allow, "GET") && strings.Contains(allow, "POST"), "Allow %q", allow)
			}),
		def(p, "list", Should, "docs/barks.md#a-bark-task", "GET /v1/dogs/{id}/barks",
			"200, a page of the dog's barks", func(t *T) {
				dog := t.dog()
				t.Status(t.bark(dog, "record"), 201)
				r := t.Expect(200, "GET", dog+"barks", basic(t.owner()))
				t.Check(r.Num("total") >= 1, "total %v, want at least 1", r.JSON()["total"])
			}),
	}
}

// schedulePatch sends the merge patch {"barks":{"next":next,"frequency":freq}}.
func schedulePatch(next any, freq float64) opt {
	type barks struct {
		Next      any     `json:"next"`
		Frequency float64 `json:"frequency"`
	}
	return jsonBody(map[string]barks{"barks": {next, freq}})
}

func scheduleChecks() []Check {
	const p, doc = "schedules", "docs/barks.md#schedules-one-state-three-views"
	date := func() string { return time.Now().UTC().Format(http.TimeFormat) }
	later := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	return []Check{
		def(p, "patch-428", Must, doc, `PATCH /v1/dogs/{id}/ {"barks":{…}} without If-Unmodified-Since`,
			"428 problem", func(t *T) {
				t.Problem(t.Do("PATCH", t.newDog(), basic(t.owner()), schedulePatch(later(time.Hour), 60)), 428, "")
			}),
		def(p, "patch-205", Must, doc, `PATCH {"barks":{"next":0,"frequency":60}} with If-Unmodified-Since, then GET the dog`,
			`205 (next: 0 was resolved), and the dog shows barks with next and frequency 60`, func(t *T) {
				dog := t.newDog()
				t.Expect(205, "PATCH", dog, basic(t.owner()), schedulePatch(0, 60), header("If-Unmodified-Since", date()))
				g := t.Do("GET", dog, basic(t.owner()))
				b, _ := g.JSON()["barks"].(map[string]any)
				t.Check(b != nil && b["frequency"] == float64(60) && b["next"] != nil, "the dog's barks %v, want next and frequency 60", g.JSON()["barks"])
			}),
		def(p, "patch-repeat", Must, doc, "the same schedule PATCH (same If-Unmodified-Since, same body) twice",
			"the same 2xx status both times, and the schedule as after the first", func(t *T) {
				dog := t.newDog()
				d, body := date(), schedulePatch(later(2*time.Hour), 30)
				r1 := t.Do("PATCH", dog, basic(t.owner()), body, header("If-Unmodified-Since", d))
				t.Status(r1, 204, 205)
				r2 := t.Do("PATCH", dog, basic(t.owner()), body, header("If-Unmodified-Since", d))
				t.Status(r2, r1.Status)
			}),
		def(p, "patch-412", Must, doc, "a schedule PATCH with If-Unmodified-Since a day before the dog's last change (another body than the last applied)",
			"412 problem", func(t *T) {
				dog := t.newDog()
				old := time.Now().Add(-24 * time.Hour).UTC().Format(http.TimeFormat)
				t.Problem(t.Do("PATCH", dog, basic(t.owner()), schedulePatch(later(time.Hour), 45), header("If-Unmodified-Since", old)), 412, "precondition-failed")
			}),
		def(p, "patch-refused", Must, doc, `PATCH {"barks":{"next":<an hour ago>,"frequency":60}}`,
			"403 problem explaining why", func(t *T) {
				r := t.Do("PATCH", t.newDog(), basic(t.owner()), schedulePatch(later(-time.Hour), 60), header("If-Unmodified-Since", date()))
				t.Problem(r, 403, "")
				t.Check(r.Str("detail") != "", "the 403 does not say why")
			}),
		def(p, "resource-205", Must, doc, `POST /v1/dogs/{id}/bark-schedule {"token","next","frequency"}, then GET it`,
			`205; GET answers {"last","next","frequency"} with the schedule`, func(t *T) {
				dog := t.newDog()
				t.Expect(205, "POST", dog+"bark-schedule", basic(t.owner()), jsonBody(map[string]any{"token": 1, "next": later(time.Hour), "frequency": 60}))
				g := t.Expect(200, "GET", dog+"bark-schedule", basic(t.owner()))
				_, hasLast := g.JSON()["last"]
				t.Check(hasLast && g.Num("frequency") == 60 && g.Str("next") != "", "the schedule %s, want last, next and frequency 60", g.Body)
			}),
		def(p, "token-once", Must, doc, `POST bark-schedule {"token":T,"next":0,"frequency":60}, wait for the bark, POST the same token again`,
			"205 both times; the dog barked once (barkCount +1, not +2); GET answers next = last + 60 min", func(t *T) {
				dog := t.newDog()
				body := map[string]any{"token": 7, "next": 0, "frequency": 60}
				t.Expect(205, "POST", dog+"bark-schedule", basic(t.owner()), jsonBody(body))
				deadline := time.Now().Add(15 * time.Second)
				for t.barkCount(dog) < 1 && time.Now().Before(deadline) {
					time.Sleep(200 * time.Millisecond)
				}
				t.Check(t.barkCount(dog) == 1, "barkCount %v 15 s after a schedule with next 0, want 1", t.barkCount(dog))
				t.Expect(205, "POST", dog+"bark-schedule", basic(t.owner()), jsonBody(body))
				time.Sleep(1500 * time.Millisecond)
				t.Check(t.barkCount(dog) == 1, "barkCount %v after the token was repeated, want 1", t.barkCount(dog))
				g := t.Do("GET", dog+"bark-schedule", basic(t.owner()))
				last, e1 := time.Parse(time.RFC3339, g.Str("last"))
				next, e2 := time.Parse(time.RFC3339, g.Str("next"))
				t.Check(e1 == nil && e2 == nil && next.Sub(last) == time.Hour, "last %q next %q, want next = last + 60 min", g.Str("last"), g.Str("next"))
			}),
		def(p, "token-no-change", Must, doc, `POST bark-schedule token T (next in 1 h, 60 min), then token T again with other values`,
			"205 both times; the schedule keeps the first values", func(t *T) {
				dog := t.newDog()
				t.Expect(205, "POST", dog+"bark-schedule", basic(t.owner()), jsonBody(map[string]any{"token": 9, "next": later(time.Hour), "frequency": 60}))
				g1 := t.Do("GET", dog+"bark-schedule", basic(t.owner()))
				t.Expect(205, "POST", dog+"bark-schedule", basic(t.owner()), jsonBody(map[string]any{"token": 9, "next": later(3 * time.Hour), "frequency": 15}))
				g2 := t.Do("GET", dog+"bark-schedule", basic(t.owner()))
				t.Check(g2.Num("frequency") == 60 && g2.Str("next") == g1.Str("next"), "after a repeated token the schedule is %s, want %s", g2.Body, g1.Body)
			}),
		def(p, "delete", Must, doc, "DELETE /v1/dogs/{id}/bark-schedule, then GET the dog and the schedule",
			"204; the dog has no barks member; the schedule answers 404", func(t *T) {
				dog := t.newDog()
				t.Expect(205, "POST", dog+"bark-schedule", basic(t.owner()), jsonBody(map[string]any{"token": 1, "next": later(time.Hour), "frequency": 60}))
				t.Expect(204, "DELETE", dog+"bark-schedule", basic(t.owner()))
				g := t.Do("GET", dog, basic(t.owner()))
				_, has := g.JSON()["barks"]
				t.Check(!has, "the dog still shows barks %v", g.JSON()["barks"])
				t.Expect(404, "GET", dog+"bark-schedule", basic(t.owner()))
			}),
	}
}
