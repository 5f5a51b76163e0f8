package jobs_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/notify/smtptest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// newClock is the settable clock the store and the test share.
func newClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

type fixture struct {
	db    *store.DB
	owner *yard.User
	dog   *yard.Dog
	data  string
	mails *notify.MailOutbox
	texts *notify.TextOutbox
}

func setup(t *testing.T, db *store.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	owner := &yard.User{Name: "alice", Email: "alice@example.org", Phone: "+14155550100", Roles: []string{yard.RoleUser}}
	if err := db.CreateUser(ctx, owner, nil); err != nil {
		t.Fatal(err)
	}
	dog := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: owner.ID}
	if err := db.CreateDog(ctx, dog); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	return &fixture{db: db, owner: owner, dog: dog, data: data,
		mails: &notify.MailOutbox{Dir: filepath.Join(data, "outbox", "mail")},
		texts: &notify.TextOutbox{Dir: filepath.Join(data, "outbox", "sms")}}
}

// testPolicy lets fetches read the tests' repositories (under the
// temporary directory) and run operator commands "from" example.org
// without a network.
var testPolicy = &fetch.Policy{AllowDirs: []string{os.TempDir(), "/nonexistent"}, AllowHosts: []string{"example.org"}}

func (f *fixture) service(db *store.DB) *jobs.Service {
	return jobs.New(jobs.Config{DB: db, Workers: 4, Poll: 20 * time.Millisecond, Lease: 5 * time.Second, Heartbeat: 50 * time.Millisecond,
		Backoff: func(int) time.Duration { return time.Minute },
		Effects: &jobs.Effects{Mailer: f.mails, Texter: f.texts, Fetcher: &fetch.Runner{Timeout: time.Minute, Policy: testPolicy},
			Users: db, DataDir: f.data, From: "yard@yard.test", Domain: "yard.test"}})
}

