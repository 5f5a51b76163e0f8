package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// newTestClock is a settable clock for the store (db.Now).
func newTestClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

func mustWebhook(t *testing.T, db *store.DB, owner string, types ...string) *yard.Webhook {
	t.Helper()
	w := &yard.Webhook{Owner: owner, URL: "https://hooks.example.org/" + owner, Types: types}
	if err := db.CreateWebhook(context.Background(), w); err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return w
}

func mustDog(t *testing.T, db *store.DB, owner, name string) *yard.Dog {
	t.Helper()
	d := &yard.Dog{Name: name, Email: strings.ToLower(name) + "@example.org", Owner: owner}
	if err := db.CreateDog(context.Background(), d); err != nil {
		t.Fatalf("create dog: %v", err)
	}
	return d
}

// deliveries returns every delivery row of a subscription, newest first.
func deliveries(t *testing.T, db *store.DB, webhookID string) []*yard.WebhookDelivery {
	t.Helper()
	ds, total, err := db.FindWebhookDeliveries(context.Background(), webhookID, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(ds) {
		t.Fatalf("deliveries: total %d, got %d rows", total, len(ds))
	}
	return ds
}

// TestWebhookFanOutOncePerEvent holds the fan-out to exactly one delivery
// per event a subscription's owner may see and its types want, never one
// from before the subscription, also while several fan-outs race each
// other and the writers.
func TestWebhookFanOutOncePerEvent(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		root := mustUser(t, db, "root", yard.RoleAdmin, yard.RoleUser)
		mustDog(t, db, alice.ID, "Before") // an event before every subscription

		subs := []*yard.Webhook{
			mustWebhook(t, db, alice.ID),
			mustWebhook(t, db, alice.ID, "bark.*"),
			mustWebhook(t, db, bob.ID, "dog.created"),
			mustWebhook(t, db, root.ID),
		}
		start, err := db.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}

		// Writers and three fan-outs at once.
		var writers, fanouts sync.WaitGroup
		done := make(chan struct{})
		errs := make(chan error, 100)
		for i := range 2 {
			writers.Go(func() {
				for j := range 12 {
					owner := alice.ID
					if (i+j)%3 == 0 {
						owner = bob.ID
					}
					d := &yard.Dog{Name: fmt.Sprintf("Dog%d_%d", i, j), Email: "d@example.org", Owner: owner}
					if err := db.CreateDog(ctx, d); err != nil {
						errs <- err
						return
					}
					if err := db.RecordSyncBark(ctx, &yard.Bark{DogID: d.ID, Effect: yard.EffectRecord}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		for range 3 {
			fanouts.Go(func() {
				for {
					if _, err := db.FanOutWebhooks(ctx, 2); err != nil {
						errs <- err
						return
					}
					select {
					case <-done:
						return
					default:
					}
				}
			})
		}
		writers.Wait()
		close(done)
		fanouts.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if _, err := db.FanOutWebhooks(ctx, 2); err != nil {
			t.Fatal(err)
		}
		// Once more changes nothing.
		if n, err := db.FanOutWebhooks(ctx, 2); err != nil || n != 0 {
			t.Fatalf("a fan-out with nothing new: created %d, %v", n, err)
		}

		all := readAllEvents(t, db, start, nil)
		if len(all) < 48 {
			t.Fatalf("only %d events were written", len(all))
		}
		for _, w := range subs {
			var want []string
			admin := w.Owner == root.ID
			for _, e := range all {
				if (admin || e.Owner == w.Owner) && w.Wants(e.Type) {
					want = append(want, e.ID.String()+" "+e.Type)
				}
			}
			var got []string
			for _, d := range deliveries(t, db, w.ID) {
				if d.Attempt != 1 || d.Status != yard.DeliveryPending || !admin && d.Event.Owner != w.Owner {
					t.Errorf("delivery %+v", d)
				}
				got = append(got, d.Event.ID.String()+" "+d.Event.Type)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("subscription of %s to %v: got %d deliveries, want %d (one per visible matching event)\ngot  %v\nwant %v",
					w.Owner, w.Types, len(got), len(want), got, want)
			}
		}
	})
}

// TestWebhookClaimsAreExclusive holds claims to one worker per delivery,
// also when many claim at once, to the bounds on attempts in flight, and
// to the lease: an expired one is taken again and its old holder can no
// longer finish.
func TestWebhookClaimsAreExclusive(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := newTestClock()
		db.Now = clock.Now
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		wa := mustWebhook(t, db, alice.ID, "dog.created")
		wb := mustWebhook(t, db, bob.ID, "dog.created")
		for i := range 15 {
			mustDog(t, db, alice.ID, fmt.Sprintf("A%d", i))
			mustDog(t, db, bob.ID, fmt.Sprintf("B%d", i))
		}
		if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 30 {
			t.Fatalf("fan-out: created %d, %v; want 30", n, err)
		}

		// Bounds: two per subscription in flight, then none until one
		// finishes.
		bounds := yard.DeliveryBounds{PerWebhook: 2, PerPerson: 8}
		first, err := db.ClaimWebhookDeliveries(ctx, 100, time.Minute, bounds)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, c := range first {
			per[c.Delivery.WebhookID]++
			if c.URL != "https://hooks.example.org/"+map[string]string{wa.ID: alice.ID, wb.ID: bob.ID}[c.Delivery.WebhookID] ||
				!strings.HasPrefix(c.Secret, yard.WebhookSecretPrefix) || len(c.Delivery.Event.Data) == 0 {
				t.Fatalf("claim without what the attempt needs: %+v", c)
			}
		}
		if len(first) != 4 || per[wa.ID] != 2 || per[wb.ID] != 2 {
			t.Fatalf("first claim: got %v, want 2 per subscription", per)
		}
		if more, err := db.ClaimWebhookDeliveries(ctx, 100, time.Minute, bounds); err != nil || len(more) != 0 {
			t.Fatalf("claim at the bound: got %d, %v; want none", len(more), err)
		}
		if _, err := db.FinishWebhookDelivery(ctx, first[0], yard.DeliveryOutcome{Succeeded: true, Code: 204}); err != nil {
			t.Fatal(err)
		}
		next, err := db.ClaimWebhookDeliveries(ctx, 100, time.Minute, bounds)
		if err != nil || len(next) != 1 || next[0].Delivery.WebhookID != first[0].Delivery.WebhookID {
			t.Fatalf("claim after one finished: got %d, %v; want one of the same subscription", len(next), err)
		}
		if more, err := db.ClaimWebhookDeliveries(ctx, 100, time.Minute, yard.DeliveryBounds{PerWebhook: 100, PerPerson: 3}); err != nil || len(more) != 2 {
			t.Fatalf("claim under a per-person bound of 3: got %d, %v; want 2 (one more each)", len(more), err)
		}

		// Expired leases: everything pending is due again, and many
		// workers racing take each delivery once.
		clock.Advance(2 * time.Minute)
		var mu sync.Mutex
		seen := map[string]int{}
		var claims []*yard.WebhookClaim
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					cs, err := db.ClaimWebhookDeliveries(ctx, 3, time.Minute, yard.DeliveryBounds{})
					if err != nil {
						t.Error(err)
						return
					}
					if len(cs) == 0 {
						return
					}
					mu.Lock()
					for _, c := range cs {
						seen[c.Delivery.ID]++
						claims = append(claims, c)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 29 {
			t.Fatalf("racing claims took %d deliveries, want the 29 pending", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("delivery %s claimed %d times", id, n)
			}
		}
		// The holder of an expired lease cannot finish what another took.
		stale := next[0]
		if _, err := db.FinishWebhookDelivery(ctx, stale, yard.DeliveryOutcome{Succeeded: true, Code: 200}); !errors.Is(err, yard.ErrLeaseLost) {
			t.Fatalf("finish with an expired lease: got %v, want ErrLeaseLost", err)
		}
		for _, c := range claims {
			if c.Delivery.ID == stale.Delivery.ID {
				if _, err := db.FinishWebhookDelivery(ctx, c, yard.DeliveryOutcome{Succeeded: true, Code: 200}); err != nil {
					t.Fatalf("finish by the new holder: %v", err)
				}
			}
		}
		// A released claim is due again at once.
		held := claims[0]
		if held.Delivery.ID == stale.Delivery.ID {
			held = claims[1]
		}
		if err := db.ReleaseWebhookDelivery(ctx, held); err != nil {
			t.Fatal(err)
		}
		if due, err := db.HasDueWebhookDeliveries(ctx); err != nil || !due {
			t.Fatalf("after a release: due %v, %v", due, err)
		}
	})
}

// TestWebhookDisabledAfter24Hours follows one failing delivery through its
// retries by the store's clock: the next attempt after each failure, none
// past 24 hours after the first, and the subscription disabled with a
// webhook.disabled event (its owner's, without the secret) in the
// transaction of the attempt that made the failures 24 hours long. A
// success in between clears the failure state, and so does enabling.
func TestWebhookDisabledAfter24Hours(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := newTestClock()
		db.Now = clock.Now
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		w := mustWebhook(t, db, alice.ID, "dog.*")
		wb := mustWebhook(t, db, bob.ID, "dog.*")
		mustDog(t, db, alice.ID, "Rex")
		mustDog(t, db, bob.ID, "Fido")
		start, _ := db.LastEventID(ctx)
		if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 2 {
			t.Fatalf("fan-out: %d, %v", n, err)
		}
		t0 := clock.Now()
		claimOne := func(webhookID string) *yard.WebhookClaim {
			t.Helper()
			cs, err := db.ClaimWebhookDeliveries(ctx, 10, time.Minute, yard.DeliveryBounds{})
			if err != nil {
				t.Fatal(err)
			}
			var mine *yard.WebhookClaim
			for _, c := range cs {
				if c.Delivery.WebhookID == webhookID {
					mine = c
				} else if err := db.ReleaseWebhookDelivery(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if mine == nil {
				t.Fatalf("no due delivery of %s at %s", webhookID, clock.Now().Sub(t0))
			}
			return mine
		}
		fail := yard.DeliveryOutcome{Code: 500, Error: "answered 500", RetryIn: 2 * time.Hour}

		// Bob's receiver fails once, then answers: no failure state left.
		c := claimOne(wb.ID)
		if _, err := db.FinishWebhookDelivery(ctx, c, fail); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.FindWebhook(ctx, wb.ID); !got.FailingSince.Equal(t0) {
			t.Fatalf("after a failure: failingSince %v, want %v", got.FailingSince, t0)
		}

		// Alice's fails every time, one attempt per 2 hours.
		attempts := 0
		for {
			c := claimOne(w.ID)
			attempts++
			if c.Delivery.Attempt != attempts {
				t.Fatalf("attempt number %d, want %d", c.Delivery.Attempt, attempts)
			}
			disabled, err := db.FinishWebhookDelivery(ctx, c, fail)
			if err != nil {
				t.Fatal(err)
			}
			elapsed := clock.Now().Sub(t0)
			if disabled {
				if elapsed != 24*time.Hour {
					t.Fatalf("disabled after %s of failures, want 24h", elapsed)
				}
				break
			}
			if elapsed >= 24*time.Hour {
				t.Fatalf("still enabled after %s of failures", elapsed)
			}
			if attempts == 1 {
				// Bob's second attempt, 2 hours after the first, succeeds.
				clock.Advance(2 * time.Hour)
				cb := claimOne(wb.ID)
				if _, err := db.FinishWebhookDelivery(ctx, cb, yard.DeliveryOutcome{Succeeded: true, Code: 200}); err != nil {
					t.Fatal(err)
				}
				if got, _ := db.FindWebhook(ctx, wb.ID); !got.FailingSince.IsZero() || !got.Enabled {
					t.Fatalf("after a success: %+v", got)
				}
				continue
			}
			clock.Advance(2 * time.Hour)
		}
		if attempts != 13 {
			t.Fatalf("%d attempts in 24 hours at 2-hour intervals, want 13", attempts)
		}
		// No attempt after the window.
		ds := deliveries(t, db, w.ID)
		if len(ds) != 13 || ds[0].Status != yard.DeliveryFailed || ds[0].Attempt != 13 || ds[12].Attempt != 1 || ds[0].Code != 500 {
			t.Fatalf("deliveries: %d rows, newest %+v", len(ds), ds[0])
		}
		for _, d := range ds {
			if d.Event.Data != nil {
				t.Fatalf("a finished attempt keeps the event's data: %+v", d)
			}
		}

		got, err := db.FindWebhook(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Enabled || !strings.Contains(got.DisabledReason, "answered 500") || !got.FailingSince.Equal(t0) {
			t.Fatalf("disabled subscription: %+v", got)
		}
		var dis []*yard.Event
		for _, e := range readAllEvents(t, db, start, nil) {
			if e.Type == yard.EventWebhookDisabled {
				dis = append(dis, e)
			}
		}
		if len(dis) != 1 || dis[0].Owner != alice.ID || dis[0].Subject != yard.WebhookPath(w.ID) || !dis[0].Time.Equal(t0.Add(24*time.Hour)) {
			t.Fatalf("webhook.disabled events: %+v", dis)
		}
		var data map[string]any
		if err := json.Unmarshal(dis[0].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data["id"] != w.ID || data["enabled"] != false || data["disabledReason"] == "" || data["url"] != w.URL ||
			strings.Contains(string(dis[0].Data), "whsec_") || data["secret"] != nil {
			t.Fatalf("webhook.disabled data: %s", dis[0].Data)
		}
		// Alice sees it; Bob does not.
		if evs := readAllEvents(t, db, start, &bob.ID); slices.ContainsFunc(evs, func(e *yard.Event) bool { return e.Type == yard.EventWebhookDisabled }) {
			t.Fatal("another person sees the webhook.disabled event")
		}

		// Disabled: no fan-out, no claim.
		mustDog(t, db, alice.ID, "Later")
		if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 0 {
			t.Fatalf("fan-out to a disabled subscription: %d, %v", n, err)
		}
		// Enabled again: the failure state is gone, the missed event
		// follows.
		on := true
		got, err = db.UpdateWebhook(ctx, w.ID, yard.WebhookUpdate{Enabled: &on})
		if err != nil || !got.Enabled || got.DisabledReason != "" || !got.FailingSince.IsZero() {
			t.Fatalf("enable: %+v, %v", got, err)
		}
		if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 1 {
			t.Fatalf("fan-out after enabling: %d, %v; want the missed dog.created", n, err)
		}
	})
}

// TestWebhookSubscriptions covers the subscription rows: the per-person
// bound, lists, changes, and deletion with the deliveries.
func TestWebhookSubscriptions(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		var first *yard.Webhook
		for i := range yard.MaxWebhooksPerPerson {
			w := mustWebhook(t, db, alice.ID)
			if i == 0 {
				first = w
			}
		}
		err := db.CreateWebhook(ctx, &yard.Webhook{Owner: alice.ID, URL: "https://x.example.org/"})
		if yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("subscription %d: got %v, want ECONFLICT", yard.MaxWebhooksPerPerson+1, err)
		}
		mustWebhook(t, db, bob.ID)
		if err := db.CreateWebhook(ctx, &yard.Webhook{Owner: "nobody", URL: "https://x.example.org/"}); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("unknown owner: %v", err)
		}

		mine, total, err := db.FindWebhooks(ctx, yard.WebhookFilter{Owner: &alice.ID, Offset: 15, Limit: 10})
		if err != nil || total != 20 || len(mine) != 5 {
			t.Fatalf("alice's page: %d of %d, %v", len(mine), total, err)
		}
		if _, total, _ := db.FindWebhooks(ctx, yard.WebhookFilter{}); total != 21 {
			t.Fatalf("every subscription: %d", total)
		}
		got, err := db.FindWebhook(ctx, first.ID)
		if err != nil || got.Secret != first.Secret || !got.Enabled || len(got.Types) != 0 {
			t.Fatalf("find: %+v, %v", got, err)
		}

		url, types, off := "https://y.example.org/h", []string{"dog.*"}, false
		got, err = db.UpdateWebhook(ctx, first.ID, yard.WebhookUpdate{URL: &url, Types: &types, Enabled: &off})
		if err != nil || got.URL != url || !slices.Equal(got.Types, types) || got.Enabled {
			t.Fatalf("update: %+v, %v", got, err)
		}
		if _, err := db.UpdateWebhook(ctx, "nope", yard.WebhookUpdate{}); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("update unknown: %v", err)
		}

		// Deleting takes the deliveries along; old rows are pruned.
		second := mine[0]
		mustDog(t, db, alice.ID, "Rex")
		if _, err := db.FanOutWebhooks(ctx, 50); err != nil {
			t.Fatal(err)
		}
		if n := len(deliveries(t, db, second.ID)); n != 1 {
			t.Fatalf("deliveries before delete: %d", n)
		}
		if err := db.DeleteWebhook(ctx, second.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteWebhook(ctx, second.ID); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("delete twice: %v", err)
		}
		if n := len(deliveries(t, db, second.ID)); n != 0 {
			t.Fatalf("deliveries after delete: %d", n)
		}
		n, err := db.PruneWebhookDeliveries(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil || n != 18 { // the 19 subscriptions of alice's still enabled, less the one deleted
			t.Fatalf("prune: %d, %v", n, err)
		}
	})
}

