package yard

import (
	"slices"
	"testing"
)

func TestParseOrderQuery(t *testing.T) {
	for _, tc := range []struct {
		raw      string
		status   []string
		canceled []bool
		in, out  []string
		page     Page
	}{
		{raw: "", page: Page{0, 20}},
		{raw: "status=placed,SHIPPED", status: []string{"placed", "shipped"}, page: Page{0, 20}},
		{raw: "status=!delivered;canceled=false", status: []string{"placed", "shipped"}, canceled: []bool{false}, page: Page{0, 20}},
		{raw: "q.status.ne=placed&q.canceled.eq=true&offset=5&max=500", status: []string{"shipped", "delivered"}, canceled: []bool{true}, page: Page{5, 100}},
		{raw: "status=placed&status=!placed", status: []string{}, page: Page{0, 20}},
		{raw: "canceled=true,false", canceled: []bool{false, true}, page: Page{0, 20}},
		{raw: "customerId=b,a,a;customerId=!c", in: []string{"a", "b"}, out: []string{"c"}, page: Page{0, 20}},
	} {
		f, p, err := ParseOrderQuery(tc.raw)
		if err != nil {
			t.Fatalf("%q: %v", tc.raw, err)
		}
		if !slices.Equal(f.Status, tc.status) || (f.Status == nil) != (tc.status == nil) ||
			!slices.Equal(f.Canceled, tc.canceled) || (f.Canceled == nil) != (tc.canceled == nil) ||
			!slices.Equal(f.CustomerIn, tc.in) || !slices.Equal(f.CustomerNotIn, tc.out) || p != tc.page {
			t.Errorf("%q: got %+v %+v, want status %v canceled %v in %v out %v page %+v", tc.raw, f, p, tc.status, tc.canceled, tc.in, tc.out, tc.page)
		}
	}
	for raw, field := range map[string]string{
		"status=lost":       "status",
		"canceled=maybe":    "canceled",
		"colour=red":        "colour",
		"q.status.lt=x":     "q.status.lt",
		"status":            "status",
		"status=":           "status",
		"max=-1":            "max",
		"offset=1&offset=2": "offset",
		"status=%zz":        "status",
	} {
		_, _, err := ParseOrderQuery(raw)
		e, ok := err.(*Error)
		if !ok || e.Code != EINVALID || len(e.Fields) != 1 || e.Fields[0].Field != field {
			t.Errorf("%q: got %v, want invalid naming %s", raw, err, field)
		}
	}
}

func TestCheckOrderChange(t *testing.T) {
	placed := Order{Status: OrderPlaced}
	cancelled := Order{Status: OrderPlaced, Canceled: true}
	shipped := Order{Status: OrderShipped}
	for _, tc := range []struct {
		name      string
		old, next Order
		want      string
	}{
		{"cancel a placed order", placed, cancelled, ""},
		{"cancel twice", cancelled, cancelled, ""},
		{"ship", placed, shipped, ""},
		{"deliver", shipped, Order{Status: OrderDelivered}, ""},
		{"cancel a shipped order", shipped, Order{Status: OrderShipped, Canceled: true}, ECONFLICT},
		{"cancel a delivered order", Order{Status: OrderDelivered}, Order{Status: OrderDelivered, Canceled: true}, ECONFLICT},
		{"ship a cancelled order", cancelled, Order{Status: OrderShipped, Canceled: true}, ECONFLICT},
		{"ship and cancel at once", placed, Order{Status: OrderShipped, Canceled: true}, ECONFLICT},
		{"reinstate", cancelled, placed, ECONFLICT},
		{"back to placed", shipped, placed, ECONFLICT},
		{"unknown status", placed, Order{Status: "lost"}, EINVALID},
	} {
		if got := ErrorCode(CheckOrderChange(tc.old, tc.next)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
