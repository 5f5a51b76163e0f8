package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestCodeURLPolicy: every codeUrl that would let a fetch reach inside the
// machine, or that carries user info, is 400 naming codeUrl when written
// (POST, PUT, PATCH, v1 and v2), and nothing is stored.
func TestCodeURLPolicy(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		inside, _ := localRepo(t, env.repos)
		outside, _ := localRepo(t, t.TempDir())
		dogID, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": inside})
		refused := []string{
			outside,
			"file:///etc",
			"file://" + env.repos + "/../x",
			"https://127.0.0.1/x.git",
			"https://[::1]/x.git",
			"https://[::ffff:127.0.0.1]/x.git",
			"https://2130706433/x.git",
			"https://0x7f.1/x.git",
			"https://017700000001/x.git",
			"https://127.1/x.git",
			"https://169.254.169.254/latest/meta-data",
			"https://10.0.0.1/x.git",
			"https://192.168.1.1/x.git",
			"https://100.64.0.1/x.git",
			"https://[fe80::1]/x.git",
			"https://[fc00::1]/x.git",
			"https://[ff02::1]/x.git",
			"https://0.0.0.0/x.git",
			"https://%31%32%37.0.0.1/x.git",
			"https://[fe80::1%25eth0]/x.git",
			"https://LOCALHOST./x.git",
			"https://localhost/x.git",
			"https://git.localhost/x.git",
			"ssh://127.0.0.1/x.git",
			"git@10.1.2.3:x.git",
			"https://user:secret@example.org/x.git",
			"https://token@example.org/x.git",
			"ssh://git:secret@example.org/x.git",
			"https://example.org/a b",
			"https://example.org/-x",
		}
		for _, u := range refused {
			t.Run(u, func(t *testing.T) {
				for _, req := range []apitest.Request{
					{Method: "PATCH", Path: dogURI, Body: map[string]any{"codeUrl": u}},
					{Method: "PATCH", Path: "/v2/dogs/" + dogID, Body: map[string]any{"codeUrl": u}},
					{Method: "POST", Path: "/v1/dogs", Body: map[string]any{"name": "Fido", "email": "fido@example.org", "codeUrl": u}},
					{Method: "PUT", Path: "/v1/dogs/fido-put/", Body: map[string]any{"name": "Fido", "email": "fido@example.org", "codeUrl": u}},
					{Method: "PUT", Path: dogURI, Body: map[string]any{"name": "Rex", "email": "rex@example.org", "codeUrl": u}},
				} {
					req.User, req.Password = "alice", pw
					resp := env.Do(req)
					if resp.StatusCode != 400 || !strings.Contains(string(resp.Body), `"field":"codeUrl"`) {
						t.Errorf("%s %s: got %d %s, want 400 naming codeUrl", req.Method, req.Path, resp.StatusCode, resp.Body)
					}
					if strings.Contains(string(resp.Body), "secret") {
						t.Errorf("%s %s: the problem shows the password: %s", req.Method, req.Path, resp.Body)
					}
				}
				got := env.Do(apitest.Request{Path: dogURI, User: "alice", Password: pw}).Map(t)["codeUrl"]
				if got != inside {
					t.Errorf("codeUrl after refusals: got %v, want %q", got, inside)
				}
				if resp := env.Do(apitest.Request{Path: "/v1/dogs/fido-put/", User: "alice", Password: pw}); resp.StatusCode != 404 {
					t.Errorf("a refused PUT created the dog: %d", resp.StatusCode)
				}
			})
		}
		list := env.Do(apitest.Request{Path: "/v1/dogs", User: "alice", Password: pw})
		if n := strings.Count(string(list.Body), `"id":`); n != 1 {
			t.Errorf("dogs after refused creates: got %d, want 1: %s", n, list.Body)
		}
		// Allowed forms are still accepted.
		for _, u := range []string{"https://example.org/x.git", "ssh://git@example.org/x.git", "git@example.org:team/x.git", inside} {
			resp := env.Do(apitest.Request{Method: "PATCH", Path: dogURI, User: "alice", Password: pw, Body: map[string]any{"codeUrl": u}})
			if resp.StatusCode != 204 {
				t.Errorf("PATCH codeUrl %q: got %d %s, want 204", u, resp.StatusCode, resp.Body)
			}
		}
	})
}

// TestStoredCredentialsNeverShown: a codeUrl with user info stored before
// such values were refused is shown without it, in both versions.
func TestStoredCredentialsNeverShown(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := startBarks(t, db)
		env.CreateUser("alice", pw)
		dogID, dogURI := env.dog(t, "alice", map[string]any{"name": "Rex", "email": "rex@example.org"})
		err := db.WithTx(context.Background(), func(tx *store.Tx) error {
			_, err := tx.ExecContext(context.Background(), `UPDATE dogs SET code_url = $1 WHERE id = $2`, "https://bob:hunter2@example.org/rex.git", dogID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{dogURI, "/v2/dogs/" + dogID, "/v1/dogs", "/v2/dogs"} {
			resp := env.Do(apitest.Request{Path: path, User: "alice", Password: pw})
			if resp.StatusCode != 200 || strings.Contains(string(resp.Body), "hunter2") || strings.Contains(string(resp.Body), "bob:") {
				t.Errorf("GET %s: got %d %s, want 200 without the credentials", path, resp.StatusCode, resp.Body)
			}
			if !strings.Contains(string(resp.Body), `"codeUrl":"https://example.org/rex.git"`) {
				t.Errorf("GET %s: codeUrl not shown without its credentials: %s", path, resp.Body)
			}
		}
	})
}
