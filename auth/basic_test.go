package auth_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func newUserStore(t *testing.T, name, password string) (*store.DB, *yard.User) {
	t.Helper()
	db := storetest.Open(t, store.SQLite)
	creds, err := auth.NewCredentials(name, password)
	if err != nil {
		t.Fatal(err)
	}
	u := &yard.User{Name: name, Roles: []string{yard.RoleUser}}
	if err := db.CreateUser(context.Background(), u, creds); err != nil {
		t.Fatal(err)
	}
	return db, u
}

func basicRequest(user, pass string) *http.Request {
	r, _ := http.NewRequest("GET", "https://localhost/v1/dogs", nil)
	r.SetBasicAuth(user, pass)
	r.RemoteAddr = "192.0.2.1:1234"
	return r
}

func TestBasicCache(t *testing.T) {
	db, u := newUserStore(t, "alice", "alice password")
	b := auth.NewBasic(db, auth.NewLoginLimiter(0, nil), nil)
	now := time.Now()
	b.Now = func() time.Time { return now }
	p, err := b.Authenticate(basicRequest("alice", "alice password"))
	if err != nil || p.UserID != u.ID || p.Scheme != "basic" {
		t.Fatalf("got %+v, %v", p, err)
	}
	// A cached success must not make a wrong password succeed.
	if _, err := b.Authenticate(basicRequest("alice", "wrong")); yard.ErrorCode(err) != yard.EUNAUTHORIZED {
		t.Fatalf("wrong password after a cached success: %v", err)
	}
	// Change the password in the store: the cache still answers (until the
	// TTL or an invalidation), and Invalidate drops it at once.
	creds, _ := auth.NewCredentials("alice", "new password!")
	if err := db.SetCredentials(context.Background(), u.ID, creds); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(basicRequest("alice", "alice password")); err != nil {
		t.Fatalf("cached entry: %v", err)
	}
	b.Invalidate(u.ID)
	if _, err := b.Authenticate(basicRequest("alice", "alice password")); yard.ErrorCode(err) != yard.EUNAUTHORIZED {
		t.Fatalf("after invalidation the old password works: %v", err)
	}
	// Entries expire after the TTL.
	if _, err := b.Authenticate(basicRequest("alice", "new password!")); err != nil {
		t.Fatal(err)
	}
	creds, _ = auth.NewCredentials("alice", "third password")
	_ = db.SetCredentials(context.Background(), u.ID, creds)
	now = now.Add(b.CacheTTL + time.Second)
	if _, err := b.Authenticate(basicRequest("alice", "new password!")); yard.ErrorCode(err) != yard.EUNAUTHORIZED {
		t.Fatalf("expired entry still answers: %v", err)
	}
}

func TestLoginRateLimit(t *testing.T) {
	db, _ := newUserStore(t, "bob", "bob password")
	lim := auth.NewLoginLimiter(3, nil)
	now := time.Now()
	lim.Now = func() time.Time { return now }
	b := auth.NewBasic(db, lim, nil)
	for i := range 3 {
		if _, err := b.Authenticate(basicRequest("bob", "wrong")); yard.ErrorCode(err) != yard.EUNAUTHORIZED {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	_, err := b.Authenticate(basicRequest("bob", "bob password"))
	var e *yard.Error
	if yard.ErrorCode(err) != yard.ERATELIMIT {
		t.Fatalf("right password past the limit: got %v, want rate limited", err)
	}
	if errorsAs(err, &e); e.RetryAfter < 1 || e.RetryAfter > 60 {
		t.Fatalf("Retry-After %d", e.RetryAfter)
	}
	// Another address is limited too, through the user name.
	r := basicRequest("bob", "bob password")
	r.RemoteAddr = "198.51.100.7:1"
	if _, err := b.Authenticate(r); yard.ErrorCode(err) != yard.ERATELIMIT {
		t.Fatalf("same user from another address: %v", err)
	}
	now = now.Add(61 * time.Second)
	if _, err := b.Authenticate(basicRequest("bob", "bob password")); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	// Remembered right credentials are refused too while their address
	// is over the limit (another name's failures filled it).
	for range 3 {
		_, _ = b.Authenticate(basicRequest("mallory", "guess")) // from basicRequest's address
	}
	if _, err := b.Authenticate(basicRequest("bob", "bob password")); yard.ErrorCode(err) != yard.ERATELIMIT {
		t.Fatalf("remembered credentials from an address over the limit: %v, want rate limited", err)
	}
}

func TestPasswordHash(t *testing.T) {
	h, err := auth.HashPassword("s3cret pass")
	if err != nil {
		t.Fatal(err)
	}
	g := auth.NewHashGate(1, 0, time.Minute)
	check := func(phc, pw string) bool {
		ok, err := g.Check(context.Background(), phc, pw)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !check(h, "s3cret pass") || check(h, "s3cret pasS") || check("garbage", "x") {
		t.Fatal("Check is wrong")
	}
	if g.Runs() != 2 {
		t.Fatalf("the gate ran %d hashes, want 2 (a malformed hash is not hashed)", g.Runs())
	}
	// RFC 7616 §3.9.1: HA1 for Mufasa / http-auth@example.org / Circle of Life.
	if got := auth.HA1("MD5", "Mufasa", "http-auth@example.org", "Circle of Life"); got != "3d78807defe7de2157e2b0b6573a855f" {
		t.Fatal(got)
	}
}

// TestUnknownUserHashed checks that a password sent with a name no user
// has is hashed as a known user's is (one argon2id run through the gate),
// so timing does not tell which names exist.
func TestUnknownUserHashed(t *testing.T) {
	db, _ := newUserStore(t, "ida", "ida password")
	g := auth.NewHashGate(1, 0, time.Minute)
	for _, name := range []string{"nobody", "ida"} {
		before := g.Runs()
		_, err := auth.VerifyUserPassword(context.Background(), g, db, name, "wrong password")
		if yard.ErrorCode(err) != yard.EUNAUTHORIZED {
			t.Fatalf("%s: got %v, want EUNAUTHORIZED", name, err)
		}
		if n := g.Runs() - before; n != 1 {
			t.Fatalf("%s: the gate ran %d hashes, want 1", name, n)
		}
	}
}

// TestBasicBurstVerifiesOnce sends a burst of requests with the same
// credentials at a cold cache: they share one argon2id verification.
func TestBasicBurstVerifiesOnce(t *testing.T) {
	db, u := newUserStore(t, "henry", "henry password")
	counting := &countingUsers{Users: db}
	b := auth.NewBasic(counting, auth.NewLoginLimiter(0, nil), nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			p, err := b.Authenticate(basicRequest("henry", "henry password"))
			if err != nil || p.UserID != u.ID {
				t.Errorf("got %v, %v", p, err)
			}
		})
	}
	wg.Wait()
	if n := counting.creds.Load(); n > 3 {
		t.Fatalf("a burst of 20 verified the password %d times, want it shared", n)
	}
}

type countingUsers struct {
	auth.Users
	creds atomic.Int64
}

func (c *countingUsers) FindCredentials(ctx context.Context, id string) (*yard.Credentials, error) {
	c.creds.Add(1)
	return c.Users.FindCredentials(ctx, id)
}