// TestWebhookClaimsTakeTurnsInOneClaim holds one claim that asks for more
// than one delivery per subscription to the turns: every subscription
// gives one, then another round, each delivery once, within the bounds per
// subscription and per person, oldest due first.
func TestWebhookClaimsTakeTurnsInOneClaim(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := newTestClock()
		db.Now = clock.Now
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		carol := mustUser(t, db, "carol")
		wa1 := mustWebhook(t, db, alice.ID, "dog.created")
		wa2 := mustWebhook(t, db, alice.ID, "dog.created")
		wb := mustWebhook(t, db, bob.ID, "dog.created")
		wc := mustWebhook(t, db, carol.ID, "dog.created")
		for i := range 5 {
			for _, u := range []*yard.User{alice, bob, carol} {
				mustDog(t, db, u.ID, fmt.Sprintf("%s%d", u.Name, i))
			}
		}
		if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 20 {
			t.Fatalf("fan-out: created %d, %v; want 20", n, err)
		}
		seen := map[string]bool{}
		claim := func(n int, b yard.DeliveryBounds) map[string]int {
			t.Helper()
			cs, err := db.ClaimWebhookDeliveries(ctx, n, time.Minute, b)
			if err != nil {
				t.Fatal(err)
			}
			per := map[string]int{}
			for i, c := range cs {
				if seen[c.Delivery.ID] {
					t.Fatalf("delivery %s claimed twice", c.Delivery.ID)
				}
				seen[c.Delivery.ID] = true
				per[c.Delivery.WebhookID]++
				if i > 0 && c.Delivery.Time.Before(cs[i-1].Delivery.Time) {
					t.Fatalf("claims not oldest due first: %v after %v", c.Delivery.Time, cs[i-1].Delivery.Time)
				}
				if c.URL == "" || c.Secret == "" || c.Token == "" || len(c.Delivery.Event.Data) == 0 {
					t.Fatalf("claim without what the attempt needs: %+v", c)
				}
			}
			return per
		}

		// Ten of twenty, at most 4 per person: alice's two subscriptions
		// give two each, bob's and carol's three each, in turns.
		per := claim(10, yard.DeliveryBounds{PerWebhook: 8, PerPerson: 4})
		if want := map[string]int{wa1.ID: 2, wa2.ID: 2, wb.ID: 3, wc.ID: 3}; !maps.Equal(per, want) {
			t.Fatalf("first claim per subscription: %v, want %v", per, want)
		}
		// Up to 4 in flight per subscription: two more of each of alice's,
		// one more of bob's and of carol's.
		per = claim(100, yard.DeliveryBounds{PerWebhook: 4, PerPerson: 8})
		if want := map[string]int{wa1.ID: 2, wa2.ID: 2, wb.ID: 1, wc.ID: 1}; !maps.Equal(per, want) {
			t.Fatalf("second claim per subscription: %v, want %v", per, want)
		}
		// Expired leases: all twenty again, each once, in one claim.
		clock.Advance(2 * time.Minute)
		clear(seen)
		if per := claim(100, yard.DeliveryBounds{}); len(seen) != 20 || per[wa1.ID] != 5 || per[wc.ID] != 5 {
			t.Fatalf("after the leases expired: %v, %d deliveries; want all 20", per, len(seen))
		}
	})
}

