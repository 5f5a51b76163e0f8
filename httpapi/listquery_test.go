package httpapi_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/internal/sigbase"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
	"github.com/yard-api/yard/webhooks"
)

// TestListQueryRule reads every list of the API with the same bad queries
// and wants the same answer from each (docs/api.md, "Query parameters of
// lists"): names are case-sensitive (MAX is unknown), an unknown
// parameter is 400, a repeated or non-numeric max is 400, each with the
// same problem type, title, detail and field error. The signed-request
// variables are never unknown.
func TestListQueryRule(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, "sqlite")
	var kit *auth.Kit
	env := apitest.Start(t, db, apitest.WithAuthKit(t, db, &kit, nil),
		func(d *httpapi.Deps) {
			d.Webhooks = webhooks.PolicyChecker{}
			d.Backups = &store.BackupDir{DB: db, Dir: filepath.Join(t.TempDir(), "backups")}
		})
	env.CreateUser("alice", pw)
	env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
	create := func(user, path, body string) string {
		t.Helper()
		resp := env.Do(apitest.Request{Method: "POST", Path: path, Body: body, User: user, Password: pw})
		if resp.StatusCode != 201 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, resp.Body)
		}
		loc := strings.TrimPrefix(resp.Header.Get("Location"), env.URL)
		return loc[strings.LastIndex(strings.TrimSuffix(loc, "/"), "/")+1:]
	}
	dog := strings.TrimSuffix(create("alice", "/v1/dogs", `{"name":"Rex","email":"rex@example.org"}`), "/")
	garage := create("root", "/garages", `{"name":"North","state":"CA"}`)
	search := create("alice", "/searches", `{"color":"red","name":"reds"}`)
	hook := create("alice", "/v1/webhooks", `{"url":"https://hooks.example.org/h"}`)

	lists := []struct{ path, user string }{
		{"/v1/people", "root"},
		{"/v1/dogs", "alice"},
		{"/v2/dogs", "alice"},
		{"/v1/dogs/" + dog + "/barks", "alice"},
		{"/v1/events", "alice"},
		{"/v1/webhooks", "alice"},
		{"/v1/webhooks/" + hook + "/deliveries", "alice"},
		{"/cars", ""},
		{"/cars/search", ""},
		{"/cars/search/all", ""},
		{"/cars/search/by-parameters", ""},
		{"/cars/search/by-vendor", ""},
		{"/garages", ""},
		{"/garage/" + garage + "/cars", ""},
		{"/garages/" + garage + "/cars", ""},
		{"/searches", "root"},
		{"/searches/" + search, ""},
		{"/search/reds", ""},
		{"/search/color=red", ""},
		{"/orders", "alice"},
		{"/oauth/consumers", "root"},
		{"/oauth/authorizations", "alice"},
		{"/v1/backups", "root"},
	}
	bad := []struct{ query, field, message string }{
		{"MAX=abc", "MAX", "unknown parameter"},
		{"max=abc", "max", "must be a whole number, 0 or more"},
		{"max=1&max=2", "max", "given more than once"},
		{"zzz=1", "zzz", "unknown parameter"},
	}
	for _, l := range lists {
		for _, b := range bad {
			t.Run(l.path+"?"+b.query, func(t *testing.T) {
				resp := env.Do(apitest.Request{Path: l.path + "?" + b.query, User: l.user, Password: pw})
				var p struct {
					Type, Title, Detail string
					Status              int
					Errors              []yard.FieldError
				}
				resp.JSON(t, &p)
				want := []yard.FieldError{{Field: b.field, Message: b.message}}
				detail := fmt.Sprintf("Bad query parameter %q: %s.", b.field, b.message)
				if resp.StatusCode != 400 || p.Status != 400 || p.Type != env.URL+"/problems/validation" || p.Title != "Invalid request" ||
					p.Detail != detail || !slices.Equal(p.Errors, want) {
					t.Fatalf("got %d %s\nwant 400 validation %q %v", resp.StatusCode, resp.Body, detail, want)
				}
			})
		}
		t.Run(l.path+"?max=1", func(t *testing.T) {
			if resp := env.Do(apitest.Request{Path: l.path + "?max=1", User: l.user, Password: pw}); resp.StatusCode != 200 {
				t.Fatalf("got %d %s, want 200", resp.StatusCode, resp.Body)
			}
		})
	}

	// A signed request's variables belong to the scheme, on every list.
	key := env.Do(apitest.Request{Method: "POST", Path: "/apikeys", User: "root", Password: pw}).Map(t)
	apiKey, secret := key["apiKey"].(string), key["secret"].(string)
	now := kit.Now().Unix()
	for i, l := range lists {
		ts := strconv.FormatInt(now+int64(i), 10) // a signature is used once
		pairs := [][2]string{{"max", "1"}, {"timestamp", ts}, {"apiKey", apiKey}}
		path := l.path
		sig := sigbase.Sign([]byte(secret), sigbase.CanonicalString(path, pairs))
		resp := env.Do(apitest.Request{Path: path + "?max=1&timestamp=" + ts + "&apiKey=" + apiKey + "&signature=" + sig})
		if resp.StatusCode != 200 {
			t.Errorf("signed GET %s: %d %s, want 200", path, resp.StatusCode, resp.Body)
		}
	}
}
