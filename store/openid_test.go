package store_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestOpenIDState(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := mustUser(t, db, "alice")
		now := time.UnixMilli(1_800_000_000_000).UTC()

		// Associations.
		a := &yard.OpenIDAssociation{Handle: "h1", Type: "HMAC-SHA256", SealedKey: "sealed", Private: true,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := db.CreateOpenIDAssociation(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateOpenIDAssociation(ctx, a); err == nil {
			t.Fatal("a handle was stored twice")
		}
		got, err := db.FindOpenIDAssociation(ctx, "h1")
		if err != nil || got.Type != a.Type || got.SealedKey != "sealed" || !got.Private || !got.ExpiresAt.Equal(a.ExpiresAt) || !got.CreatedAt.Equal(now) {
			t.Fatalf("FindOpenIDAssociation = %+v, %v", got, err)
		}
		shared := &yard.OpenIDAssociation{Handle: "h2", Type: "HMAC-SHA1", SealedKey: "s2", CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
		if err := db.CreateOpenIDAssociation(ctx, shared); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.FindOpenIDAssociation(ctx, "h2"); got == nil || got.Private {
			t.Fatalf("shared association read back as %+v", got)
		}
		if err := db.DeleteOpenIDAssociation(ctx, "h1"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindOpenIDAssociation(ctx, "h1"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("deleted association: got %v, want not found", err)
		}

		// Nonces: once each, also when many race.
		if ok, err := db.UseOpenIDNonce(ctx, "n1", now.Add(time.Minute)); !ok || err != nil {
			t.Fatalf("first use: %v, %v", ok, err)
		}
		if ok, err := db.UseOpenIDNonce(ctx, "n1", now.Add(time.Minute)); ok || err != nil {
			t.Fatalf("second use: %v, %v; want false", ok, err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if ok, err := db.UseOpenIDNonce(ctx, "race", now.Add(time.Minute)); ok && err == nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("racing nonce used %d times, want 1", wins.Load())
		}

		// Approvals: create, replace, per user and realm.
		if _, err := db.FindOpenIDApproval(ctx, u.ID, "https://rp/"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("missing approval: %v", err)
		}
		if err := db.SaveOpenIDApproval(ctx, &yard.OpenIDApproval{UserID: u.ID, Realm: "https://rp/", SReg: []string{"email", "nickname"}, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveOpenIDApproval(ctx, &yard.OpenIDApproval{UserID: u.ID, Realm: "https://rp/", SReg: []string{"email"}, CreatedAt: now.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		ap, err := db.FindOpenIDApproval(ctx, u.ID, "https://rp/")
		if err != nil || !slices.Equal(ap.SReg, []string{"email"}) || !ap.CreatedAt.Equal(now.Add(time.Second)) {
			t.Fatalf("approval = %+v, %v", ap, err)
		}
		if err := db.SaveOpenIDApproval(ctx, &yard.OpenIDApproval{UserID: u.ID, Realm: "https://other/", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if ap, err := db.FindOpenIDApproval(ctx, u.ID, "https://other/"); err != nil || len(ap.SReg) != 0 {
			t.Fatalf("approval without sreg = %+v, %v", ap, err)
		}

		// Purge removes what has expired, keeps the rest.
		if err := db.PurgeOpenID(ctx, now.Add(30*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindOpenIDAssociation(ctx, "h2"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Error("an expired association survived the purge")
		}
		if ok, _ := db.UseOpenIDNonce(ctx, "n1", now.Add(time.Hour)); !ok {
			t.Error("an expired nonce survived the purge")
		}
		if _, err := db.FindOpenIDApproval(ctx, u.ID, "https://rp/"); err != nil {
			t.Errorf("the purge removed an approval: %v", err)
		}
	})
}
