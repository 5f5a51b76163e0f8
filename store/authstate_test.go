package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestAuthState(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := mustUser(t, db, "alice")
		now := time.UnixMilli(1_800_000_000_000).UTC()

		// Sessions.
		s := &yard.Session{KeyHash: "h1", UserID: u.ID, CreatedAt: now, LastSeen: now}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := db.TouchSession(ctx, "h1", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := db.TouchSession(ctx, "h1", now.Add(time.Second)); err != nil { // never back
			t.Fatal(err)
		}
		got, err := db.FindSession(ctx, "h1")
		if err != nil || got.UserID != u.ID || !got.LastSeen.Equal(now.Add(time.Minute)) || !got.CreatedAt.Equal(now) {
			t.Fatalf("FindSession = %+v, %v", got, err)
		}
		if ok, err := db.DeleteSession(ctx, "h1"); !ok || err != nil {
			t.Fatalf("DeleteSession = %v, %v; want true", ok, err)
		}
		if ok, _ := db.DeleteSession(ctx, "h1"); ok {
			t.Error("a deleted session was deleted again")
		}
		if _, err := db.FindSession(ctx, "h1"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("FindSession after delete: got %v, want not found", err)
		}

		// Refresh families: rotate, reuse revokes, revoked stays revoked.
		f := &yard.RefreshFamily{ID: yard.NewID(), UserID: u.ID, Current: "j1", ExpiresAt: now.Add(time.Hour)}
		if err := db.CreateRefreshFamily(ctx, f); err != nil {
			t.Fatal(err)
		}
		for i, step := range []struct {
			old, new string
			want     int
		}{
			{"j1", "j2", yard.RotateOK},
			{"j2", "j3", yard.RotateOK},
			{"j1", "j4", yard.RotateReused},
			{"j3", "j5", yard.RotateRevoked},
		} {
			if res, err := db.RotateRefresh(ctx, f.ID, step.old, step.new, now.Add(time.Hour)); err != nil || res != step.want {
				t.Fatalf("step %d: RotateRefresh(%s) = %d, %v; want %d", i, step.old, res, err, step.want)
			}
		}
		if res, _ := db.RotateRefresh(ctx, "nope", "a", "b", now); res != yard.RotateRevoked {
			t.Errorf("unknown family: got %d, want revoked", res)
		}
		// Two processes racing with the same token: exactly one wins.
		f2 := &yard.RefreshFamily{ID: yard.NewID(), UserID: u.ID, Current: "r1", ExpiresAt: now.Add(time.Hour)}
		if err := db.CreateRefreshFamily(ctx, f2); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		results := make([]int, 8)
		for i := range results {
			wg.Go(func() {
				results[i], _ = db.RotateRefresh(ctx, f2.ID, "r1", yard.NewID(), now.Add(time.Hour))
			})
		}
		wg.Wait()
		wins := 0
		for _, r := range results {
			if r == yard.RotateOK {
				wins++
			}
		}
		if wins != 1 {
			t.Errorf("racing rotations: %d won, want 1 (%v)", wins, results)
		}
		if err := db.RevokeRefreshFamily(ctx, f2.ID); err != nil {
			t.Fatal(err)
		}

		// Digest nonce counts.
		for i, step := range []struct {
			nc   uint64
			want bool
		}{{1, true}, {1, false}, {2, true}, {5, true}, {3, false}} {
			if ok, err := db.UseNonceCount(ctx, "n1", step.nc, now.Add(time.Minute)); err != nil || ok != step.want {
				t.Fatalf("step %d: UseNonceCount(%d) = %v, %v; want %v", i, step.nc, ok, err, step.want)
			}
		}

		// API keys and signatures.
		k := &yard.APIKey{ID: "ak_1", UserID: u.ID, SealedSecret: "sealed", CreatedAt: now}
		if err := db.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		if got, err := db.FindAPIKey(ctx, "ak_1"); err != nil || got.SealedSecret != "sealed" || got.UserID != u.ID {
			t.Fatalf("FindAPIKey = %+v, %v", got, err)
		}
		if ok, err := db.UseSignature(ctx, "sig1", now.Add(time.Minute)); !ok || err != nil {
			t.Fatalf("first UseSignature = %v, %v", ok, err)
		}
		if ok, err := db.UseSignature(ctx, "sig1", now.Add(time.Minute)); ok || err != nil {
			t.Fatalf("replayed UseSignature = %v, %v; want false", ok, err)
		}
		exp := now.Add(time.Minute)
		fresh, err := db.UseSignatures(ctx, []string{"sig1", "sig2", "sig3"}, []time.Time{exp, exp, exp})
		if err != nil || fresh["sig1"] || !fresh["sig2"] || !fresh["sig3"] || len(fresh) != 2 {
			t.Fatalf("UseSignatures = %v, %v; want sig2 and sig3 new", fresh, err)
		}
		if ok, _ := db.UseSignature(ctx, "sig3", exp); ok {
			t.Error("a signature of a batch was accepted again")
		}
		if ok, _ := db.DeleteAPIKey(ctx, "ak_1"); !ok {
			t.Error("DeleteAPIKey: key did not exist")
		}
		if _, err := db.FindAPIKey(ctx, "ak_1"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("deleted key: got %v", err)
		}

		// Purge drops expired rows only.
		if err := db.PurgeAuthState(ctx, now.Add(2*time.Minute), time.Hour); err != nil {
			t.Fatal(err)
		}
		if ok, _ := db.UseSignature(ctx, "sig1", now.Add(time.Minute)); !ok {
			t.Error("an expired signature was not purged")
		}
		if ok, _ := db.UseNonceCount(ctx, "n1", 1, now.Add(time.Minute)); !ok {
			t.Error("an expired nonce was not purged")
		}
	})
}

// TestSignaturesCommitAsynchronously: on PostgreSQL signatures are written
// by connections with synchronous_commit off, and what one commits is
// refused at once through another connection (the replay rule holds across
// processes).
func TestSignaturesCommitAsynchronously(t *testing.T) {
	dsn := storetest.NewPostgresDatabase(t)
	ctx := context.Background()
	a, err := store.Open(ctx, dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := a.ReplayWriterSetting(ctx, "synchronous_commit"); err != nil || v != "off" {
		t.Fatalf("synchronous_commit of the signature writers = %q, %v; want off", v, err)
	}
	b, err := store.Open(ctx, dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exp := time.Now().Add(time.Minute)
	for i := range 50 {
		sig := fmt.Sprintf("sig-%d", i)
		if ok, err := a.UseSignature(ctx, sig, exp); !ok || err != nil {
			t.Fatalf("%s at a: %v, %v", sig, ok, err)
		}
		if ok, err := b.UseSignature(ctx, sig, exp); ok || err != nil {
			t.Fatalf("%s replayed at b right after: %v, %v; want refused", sig, ok, err)
		}
	}
}
