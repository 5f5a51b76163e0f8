package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func TestOAuthState(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := mustUser(t, db, "alice")
		now := time.UnixMilli(1_800_000_000_000).UTC()
		c := &yard.OAuthConsumer{Key: "ck_1", Name: "Printer", CallbackURL: "https://p.example/cb", SealedSecret: "sealed", CreatedBy: u.ID, CreatedAt: now}
		if err := db.CreateOAuthConsumer(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, err := db.FindOAuthConsumer(ctx, "ck_1"); err != nil || *got != *c {
			t.Fatalf("FindOAuthConsumer = %+v, %v; want %+v", got, err, c)
		}
		request := func(token string, expires time.Time) {
			t.Helper()
			err := db.CreateOAuthToken(ctx, &yard.OAuthToken{ID: yard.NewID(), Token: token, Kind: yard.OAuthRequestToken, State: yard.OAuthPending,
				ConsumerKey: "ck_1", SealedSecret: "s", Callback: "oob", CreatedAt: now, ExpiresAt: expires})
			if err != nil {
				t.Fatal(err)
			}
		}
		request("rt_1", now.Add(10*time.Minute))
		request("rt_old", now.Add(-time.Second))

		// A decision is taken once, and never on an expired token.
		if ok, err := db.DecideOAuthToken(ctx, "rt_old", yard.OAuthAuthorized, u.ID, "h", now); ok || err != nil {
			t.Errorf("decide an expired token: %v, %v", ok, err)
		}
		if ok, err := db.DecideOAuthToken(ctx, "rt_1", yard.OAuthAuthorized, u.ID, "h", now); !ok || err != nil {
			t.Fatalf("decide: %v, %v", ok, err)
		}
		if ok, _ := db.DecideOAuthToken(ctx, "rt_1", yard.OAuthDenied, u.ID, "", now); ok {
			t.Error("a second decision won")
		}

		// Exchanges race: exactly one wins, whatever the engine.
		const racers = 8
		var wg sync.WaitGroup
		wins := make(chan string, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				at := &yard.OAuthToken{ID: yard.NewID(), Token: "at_" + string(rune('a'+i)), Kind: yard.OAuthAccessToken, State: yard.OAuthActive,
					ConsumerKey: "ck_1", SealedSecret: "s", UserID: u.ID, CreatedAt: now}
				ok, err := db.ExchangeOAuthToken(ctx, "rt_1", "h", now, at)
				if err != nil {
					t.Errorf("exchange: %v", err)
				}
				if ok {
					wins <- at.ID
				}
			}()
		}
		wg.Wait()
		close(wins)
		var won []string
		for id := range wins {
			won = append(won, id)
		}
		if len(won) != 1 {
			t.Fatalf("%d exchanges won, want 1", len(won))
		}
		list, err := db.ListOAuthAccess(ctx, u.ID)
		if err != nil || len(list) != 1 || list[0].ID != won[0] || list[0].UserID != u.ID {
			t.Fatalf("ListOAuthAccess = %+v, %v", list, err)
		}
		if all, _ := db.ListOAuthAccess(ctx, ""); len(all) != 1 {
			t.Errorf("every user's access tokens: %d, want 1", len(all))
		}
		// A wrong verifier hash does not exchange.
		request("rt_2", now.Add(time.Minute))
		_, _ = db.DecideOAuthToken(ctx, "rt_2", yard.OAuthAuthorized, u.ID, "good", now)
		if ok, _ := db.ExchangeOAuthToken(ctx, "rt_2", "bad", now, &yard.OAuthToken{ID: yard.NewID(), Token: "at_x", Kind: yard.OAuthAccessToken,
			State: yard.OAuthActive, ConsumerKey: "ck_1", SealedSecret: "s", UserID: u.ID, CreatedAt: now}); ok {
			t.Error("exchanged with a wrong verifier hash")
		}
		if got, _ := db.FindOAuthToken(ctx, "rt_2"); got == nil || got.State != yard.OAuthAuthorized {
			t.Errorf("a refused exchange changed the token: %+v", got)
		}

		// Purge drops expired request tokens only.
		if err := db.PurgeOAuth(ctx, now); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FindOAuthToken(ctx, "rt_old"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("expired request token after purge: %v", err)
		}
		if _, err := db.FindOAuthAccess(ctx, won[0]); err != nil {
			t.Errorf("access token after purge: %v", err)
		}

		// Deleting the consumer deletes its tokens.
		if ok, err := db.DeleteOAuthConsumer(ctx, "ck_1"); !ok || err != nil {
			t.Fatalf("delete consumer: %v, %v", ok, err)
		}
		if list, _ := db.ListOAuthAccess(ctx, ""); len(list) != 0 {
			t.Errorf("%d access tokens outlived their consumer", len(list))
		}
		if _, err := db.FindOAuthToken(ctx, "rt_2"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Errorf("request token outlived its consumer: %v", err)
		}
	})
}