// TestWebhookOutcomesOfManyAttemptsInOneTransaction records several
// outcomes together: those of one subscription take effect in order (a
// success after a failure leaves no failure state, a failure after a
// success starts it), a claim no longer held or of a deleted subscription
// is reported lost and changes nothing, and the others are recorded.
func TestWebhookOutcomesOfManyAttemptsInOneTransaction(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := newTestClock()
		db.Now = clock.Now
		alice := mustUser(t, db, "alice")
		bob := mustUser(t, db, "bob")
		carol := mustUser(t, db, "carol")
		wa := mustWebhook(t, db, alice.ID, "dog.created")
		wb := mustWebhook(t, db, bob.ID, "dog.created")
		wc := mustWebhook(t, db, carol.ID, "dog.created")
		for i := range 3 {
			for _, u := range []*yard.User{alice, bob, carol} {
				mustDog(t, db, u.ID, fmt.Sprintf("%s%d", u.Name, i))
			}
		}
		if n, err := db.FanOutWebhooks(ctx, 10); err != nil || n != 9 {
			t.Fatalf("fan-out: created %d, %v; want 9", n, err)
		}
		cs, err := db.ClaimWebhookDeliveries(ctx, 100, time.Minute, yard.DeliveryBounds{})
		if err != nil || len(cs) != 9 {
			t.Fatalf("claim: %d, %v", len(cs), err)
		}
		of := map[string][]*yard.WebhookClaim{}
		for _, c := range cs {
			of[c.Delivery.WebhookID] = append(of[c.Delivery.WebhookID], c)
		}
		ok := yard.DeliveryOutcome{Succeeded: true, Code: 204}
		fail := yard.DeliveryOutcome{Code: 500, Error: "answered 500", RetryIn: time.Hour}
		stale := *of[wb.ID][2]
		stale.Token = "not-the-lease"
		if err := db.DeleteWebhook(ctx, wc.ID); err != nil {
			t.Fatal(err)
		}
		claims := []*yard.WebhookClaim{of[wa.ID][0], of[wb.ID][0], of[wa.ID][1], of[wc.ID][0], of[wb.ID][1], &stale}
		outs := []yard.DeliveryOutcome{fail, ok, ok, ok, fail, ok}
		disabled, lost, err := db.FinishWebhookDeliveries(ctx, claims, outs)
		if err != nil {
			t.Fatal(err)
		}
		if want := []bool{false, false, false, true, false, true}; !slices.Equal(lost, want) {
			t.Fatalf("lost %v, want %v", lost, want)
		}
		if slices.Contains(disabled, true) {
			t.Fatalf("disabled %v", disabled)
		}
		if got, _ := db.FindWebhook(ctx, wa.ID); !got.FailingSince.IsZero() {
			t.Fatalf("alice's: a failure, then a success: failingSince %v, want none", got.FailingSince)
		}
		if got, _ := db.FindWebhook(ctx, wb.ID); !got.FailingSince.Equal(clock.Now()) {
			t.Fatalf("bob's: a success, then a failure: failingSince %v, want %v", got.FailingSince, clock.Now())
		}
		status := func(w string) map[string]int {
			m := map[string]int{}
			for _, d := range deliveries(t, db, w) {
				m[fmt.Sprintf("%s/%d", d.Status, d.Attempt)]++
			}
			return m
		}
		// Alice's: one failed (and its next attempt), one succeeded, one
		// still held; Bob's: one succeeded, one failed and its next, and
		// the one finished with a stale lease still held.
		for w, want := range map[string]map[string]int{
			wa.ID: {"failed/1": 1, "pending/2": 1, "succeeded/1": 1, "pending/1": 1},
			wb.ID: {"failed/1": 1, "pending/2": 1, "succeeded/1": 1, "pending/1": 1},
		} {
			if got := status(w); !maps.Equal(got, want) {
				t.Errorf("deliveries of %s: %v, want %v", w, got, want)
			}
		}
		// The held one is still its holder's to finish.
		if _, err := db.FinishWebhookDelivery(ctx, of[wb.ID][2], ok); err != nil {
			t.Fatalf("finish by the holder after a stale finish: %v", err)
		}
		if _, _, err := db.FinishWebhookDeliveries(ctx, nil, nil); err != nil {
			t.Fatalf("no outcomes: %v", err)
		}
	})
}
