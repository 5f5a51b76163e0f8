package httpapi_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

type backupJSON struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	CreatedAt string `json:"createdAt"`
}

// backupEnv is an API whose backups go into dir, keeping keep, with alice
// (a person) and root (an administrator).
func backupEnv(t *testing.T, db *store.DB, keep int) (*apitest.Env, string) {
	dir := filepath.Join(t.TempDir(), "backups")
	env := apitest.Start(t, db, func(d *httpapi.Deps) { d.Backups = &store.BackupDir{DB: db, Dir: dir, Keep: keep} })
	env.CreateUser("alice", pw)
	env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
	return env, dir
}

// backupFiles lists the backups in dir, newest first.
func backupFiles(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := store.Backups(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	return names
}

// TestBackupsAPI holds POST, GET /v1/backups and GET /v1/backups/{name}
// to docs/api.md, "Backups": 201 with Location and a file of mode 0600
// named as serve --backup-every names them; 429 with Retry-After within a
// minute of the newest backup; the list newest first with paging links;
// --backup-keep applied; 401 without credentials, 403 for a person, 404
// for unknown names, names that try to leave the directory and links. On
// PostgreSQL: 409 naming pg_dump and an empty list.
func TestBackupsAPI(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		clock := storetest.NewClock(time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC))
		db.Now = clock.Now
		env, dir := backupEnv(t, db, 3)
		root := func(r apitest.Request) apitest.Request { r.User, r.Password = "root", pw; return r }
		alice := func(r apitest.Request) apitest.Request { r.User, r.Password = "alice", pw; return r }
		post := apitest.Request{Method: "POST", Path: "/v1/backups"}

		run(t, env, []scenario{
			{"no credentials", post, 401, map[string]string{"WWW-Authenticate": ""}, nil},
			{"no credentials, list", apitest.Request{Path: "/v1/backups"}, 401, nil, nil},
			{"a person may not back up", alice(post), 403, nil, []string{"/problems/forbidden"}},
			{"nor list", alice(apitest.Request{Path: "/v1/backups"}), 403, nil, nil},
			{"nor read one", alice(apitest.Request{Path: "/v1/backups/" + store.BackupName(clock.Now())}), 403, nil, nil},
			{"a body with an unknown member", root(apitest.Request{Method: "POST", Path: "/v1/backups", Body: `{"zzz":1}`}), 400, nil, []string{`"field":"zzz"`}},
		})
		if got := backupFiles(t, dir); len(got) != 0 {
			t.Fatalf("refused requests made backups: %v", got)
		}

		if db.Engine() != store.SQLite {
			run(t, env, []scenario{
				{"PostgreSQL: pg_dump's", root(post), 409, nil, []string{"/problems/conflict", "pg_dump"}},
				{"PostgreSQL: an empty list", root(apitest.Request{Path: "/v1/backups"}), 200,
					map[string]string{"Link": `rel="first"`}, []string{`"items":[]`, `"total":0`}},
				{"PostgreSQL: none to read", root(apitest.Request{Path: "/v1/backups/" + store.BackupName(clock.Now())}), 404, nil, nil},
			})
			return
		}

		// Four older backups, as --backup-every would have left them.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		var older []string
		for h := 1; h <= 4; h++ {
			name := store.BackupName(clock.Now().Add(-time.Duration(h) * time.Hour))
			if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", h)), 0o600); err != nil {
				t.Fatal(err)
			}
			older = append(older, name)
		}
		// A link named as a backup is none: not listed, not found.
		link := store.BackupName(clock.Now().Add(-30 * time.Minute))
		if err := os.Symlink(filepath.Join(filepath.Dir(dir), "elsewhere.db"), filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
		run(t, env, []scenario{
			{"a link named as a backup", root(apitest.Request{Path: "/v1/backups/" + link}), 404, nil, nil},
			{"the list, newest first, a page at a time", root(apitest.Request{Path: "/v1/backups?max=2"}), 200,
				map[string]string{"Link": `/v1/backups\?offset=2&max=2>; rel="next"`},
				[]string{`"total":4`, `"items":[{"name":"` + older[0] + `","size":1,"createdAt":"2026-11-25T16:00:00.000Z"},{"name":"` + older[1] + `"`}},
			{"the second page", root(apitest.Request{Path: "/v1/backups?offset=2&max=2"}), 200,
				map[string]string{"Link": `rel="prev"`}, []string{`"items":[{"name":"` + older[2] + `"`, `{"name":"` + older[3] + `","size":4`}},
			{"a bad max", root(apitest.Request{Path: "/v1/backups?max=-1"}), 400, nil, []string{`"field":"max"`}},
			{"an unknown parameter", root(apitest.Request{Path: "/v1/backups?sort=name"}), 400, nil, []string{`"field":"sort"`}},
			{"one", root(apitest.Request{Path: "/v1/backups/" + older[1]}), 200, nil,
				[]string{`{"name":"` + older[1] + `","size":2,"createdAt":"2026-11-25T15:00:00.000Z"}`}},
			{"an unknown name", root(apitest.Request{Path: "/v1/backups/" + store.BackupName(clock.Now().Add(-time.Minute))}), 404, nil, nil},
			{"not a backup's name", root(apitest.Request{Path: "/v1/backups/yard.db"}), 404, nil, nil},
			{"the lock file", root(apitest.Request{Path: "/v1/backups/.lock"}), 404, nil, nil},
			{"dot-dot", root(apitest.Request{Path: "/v1/backups/%2e%2e"}), 404, nil, nil},
			{"out of the directory", root(apitest.Request{Path: "/v1/backups/..%2Fyard.db"}), 404, nil, nil},
			{"out of the directory, a backup's name", root(apitest.Request{Path: "/v1/backups/..%2Fbackups%2F" + older[0]}), 404, nil, nil},
		})

		resp := env.Do(root(post))
		if resp.StatusCode != 201 {
			t.Fatalf("POST: got %d, want 201; %s", resp.StatusCode, resp.Body)
		}
		var b backupJSON
		resp.JSON(t, &b)
		name := store.BackupName(clock.Now())
		if b.Name != name || b.CreatedAt != "2026-11-25T17:00:00.000Z" || b.Size <= 0 {
			t.Fatalf("POST: got %+v, want %s", b, name)
		}
		if loc := resp.Header.Get("Location"); loc != env.URL+"/v1/backups/"+name {
			t.Fatalf("Location: got %q, want %q", loc, env.URL+"/v1/backups/"+name)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != b.Size {
			t.Fatalf("the backup file: %v, %v; want mode 0600 and size %d", fi, err, b.Size)
		}
		// --backup-keep 3: the two oldest are gone.
		if got, want := backupFiles(t, dir), []string{name, older[0], older[1]}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("after the backup: got %v, want %v", got, want)
		}

		clock.Advance(20 * time.Second)
		run(t, env, []scenario{
			{"a second within the minute", root(post), 429, map[string]string{"Retry-After": "^40$"}, []string{"/problems/rate-limited", "every 1m0s"}},
			{"the new one is listed first", root(apitest.Request{Path: "/v1/backups"}), 200, nil,
				[]string{`"total":3`, `"items":[{"name":"` + name + `"`}},
			{"and read", root(apitest.Request{Path: "/v1/backups/" + name}), 200, nil, []string{`"size":` + strconv.FormatInt(b.Size, 10)}},
		})
		clock.Advance(40 * time.Second)
		if resp := env.Do(root(post)); resp.StatusCode != 201 {
			t.Fatalf("POST a minute later: got %d, want 201; %s", resp.StatusCode, resp.Body)
		}
		if got := backupFiles(t, dir); len(got) != 3 || got[0] != store.BackupName(clock.Now()) {
			t.Fatalf("after the second backup: %v", got)
		}
	})
}

// TestBackupsOneAtATime sends POSTs at once: one backup is made; every
// other answer is 409 (one is being taken) or 429 (one was just taken).
func TestBackupsOneAtATime(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	env, dir := backupEnv(t, db, 28)
	const n = 6
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i] = env.Do(apitest.Request{Method: "POST", Path: "/v1/backups", User: "root", Password: pw}).StatusCode
		})
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 409, 429:
		default:
			t.Errorf("status: got %d, want 201, 409 or 429", s)
		}
	}
	if got := backupFiles(t, dir); created != 1 || len(got) != 1 {
		t.Fatalf("got %d created and files %v (statuses %v), want one", created, got, statuses)
	}
}