func (f *fixture) barkCount(t *testing.T) int64 {
	t.Helper()
	d, err := f.db.FindDogByID(context.Background(), f.dog.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d.BarkCount
}

// drain runs due tasks until none is left.
func drain(t *testing.T, s *jobs.Service) int {
	t.Helper()
	n := 0
	for {
		ran, err := s.RunOne(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return n
		}
		n++
	}
}

func TestSyncBarksCountExactly(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		s := f.service(db)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for i := range 100 {
			effect := yard.EffectRecord
			if i%4 == 0 {
				effect = yard.EffectEmailCount
			}
			wg.Go(func() {
				if _, err := s.Bark(context.Background(), f.dog, effect, false); err != nil {
					failed.Add(1)
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := f.barkCount(t); got != 100 {
			t.Fatalf("barkCount after 100 concurrent barks: got %d, want 100", got)
		}
		entries, _ := os.ReadDir(f.mails.Dir)
		if len(entries) != 25 {
			t.Errorf("outbox holds %d mails, want 25", len(entries))
		}
		// email does not count.
		if _, err := s.Bark(context.Background(), f.dog, yard.EffectEmail, false); err != nil {
			t.Fatal(err)
		}
		if got := f.barkCount(t); got != 100 {
			t.Errorf("email changed barkCount to %d", got)
		}
	})
}

func TestAsyncBarksRunOnce(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		s := f.service(db)
		ctx := context.Background()
		var ids []string
		for range 30 {
			b, err := s.Bark(ctx, f.dog, yard.EffectRecord, true)
			if err != nil {
				t.Fatal(err)
			}
			if b.Status != yard.BarkPending {
				t.Fatalf("status: got %s, want pending", b.Status)
			}
			ids = append(ids, b.ID)
		}
		if f.barkCount(t) != 0 {
			t.Fatal("async barks counted before they ran")
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { s.Run(runCtx); close(done) }()
		waitFor(t, func() bool { return f.barkCount(t) == 30 })
		stop()
		<-done
		for _, id := range ids {
			b, err := db.FindBark(ctx, f.dog.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if b.Status != yard.BarkSucceeded || b.Attempts != 1 || b.Timestamp.IsZero() || !b.DogChanged {
				t.Errorf("bark %s: got %+v", id, b)
			}
		}
		if got := f.barkCount(t); got != 30 {
			t.Errorf("barkCount: got %d, want 30", got)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A task whose process died (claimed, never finished) is taken again once
// its lease expires, and its store effect happens once.
func TestExpiredLeaseIsTakenAgain(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		db.Now = clk.Now
		f := setup(t, db)
		s := f.service(db)
		ctx := context.Background()
		b, err := s.Bark(ctx, f.dog, yard.EffectEmailCount, true)
		if err != nil {
			t.Fatal(err)
		}
		dead, token, err := db.ClaimTaskOf(ctx, "dead-process", 30*time.Second, yard.ClaimFilter{})
		if err != nil || dead == nil || dead.ID != b.ID {
			t.Fatalf("claim: %v %v", dead, err)
		}
		if n := drain(t, s); n != 0 {
			t.Fatalf("a leased task was taken %d times before its lease expired", n)
		}
		clk.Advance(31 * time.Second)
		if n := drain(t, s); n != 1 {
			t.Fatalf("tasks run after the lease expired: got %d, want 1", n)
		}
		// The dead worker coming back cannot apply its effect again.
		if err := db.CompleteTask(ctx, dead, token, yard.TaskResult{}); err != yard.ErrLeaseLost {
			t.Fatalf("stale completion: got %v, want ErrLeaseLost", err)
		}
		got, _ := db.FindBark(ctx, f.dog.ID, b.ID)
		if got.Status != yard.BarkSucceeded || got.Attempts != 2 {
			t.Errorf("bark: got status %s after %d attempts", got.Status, got.Attempts)
		}
		if c := f.barkCount(t); c != 1 {
			t.Errorf("barkCount: got %d, want 1", c)
		}
		if _, err := os.Stat(filepath.Join(f.mails.Dir, s.Effects.MessageID(b.ID)+".eml")); err != nil {
			t.Errorf("mail not in the outbox: %v", err)
		}
	})
}

// gitRepo makes a repository with one commit; it returns its file:// URL
// and the commit id.
func gitRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet"}, {"commit", "--quiet", "--allow-empty", "-m", "first"}} {
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

// fetch-code retries a temporary SMS failure with back-off, sending the
// same idempotency key, and stores the new codeRevision once.
func TestFetchCodeRetriesWithBackoff(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		db.Now = clk.Now
		f := setup(t, db)
		url, head := gitRepo(t)
		ctx := context.Background()
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var keys []string
		fail := true
		sms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, r.Header.Get("I-Twilio-Idempotency-Token"))
			if fail {
				fail = false
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		defer sms.Close()
		api, err := notify.ParseSMSURL(strings.Replace(sms.URL, "http://", "http://AC1:tok@", 1) + "?from=%2B15550001111")
		if err != nil {
			t.Fatal(err)
		}
		s := f.service(db)
		s.Effects.Texter = api
		b, err := s.Bark(ctx, f.dog, yard.EffectFetchCode, false) // fetch-code is always async
		if err != nil || !b.Async {
			t.Fatalf("bark: %+v %v", b, err)
		}
		if n := drain(t, s); n != 1 {
			t.Fatalf("ran %d tasks, want 1", n)
		}
		got, _ := db.FindBark(ctx, f.dog.ID, b.ID)
		if got.Status != yard.BarkPending || got.Error == "" {
			t.Fatalf("after a temporary failure: got %s (%q), want pending with the error", got.Status, got.Error)
		}
		if n := drain(t, s); n != 0 {
			t.Fatal("the retry ran before its back-off")
		}
		clk.Advance(61 * time.Second)
		if n := drain(t, s); n != 1 {
			t.Fatalf("retry: ran %d tasks, want 1", n)
		}
		got, _ = db.FindBark(ctx, f.dog.ID, b.ID)
		if got.Status != yard.BarkSucceeded || !got.DogChanged || got.Attempts != 2 {
			t.Fatalf("after retry: got %+v", got)
		}
		d, _ := db.FindDogByID(ctx, f.dog.ID)
		if d.CodeRevision != head {
			t.Errorf("codeRevision: got %q, want %q", d.CodeRevision, head)
		}
		if len(keys) != 2 || keys[0] != keys[1] || keys[0] != "bark-"+b.ID {
			t.Errorf("idempotency keys: got %v, want twice bark-%s", keys, b.ID)
		}
		if !strings.Contains(got.Output, head) {
			t.Errorf("output: %q", got.Output)
		}
		// Fetching again without a new commit leaves the dog unchanged.
		b2, _ := s.Bark(ctx, f.dog, yard.EffectFetchCode, true)
		drain(t, s)
		got, _ = db.FindBark(ctx, f.dog.ID, b2.ID)
		if got.Status != yard.BarkSucceeded || got.DogChanged {
			t.Errorf("second fetch: got %+v", got)
		}
	})
}

func TestPermanentFailure(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		s := f.service(db)
		ctx := context.Background()
		url := "file:///nonexistent/repository"
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		b, _ := s.Bark(ctx, f.dog, yard.EffectFetchCode, true)
		drain(t, s)
		got, _ := db.FindBark(ctx, f.dog.ID, b.ID)
		if got.Status != yard.BarkFailed || got.Error != string(fetch.NotFound) || got.Output != "" {
			t.Errorf("got %+v, want failed with error %q and no raw output", got, fetch.NotFound)
		}
		if d, _ := db.FindDogByID(ctx, f.dog.ID); d.CodeRevision != "" {
			t.Errorf("codeRevision changed to %q", d.CodeRevision)
		}
	})
}

// A running task stops when it is canceled through the store, as a DELETE
// reaching another process does, and nothing of its effect is stored.
func TestCancelRunningFromAnotherProcess(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		url := "https://example.org/rex.git"
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		s := f.service(db)
		marker := filepath.Join(t.TempDir(), "started")
		s.Effects.Fetcher = &fetch.Runner{Command: []string{"sh", "-c", "touch " + marker + "; sleep 30"}, Policy: testPolicy}
		b, _ := s.Bark(ctx, f.dog, yard.EffectFetchCode, true)
		done := make(chan error, 1)
		start := time.Now()
		go func() { _, err := s.RunOne(ctx); done <- err }()
		waitFor(t, func() bool { _, err := os.Stat(marker); return err == nil })
		// The other process: its own service over the same store.
		other := f.service(db)
		if err := other.Cancel(ctx, f.dog.ID, b.ID); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the running task did not stop")
		}
		if time.Since(start) > 15*time.Second {
			t.Error("the task ran on after the cancel")
		}
		got, _ := db.FindBark(ctx, f.dog.ID, b.ID)
		if got.Status != yard.BarkCanceled {
			t.Errorf("status: got %s, want canceled", got.Status)
		}
		if entries, _ := os.ReadDir(f.texts.Dir); len(entries) != 0 {
			t.Error("a text message was sent for a canceled bark")
		}
		// Finished non-record tasks cannot be deleted.
		if err := other.Cancel(ctx, f.dog.ID, b.ID); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Errorf("second cancel: got %v, want conflict", err)
		}
	})
}

