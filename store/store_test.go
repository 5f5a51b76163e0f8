package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func mustUser(t *testing.T, db *store.DB, name string, roles ...string) *yard.User {
	t.Helper()
	if len(roles) == 0 {
		roles = []string{yard.RoleUser}
	}
	u := &yard.User{Name: name, Email: name + "@example.org", Roles: roles}
	if err := db.CreateUser(context.Background(), u, &yard.Credentials{PasswordHash: "x"}); err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return u
}

func TestUsers(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice", yard.RoleAdmin, yard.RoleUser)
		got, err := db.FindUserByName(ctx, "ALICE")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != alice.ID || !got.IsAdmin() || got.Email != "alice@example.org" {
			t.Fatalf("got %+v, want %+v", got, alice)
		}
		if err := db.CreateUser(ctx, &yard.User{Name: "Alice", Roles: []string{"user"}}, nil); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("duplicate name: got %v, want conflict", err)
		}
		if err := db.CreateUser(ctx, &yard.User{Name: "bob", Roles: []string{"root"}}, nil); yard.ErrorCode(err) != yard.EINVALID {
			t.Fatalf("bad role: got %v, want invalid", err)
		}
		if _, err := db.FindUserByID(ctx, "nope"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("missing: got %v, want not found", err)
		}
		phone := "+14155550100"
		u, err := db.UpdateUser(ctx, alice.ID, yard.UserUpdate{Phone: &phone})
		if err != nil || u.Phone != phone {
			t.Fatalf("update: got %+v, %v", u, err)
		}
		if err := db.SetCredentials(ctx, alice.ID, &yard.Credentials{PasswordHash: "h2", HA1MD5: "m", HA1SHA256: "s"}); err != nil {
			t.Fatal(err)
		}
		c, err := db.FindCredentials(ctx, alice.ID)
		if err != nil || c.PasswordHash != "h2" || c.HA1MD5 != "m" || c.HA1SHA256 != "s" || c.PasswordChangedAt.IsZero() {
			t.Fatalf("credentials: got %+v, %v", c, err)
		}
		mustUser(t, db, "carol")
		users, total, err := db.FindUsers(ctx, yard.UserFilter{Limit: 1, Offset: 1})
		if err != nil || total != 2 || len(users) != 1 {
			t.Fatalf("page: got %d users of %d, %v; want 1 of 2", len(users), total, err)
		}
	})
}

func TestDogs(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		owner := mustUser(t, db, "owner")
		d := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: owner.ID}
		if err := db.CreateDog(ctx, d); err != nil {
			t.Fatal(err)
		}
		if d.BarkEffect != yard.EffectRecord {
			t.Fatalf("default effect: got %q, want record", d.BarkEffect)
		}
		bad := &yard.Dog{Name: "Ghost", Email: "g@example.org", Owner: "nobody"}
		if err := db.CreateDog(ctx, bad); yard.ErrorCode(err) != yard.EINVALID {
			t.Fatalf("unknown owner: got %v, want invalid", err)
		}
		hostile := "--upload-pack=touch /tmp/x"
		if _, err := db.UpdateDog(ctx, d.ID, yard.DogUpdate{CodeURL: &hostile}); yard.ErrorCode(err) != yard.EINVALID {
			t.Fatalf("hostile codeUrl: got %v, want invalid", err)
		}
		got, _ := db.FindDogByID(ctx, d.ID)
		if got.CodeURL != "" {
			t.Fatalf("hostile codeUrl was stored: %q", got.CodeURL)
		}
		name := "Rexy"
		if _, err := db.UpdateDog(ctx, d.ID, yard.DogUpdate{Name: &name}); err != nil {
			t.Fatal(err)
		}
		got, err := db.FindDogByID(ctx, d.ID)
		if err != nil || got.Name != "Rexy" || got.Owner != owner.ID {
			t.Fatalf("got %+v, %v", got, err)
		}
		if err := db.DeleteUser(ctx, owner.ID); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("delete owner of a dog: got %v, want conflict", err)
		}
		dogs, total, err := db.FindDogs(ctx, yard.DogFilter{Owner: &owner.ID})
		if err != nil || total != 1 || len(dogs) != 1 {
			t.Fatalf("list: got %d of %d, %v", len(dogs), total, err)
		}
		if err := db.DeleteDog(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteDog(ctx, d.ID); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("second delete: got %v, want not found", err)
		}
	})
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	u := mustUser(t, db, "keeper")
	db.Close()
	db, err = store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if pending, err := db.Pending(ctx); err != nil || pending {
		t.Fatalf("pending after migrate: %v, %v", pending, err)
	}
	if _, err := db.FindUserByID(ctx, u.ID); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

func TestNewPasswordEndsSessionsAndRefreshFamilies(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := mustUser(t, db, "frank")
		other := mustUser(t, db, "gina")
		now := db.Now()
		for _, s := range []*yard.Session{{KeyHash: "k1", UserID: u.ID, CreatedAt: now, LastSeen: now}, {KeyHash: "k2", UserID: other.ID, CreatedAt: now, LastSeen: now}} {
			if err := db.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.CreateRefreshFamily(ctx, &yard.RefreshFamily{ID: "f1", UserID: u.ID, Current: "j1", ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := db.SetCredentials(ctx, u.ID, &yard.Credentials{PasswordHash: "new"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindSession(ctx, "k1"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("session of the user after a new password: %v", err)
		}
		if _, err := db.FindSession(ctx, "k2"); err != nil {
			t.Fatalf("another user's session ended: %v", err)
		}
		if got, err := db.RotateRefresh(ctx, "f1", "j1", "j2", now.Add(time.Hour)); err != nil || got == yard.RotateOK {
			t.Fatalf("refresh family still rotates after a new password: %v %v", got, err)
		}
	})
}

// TestPreviousBarksByIndex: the read of a dog's last scheduled barks (in
// every dog.updated event) goes through the partial index of scheduled
// barks, not through every bark of the dog.
func TestPreviousBarksByIndex(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := mustUser(t, db, "alice")
		d := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: u.ID}
		if err := db.CreateDog(ctx, d); err != nil {
			t.Fatal(err)
		}
		plan, err := db.ExplainPreviousBarks(ctx, d.ID, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "tasks_dog_slot_idx") {
			t.Fatalf("the read of a dog's last scheduled barks, over 5,000 barks of requests:\n%s", plan)
		}
	})
}
