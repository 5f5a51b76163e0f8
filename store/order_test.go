package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

func cancelOrder(o *yard.Order) error { o.Canceled = true; return nil }

func shipOrder(o *yard.Order) error { o.Status = yard.OrderShipped; return nil }

func TestOrders(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice, bob := mustUser(t, db, "alice"), mustUser(t, db, "bob")
		o := &yard.Order{CustomerID: alice.ID}
		if err := db.CreateOrder(ctx, o); err != nil {
			t.Fatal(err)
		}
		if o.ID == "" || o.Status != yard.OrderPlaced || o.Canceled || o.CreatedAt.IsZero() || !o.UpdatedAt.Equal(o.CreatedAt) {
			t.Fatalf("created: got %+v", o)
		}
		if err := db.CreateOrder(ctx, &yard.Order{CustomerID: "ghost"}); yard.ErrorCode(err) != yard.EINVALID {
			t.Fatalf("unknown customer: got %v, want invalid", err)
		}
		if err := db.CreateOrder(ctx, &yard.Order{CustomerID: alice.ID, Status: "lost"}); yard.ErrorCode(err) != yard.EINVALID {
			t.Fatalf("unknown status: got %v, want invalid", err)
		}
		got, err := db.FindOrderByID(ctx, o.ID)
		if err != nil || *got != *o {
			t.Fatalf("find: got %+v, %v; want %+v", got, err, o)
		}
		if _, err := db.FindOrderByID(ctx, "nope"); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("missing: got %v, want not found", err)
		}

		// Cancel, then cancel again: the second changes nothing.
		c1, err := db.UpdateOrder(ctx, o.ID, cancelOrder)
		if err != nil || !c1.Canceled || !c1.UpdatedAt.After(o.UpdatedAt) {
			t.Fatalf("cancel: got %+v, %v", c1, err)
		}
		c2, err := db.UpdateOrder(ctx, o.ID, cancelOrder)
		if err != nil || *c2 != *c1 {
			t.Fatalf("cancel twice: got %+v, %v; want %+v", c2, err, c1)
		}
		for name, fn := range map[string]func(*yard.Order) error{
			"ship a cancelled order":      shipOrder,
			"reinstate a cancelled order": func(o *yard.Order) error { o.Canceled = false; return nil },
		} {
			if _, err := db.UpdateOrder(ctx, o.ID, fn); yard.ErrorCode(err) != yard.ECONFLICT {
				t.Fatalf("%s: got %v, want conflict", name, err)
			}
		}

		shipped := &yard.Order{CustomerID: bob.ID, Status: yard.OrderShipped}
		if err := db.CreateOrder(ctx, shipped); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpdateOrder(ctx, shipped.ID, cancelOrder); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("cancel a shipped order: got %v, want conflict", err)
		}
		if _, err := db.UpdateOrder(ctx, shipped.ID, func(o *yard.Order) error { o.Status = yard.OrderPlaced; return nil }); yard.ErrorCode(err) != yard.ECONFLICT {
			t.Fatalf("status back to placed: got %v, want conflict", err)
		}
		d, err := db.UpdateOrder(ctx, shipped.ID, func(o *yard.Order) error { o.Status = yard.OrderDelivered; return nil })
		if err != nil || d.Status != yard.OrderDelivered {
			t.Fatalf("deliver: got %+v, %v", d, err)
		}
		// The callback's error is returned and nothing is written.
		if _, err := db.UpdateOrder(ctx, shipped.ID, func(o *yard.Order) error {
			o.Status = yard.OrderShipped
			return yard.Errorf(yard.EFORBIDDEN, "no")
		}); yard.ErrorCode(err) != yard.EFORBIDDEN {
			t.Fatalf("callback error: got %v", err)
		}
		if g, _ := db.FindOrderByID(ctx, shipped.ID); g.Status != yard.OrderDelivered {
			t.Fatalf("a refused change was written: %+v", g)
		}
		if _, err := db.UpdateOrder(ctx, "nope", cancelOrder); yard.ErrorCode(err) != yard.ENOTFOUND {
			t.Fatalf("update missing: got %v", err)
		}

		// Lists: ownership and filters.
		third := &yard.Order{CustomerID: alice.ID}
		if err := db.CreateOrder(ctx, third); err != nil {
			t.Fatal(err)
		}
		ids := func(f yard.OrderFilter) []string {
			t.Helper()
			os, total, err := db.FindOrders(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if total != len(os) {
				t.Fatalf("total %d, %d items", total, len(os))
			}
			var out []string
			for _, o := range os {
				out = append(out, o.ID)
			}
			return out
		}
		for _, tc := range []struct {
			name  string
			query string
			owner *string
			want  []string
		}{
			{"all", "", nil, []string{o.ID, shipped.ID, third.ID}},
			{"alice's", "", &alice.ID, []string{o.ID, third.ID}},
			{"alice's cancelled", "canceled=true", &alice.ID, []string{o.ID}},
			{"not cancelled", "canceled=!true", nil, []string{shipped.ID, third.ID}},
			{"either", "canceled=true,false", nil, []string{o.ID, shipped.ID, third.ID}},
			{"neither", "canceled=true;canceled=!true", nil, nil},
			{"delivered", "status=delivered", nil, []string{shipped.ID}},
			{"not delivered", "q.status.ne=delivered", nil, []string{o.ID, third.ID}},
			{"placed and not cancelled", "status=placed&canceled=false", nil, []string{third.ID}},
			{"customer", "customerId=" + bob.ID, nil, []string{shipped.ID}},
			{"not that customer", "customerId=!" + bob.ID, nil, []string{o.ID, third.ID}},
			{"another's orders stay hidden", "customerId=" + bob.ID, &alice.ID, nil},
		} {
			f, _, err := yard.ParseOrderQuery(tc.query)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			f.Customer = tc.owner
			if got := ids(f); !equalStrings(got, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
		page, total, err := db.FindOrders(ctx, yard.OrderFilter{Limit: 1, Offset: 1})
		if err != nil || total != 3 || len(page) != 1 || page[0].ID != shipped.ID {
			t.Fatalf("page: got %d of %d, %v", len(page), total, err)
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOrderCancelShipRace runs a cancel and a ship of the same order at
// once, many times: exactly one of the two succeeds, the other is a
// conflict, and the stored order is what the winner made it.
func TestOrderCancelShipRace(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		alice := mustUser(t, db, "alice")
		wins := map[string]int{}
		for range 40 {
			o := &yard.Order{CustomerID: alice.ID}
			if err := db.CreateOrder(ctx, o); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, 2)
			for i, fn := range []func(*yard.Order) error{cancelOrder, shipOrder} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = db.UpdateOrder(ctx, o.ID, fn)
				}()
			}
			close(start)
			wg.Wait()
			got, err := db.FindOrderByID(ctx, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case errs[0] == nil && yard.ErrorCode(errs[1]) == yard.ECONFLICT:
				wins["cancel"]++
				if !got.Canceled || got.Status != yard.OrderPlaced {
					t.Fatalf("cancel won but the order is %+v", got)
				}
			case errs[1] == nil && yard.ErrorCode(errs[0]) == yard.ECONFLICT:
				wins["ship"]++
				if got.Canceled || got.Status != yard.OrderShipped {
					t.Fatalf("ship won but the order is %+v", got)
				}
			default:
				t.Fatalf("cancel: %v, ship: %v; want exactly one conflict", errs[0], errs[1])
			}
		}
		t.Logf("wins: %v", wins)
	})
}