func TestCancelAndDeleteRules(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		s := f.service(db)
		ctx := context.Background()
		pending, _ := s.Bark(ctx, f.dog, yard.EffectRecord, true)
		if err := s.Cancel(ctx, f.dog.ID, pending.ID); err != nil {
			t.Fatal(err)
		}
		if drain(t, s) != 0 || f.barkCount(t) != 0 {
			t.Fatal("a canceled task ran")
		}
		rec, _ := s.Bark(ctx, f.dog, yard.EffectRecord, false)
		if err := s.Cancel(ctx, f.dog.ID, rec.ID); err != nil {
			t.Fatalf("delete record: %v", err)
		}
		if _, err := db.FindBark(ctx, f.dog.ID, rec.ID); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("deleted record: got %v", err)
		}
		if f.barkCount(t) != 1 {
			t.Errorf("deleting a record changed barkCount to %d", f.barkCount(t))
		}
		mail, _ := s.Bark(ctx, f.dog, yard.EffectEmail, false)
		if err := s.Cancel(ctx, f.dog.ID, mail.ID); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Errorf("delete finished email: got %v, want conflict", err)
		}
		if _, err := s.Bark(ctx, f.dog, "howl", false); yard.ErrorCode(err) != yard.EINVALID {
			t.Errorf("unknown effect: got %v", err)
		}
	})
}

