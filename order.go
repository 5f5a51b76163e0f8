package yard

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Order statuses (spec, Order; docs/api.md, Orders). An order moves
// forward only: placed, then shipped, then delivered.
const (
	OrderPlaced    = "placed"
	OrderShipped   = "shipped"
	OrderDelivered = "delivered"
)

// OrderStatuses lists the statuses in the order an order goes through them.
var OrderStatuses = []string{OrderPlaced, OrderShipped, OrderDelivered}

// ValidOrderStatus reports whether s names an order status.
func ValidOrderStatus(s string) bool { return slices.Contains(OrderStatuses, s) }

// Order is a customer's order: the spec's cancellation example.
type Order struct {
	ID         string
	CustomerID string // user id
	Status     string
	Canceled   bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// OrderFilter narrows a list of orders. Each non-nil set is the values a
// listed order may have; an empty non-nil set matches nothing.
type OrderFilter struct {
	// Customer restricts the list to one customer's orders (ownership).
	Customer *string
	// CustomerIn and CustomerNotIn are the customerId conditions of a query.
	CustomerIn    []string
	CustomerNotIn []string
	Status        []string
	Canceled      []bool
	Offset        int
	Limit         int
}

// ValidateNewOrder checks an order before it is created.
func ValidateNewOrder(o *Order) error {
	var fields []FieldError
	if o.CustomerID == "" {
		fields = append(fields, FieldError{"customerId", "must be the id of a person"})
	}
	if !ValidOrderStatus(o.Status) {
		fields = append(fields, FieldError{"status", "must be one of placed, shipped, delivered"})
	}
	if o.Canceled && o.Status != OrderPlaced {
		fields = append(fields, FieldError{"canceled", "only a placed order can be cancelled"})
	}
	return invalidFields("The order has invalid fields.", fields)
}

// CheckOrderChange returns nil when an order may go from old to next, else
// ECONFLICT saying why: a shipped or delivered order cannot be cancelled, a
// cancelled order cannot be reinstated, shipped or delivered, and the
// status moves forward only.
func CheckOrderChange(old, next Order) error {
	if !ValidOrderStatus(next.Status) {
		return Invalid("Unknown order status.", FieldError{"status", "must be one of placed, shipped, delivered"})
	}
	if next.Canceled && !old.Canceled && old.Status != OrderPlaced {
		return Errorf(ECONFLICT, "The order is already %s and can no longer be cancelled.", old.Status)
	}
	if old.Canceled && !next.Canceled {
		return Errorf(ECONFLICT, "The order is cancelled; a cancelled order cannot be reinstated.")
	}
	if next.Status != old.Status {
		if old.Canceled || next.Canceled {
			return Errorf(ECONFLICT, "The order is cancelled and cannot be %s.", next.Status)
		}
		if statusRank(next.Status) < statusRank(old.Status) {
			return Errorf(ECONFLICT, "The order is %s; its status moves forward only (placed, shipped, delivered), not back to %s.", old.Status, next.Status)
		}
	}
	return nil
}

func statusRank(s string) int { return slices.Index(OrderStatuses, s) }

// orderQueryFields are the fields of the order list's query.
var orderQueryFields = []string{"status", "canceled", "customerId"}

// ParseOrderQuery parses the raw (still percent-encoded) query of the order
// list in the car list's grammar (docs/cars.md): pairs read by ReadQuery
// (split on '&' or ';', offset and max page), field=a,b means a OR b, a
// leading '!' excludes a value, repeating a field adds values,
// q.<field>.eq and q.<field>.ne; fields status, canceled and customerId
// (in any case). Errors are ParamError, naming the parameter.
func ParseOrderQuery(raw string) (OrderFilter, Page, error) {
	f := OrderFilter{}
	type set struct{ in, out []string }
	sets := map[string]*set{}
	values := 0
	page, err := ReadQuery(raw, Paging{}, func(key, rawValue string) string {
		field, op, msg := filterKey(key, "field", OpEq, OpNe)
		if msg != "" {
			return msg
		}
		i := slices.IndexFunc(orderQueryFields, func(n string) bool { return strings.EqualFold(n, field) })
		if i < 0 {
			return UnknownParam
		}
		field = orderQueryFields[i]
		s := sets[field]
		if s == nil {
			s = &set{}
			sets[field] = s
		}
		for item := range strings.SplitSeq(rawValue, ",") {
			values++
			if values > MaxQueryValues {
				return fmt.Sprintf("a query holds at most %d values", MaxQueryValues)
			}
			item, negated := strings.CutPrefix(item, "!")
			v, err := url.QueryUnescape(item)
			if err != nil {
				return BadValueEscape
			}
			switch {
			case v == "":
				return "empty value"
			case len(v) > MaxValueLength:
				return fmt.Sprintf("a value is at most %d bytes", MaxValueLength)
			case field == "status":
				v = strings.ToLower(v)
				if !ValidOrderStatus(v) {
					return fmt.Sprintf("unknown status %q (use placed, shipped or delivered)", v)
				}
			case field == "canceled":
				v = strings.ToLower(v)
				if v != "true" && v != "false" {
					return fmt.Sprintf("%q is not true or false", v)
				}
			}
			if negated != (op == OpNe) {
				s.out = append(s.out, v)
			} else {
				s.in = append(s.in, v)
			}
		}
		return ""
	})
	if err != nil {
		return f, page, err
	}
	// allowed returns the values of all that the conditions on a field let
	// through: those named (all, when none is), less those excluded.
	// (Never nil: an empty set matches nothing.)
	allowed := func(s *set, all []string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(v string) bool {
			return len(s.in) > 0 && !slices.Contains(s.in, v) || slices.Contains(s.out, v)
		})
	}
	if s := sets["status"]; s != nil {
		f.Status = allowed(s, OrderStatuses)
	}
	if s := sets["canceled"]; s != nil {
		f.Canceled = []bool{}
		for _, v := range allowed(s, []string{"false", "true"}) {
			f.Canceled = append(f.Canceled, v == "true")
		}
	}
	if s := sets["customerId"]; s != nil {
		f.CustomerIn, f.CustomerNotIn = sortedSet(s.in), s.out
	}
	f.Offset, f.Limit = page.Offset, page.Max
	return f, page, nil
}