// Two processes on one PostgreSQL run every task exactly once.
func TestTwoProcessesOnePostgres(t *testing.T) {
	dsn := storetest.DSN(t, store.Postgres)
	ctx := context.Background()
	open := func() *store.DB {
		db := storetest.OpenDSN(t, dsn)
		return db
	}
	db1, db2 := open(), open()
	f := setup(t, db1)
	mails := smtptest.Start(t, smtptest.Options{})
	mailer, _ := notify.ParseSMTPURL("smtp://" + mails.Addr)
	mailer.TLSConfig = &tls.Config{RootCAs: mails.Roots}
	s1, s2 := f.service(db1), f.service(db2)
	s1.Effects.Mailer, s2.Effects.Mailer = mailer, mailer
	const n = 120
	var ids []string
	for i := range n {
		effect := yard.EffectRecord
		if i%6 == 0 {
			effect = yard.EffectEmailCount
		}
		b, err := s1.Bark(ctx, f.dog, effect, true)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s1.Run(runCtx) })
	wg.Go(func() { s2.Run(runCtx) })
	// Every task ends succeeded; none runs twice after that.
	waitFor(t, func() bool {
		var left int
		err := db1.Read().QueryRow(`SELECT COUNT(*) FROM tasks WHERE status <> 'succeeded'`).Scan(&left)
		return err == nil && left == 0
	})
	stop()
	wg.Wait()
	if got := f.barkCount(t); got != n {
		t.Fatalf("barkCount: got %d, want %d", got, n)
	}
	owners := map[string]bool{}
	for _, id := range ids {
		b, _ := db1.FindBark(ctx, f.dog.ID, id)
		if b.Status != yard.BarkSucceeded || b.Attempts != 1 {
			t.Errorf("bark %s: status %s, attempts %d", id, b.Status, b.Attempts)
		}
	}
	var lease string
	rows, _ := db1.Read().Query(`SELECT DISTINCT lease_owner FROM tasks`)
	for rows.Next() {
		rows.Scan(&lease)
		owners[lease] = true
	}
	rows.Close()
	if len(owners) < 2 {
		t.Logf("only one process took tasks: %v", owners)
	}
	seen := map[string]int{}
	for _, m := range mails.Messages() {
		seen[m.Header().Get("Message-Id")]++
	}
	if len(seen) != n/6 {
		t.Errorf("distinct mails: got %d, want %d", len(seen), n/6)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("mail %s sent %d times", id, c)
		}
	}
}

// Scheduled slots fire once each, across two schedulers sharing the store,
// and a slot missed during downtime fires once.
func TestScheduleFiresEachSlotOnce(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		db.Now = clk.Now
		f := setup(t, db)
		ctx := context.Background()
		start := clk.Now().Add(time.Minute)
		applied, err := db.SetScheduleByToken(ctx, f.dog.ID, "1", yard.ScheduleChange{Next: start, Frequency: 5}, clk.Now())
		if err != nil || !applied {
			t.Fatalf("set schedule: %v %v", applied, err)
		}
		again, err := db.SetScheduleByToken(ctx, f.dog.ID, "1", yard.ScheduleChange{Next: start, Frequency: 5}, clk.Now())
		if err != nil || again {
			t.Fatalf("repeated token: applied %v, %v", again, err)
		}
		s1, s2 := f.service(db), f.service(db)
		tick := func() int {
			var wg sync.WaitGroup
			var total atomic.Int32
			for _, s := range []*jobs.Service{s1, s2} {
				wg.Go(func() {
					n, err := s.Tick(ctx, "")
					if err != nil {
						t.Error(err)
					}
					total.Add(int32(n))
				})
			}
			wg.Wait()
			return int(total.Load())
		}
		if n := tick(); n != 0 {
			t.Fatalf("fired %d barks before the first slot", n)
		}
		clk.Advance(time.Minute)
		if n := tick(); n != 1 {
			t.Fatalf("first slot: fired %d, want 1", n)
		}
		if n := tick(); n != 0 {
			t.Fatalf("first slot again: fired %d, want 0", n)
		}
		drain(t, s1)
		// Downtime: 47 minutes pass, nine slots are missed; one bark fires.
		clk.Advance(47 * time.Minute)
		if n := tick(); n != 1 {
			t.Fatalf("after downtime: fired %d, want 1", n)
		}
		drain(t, s2)
		if c := f.barkCount(t); c != 2 {
			t.Errorf("barkCount: got %d, want 2", c)
		}
		sc, err := db.FindSchedule(ctx, f.dog.ID)
		if err != nil || sc == nil {
			t.Fatalf("schedule: %v %v", sc, err)
		}
		wantLast := start.Add(45 * time.Minute)
		if !sc.Last.Equal(wantLast) || !sc.Next.Equal(wantLast.Add(5*time.Minute)) {
			t.Errorf("schedule: last %s next %s, want %s and 5 minutes later", sc.Last, sc.Next, wantLast)
		}
		if len(sc.Previous) != 2 || !sc.Previous[0].Equal(wantLast) || !sc.Previous[1].Equal(start) {
			t.Errorf("previous: got %v", sc.Previous)
		}
		if err := db.StopSchedule(ctx, f.dog.ID); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		if n := tick(); n != 0 {
			t.Errorf("a stopped schedule fired %d barks", n)
		}
		if err := db.StopSchedule(ctx, f.dog.ID); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("stop again: got %v", err)
		}
	})
}

func TestBackoffGrows(t *testing.T) {
	prev := time.Duration(0)
	for a := 1; a <= 6; a++ {
		d := jobs.Backoff(a)
		base := time.Second << (a - 1)
		if d < base*8/10 || d > base*12/10 {
			t.Errorf("attempt %d: %s not within 20%% of %s", a, d, base)
		}
		if a > 2 && d <= prev/2 {
			t.Errorf("attempt %d: %s does not grow from %s", a, d, prev)
		}
		prev = d
	}
	if d := jobs.Backoff(40); d > 6*time.Minute {
		t.Errorf("back-off not capped: %s", d)
	}
	_ = fmt.Sprint
}

// Schedule changes and firing at the same time neither deadlock nor fail.
func TestScheduleChangesWhileFiring(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clk := newClock()
		db.Now = clk.Now
		f := setup(t, db)
		ctx := context.Background()
		s1, s2 := f.service(db), f.service(db)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, s := range []*jobs.Service{s1, s2} {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.Tick(ctx, ""); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for i := range 60 {
			clk.Advance(time.Minute)
			if _, err := db.SetScheduleByToken(ctx, f.dog.ID, fmt.Sprint(i), yard.ScheduleChange{Next: clk.Now(), Frequency: 1}, clk.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{}); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
	})
}

// At shutdown a running task is handed back: pending again, the attempt not
// counted, and the next process runs it.
func TestShutdownHandsRunningTaskBack(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		url := "https://example.org/rex.git"
		if _, err := db.UpdateDog(ctx, f.dog.ID, yard.DogUpdate{CodeURL: &url}); err != nil {
			t.Fatal(err)
		}
		s := f.service(db)
		marker := filepath.Join(t.TempDir(), "started")
		s.Effects.Fetcher = &fetch.Runner{Command: []string{"sh", "-c", "touch " + marker + "; sleep 30"}, Policy: testPolicy}
		b, _ := s.Bark(ctx, f.dog, yard.EffectFetchCode, true)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { s.Run(runCtx); close(done) }()
		waitFor(t, func() bool { _, err := os.Stat(marker); return err == nil })
		stop()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
		got, _ := db.FindBark(ctx, f.dog.ID, b.ID)
		if got.Status != yard.BarkPending || got.Attempts != 0 {
			t.Fatalf("after shutdown: status %s, attempts %d; want pending, 0", got.Status, got.Attempts)
		}
		next := f.service(db)
		next.Effects.Fetcher = &fetch.Runner{Command: []string{"true"}, Policy: testPolicy}
		if n := drain(t, next); n != 1 {
			t.Fatalf("the next process ran %d tasks, want 1", n)
		}
		if got, _ := db.FindBark(ctx, f.dog.ID, b.ID); got.Status != yard.BarkSucceeded || got.Attempts != 1 {
			t.Errorf("after the next process: %s, %d attempts", got.Status, got.Attempts)
		}
	})
}
