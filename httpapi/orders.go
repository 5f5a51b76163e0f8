package httpapi

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// orderStore is what the order endpoints need of the store; *store.DB is
// one.
type orderStore interface {
	// Clock returns the store's time (tests set it).
	Clock() time.Time
	CreateOrder(ctx context.Context, o *yard.Order) error
	FindOrderByID(ctx context.Context, id string) (*yard.Order, error)
	FindOrders(ctx context.Context, f yard.OrderFilter) ([]*yard.Order, int, error)
	UpdateOrder(ctx context.Context, id string, fn func(o *yard.Order) error) (*yard.Order, error)
}

// Orders (spec, Order; docs/api.md, Orders): the API's one resource with
// both a JSON and an XML representation. The order's identity is
// /order/{order_id}; /orders/{order_id} is the same resource.

// orderOffers are the representations of an order, the server's
// preference first.
var orderOffers = []string{mediaJSON, mediaXML, mediaTextXML}

// orderMedia picks the media type of an order answer from Accept. Without
// Accept it is the request body's format (JSON when the body is not XML);
// with an Accept that allows several, ties go to the body's format, then
// to JSON. None acceptable is 406.
func orderMedia(r *http.Request) (string, error) {
	offers := orderOffers
	if sentXML(r) {
		// The body's XML type, JSON, then the other XML type.
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		other := mediaXML
		if mt == mediaXML {
			other = mediaTextXML
		}
		offers = []string{mt, mediaJSON, other}
	}
	if m := negotiate(r.Header.Get("Accept"), offers...); m != "" {
		return m, nil
	}
	return "", yard.Errorf(yard.ENOTACCEPTABLE, "An order is available as %s; the Accept header allows none of them.", strings.Join(orderOffers, ", "))
}

// readOrderRequest reads what a write of an order starts with: the media
// type of the answer (orderMedia), then the body (readOrder).
func readOrderRequest(r *http.Request) (string, orderInput, error) {
	media, err := orderMedia(r)
	if err != nil {
		return "", orderInput{}, err
	}
	in, err := readOrder(r)
	return media, in, err
}

// readOrder reads an order body: XML (application/xml or text/xml, UTF-8)
// or JSON (application/json, the default without Content-Type).
func readOrder(r *http.Request) (orderInput, error) {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case ct == "" || err == nil && (mt == mediaJSON || strings.HasSuffix(mt, "+json")):
		return decode[orderInput](r)
	case err != nil:
		return orderInput{}, yard.Errorf(yard.EUNSUPPORTED, "The Content-Type %q does not parse.", ct)
	case mt == mediaXML || mt == mediaTextXML:
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return orderInput{}, yard.Errorf(yard.EUNSUPPORTED, "Send XML in UTF-8, not %q.", cs)
		}
		body, err := readBody(r)
		if err != nil {
			return orderInput{}, err
		}
		return decodeOrderXML(body)
	}
	return orderInput{}, yard.Errorf(yard.EUNSUPPORTED, "Send the order as application/json or application/xml, not %q.", ct)
}

// parseOrderTime reads a timestamp field of an order body; nil when it was
// left out.
func parseOrderTime(raw json.RawMessage, field string, now time.Time) (*time.Time, error) {
	if raw == nil {
		return nil, nil
	}
	t, err := ParseTimestamp(raw, now)
	if err != nil {
		return nil, yard.Invalid("The order has invalid fields.", yard.FieldError{Field: field, Message: err.Error()})
	}
	return &t, nil
}

// writeOrder writes an order in the negotiated media type with its ETag
// (a hash of the body, so each representation has its own) and
// Last-Modified; a GET or HEAD whose validators match answers 304.
func (s *Server) writeOrder(w http.ResponseWriter, r *http.Request, status int, o *yard.Order, media string) {
	body, ct, err := orderBody(o, media)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	writeValidated(w, r, status, ct, body, o.UpdatedAt)
}

// orderBody renders an order in a media type and returns the body and its
// Content-Type.
func orderBody(o *yard.Order, media string) ([]byte, string, error) {
	doc := newOrderDoc(o)
	if media == mediaJSON {
		body, err := marshalJSON(doc)
		return body, mediaJSON, err
	}
	body, err := marshalXML(doc)
	return body, media + "; charset=utf-8", err
}

// orderPreconditions evaluates If-Match (against the entity tag of either
// representation) and If-Unmodified-Since on the stored order (RFC 9110
// §13.1.1, §13.1.4): 412 when they do not hold.
func orderPreconditions(r *http.Request, o *yard.Order) error {
	if im := r.Header.Get("If-Match"); im != "" {
		for _, m := range orderOffers {
			if body, _, err := orderBody(o, m); err == nil && matchesTag(im, etagOfBody(body), false) {
				return nil
			}
		}
		return yard.Errorf(yard.EPRECONDITION, "The order changed since the ETag given in If-Match.")
	}
	if ius := r.Header.Get("If-Unmodified-Since"); ius != "" {
		t, err := http.ParseTime(ius)
		if err != nil {
			return yard.Invalid("If-Unmodified-Since is not an HTTP date.", yard.FieldError{Field: "If-Unmodified-Since", Message: "must be an HTTP date (RFC 9110 §5.6.7)"})
		}
		if o.UpdatedAt.Truncate(time.Second).After(t) {
			return yard.Errorf(yard.EPRECONDITION, "The order changed after %s.", ius)
		}
	}
	return nil
}

// orderNotFound is the answer for an order that does not exist or that the
// caller may not see: customers see only their own orders.
func orderNotFound() error { return yard.Errorf(yard.ENOTFOUND, "Order not found.") }

// visible reports whether the principal may see and change the order.
func visible(p *yard.Principal, o *yard.Order) bool {
	return p.IsAdmin() || o.CustomerID == p.UserID
}

// statusField is the problem of an order status that is none of the three.
func statusField() error {
	return yard.Invalid("Unknown order status.", yard.FieldError{Field: "status", Message: "must be one of placed, shipped, delivered"})
}

// handleCreateOrder creates an order: a customer's is theirs and placed;
// an administrator may give customerId and status. 201 with Location.
func (s *Server) handleCreateOrder(w http.ResponseWriter, r *http.Request) {
	media, in, err := readOrderRequest(r)
	ro := fieldIf(nil, in.ID != nil, "id", "is chosen by the server")
	ro = fieldIf(ro, in.CreatedAt != nil, "createdAt", "is read-only")
	ro = fieldIf(ro, in.UpdatedAt != nil, "updatedAt", "is read-only")
	ro = fieldIf(ro, in.Canceled != nil && *in.Canceled, "canceled", "a new order is not cancelled; cancel it afterwards")
	p := yard.PrincipalFromContext(r.Context())
	switch {
	case err != nil:
	case len(ro) > 0:
		err = yard.Invalid("These fields cannot be set on create.", ro...)
	case in.Status != nil && !yard.ValidOrderStatus(*in.Status):
		err = statusField()
	case in.Status != nil && *in.Status != yard.OrderPlaced && !p.IsAdmin():
		err = yard.Errorf(yard.EFORBIDDEN, "Only an administrator may create an order that is not placed.")
	case in.CustomerID != nil && *in.CustomerID != p.UserID && !p.IsAdmin():
		err = yard.Errorf(yard.EFORBIDDEN, "Only an administrator may place an order for someone else.")
	}
	o := &yard.Order{CustomerID: p.UserID, Status: yard.OrderPlaced}
	setIf(&o.Status, in.Status)
	setIf(&o.CustomerID, in.CustomerID)
	if err == nil {
		err = s.db.orders.CreateOrder(r.Context(), o)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Location", s.url(yard.OrderPath(o.ID)))
	s.writeOrder(w, r, http.StatusCreated, o, media)
}

// handleListOrders pages the caller's orders (an administrator's: all),
// filtered in the car list's grammar on status, canceled and customerId.
func (s *Server) handleListOrders(w http.ResponseWriter, r *http.Request) {
	if negotiate(r.Header.Get("Accept"), mediaJSON) == "" {
		s.error(w, r, yard.Errorf(yard.ENOTACCEPTABLE, "The list of orders is available as %s only; fetch each order for XML.", mediaJSON))
		return
	}
	f, pg, err := yard.ParseOrderQuery(s.grammarQuery(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	p := yard.PrincipalFromContext(r.Context())
	if !p.IsAdmin() {
		f.Customer = &p.UserID
	}
	orders, total, err := s.db.orders.FindOrders(r.Context(), f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	s.writePage(w, r, pageViews(orders, pg, newOrderDoc), total, pg)
}

// handleGetOrder answers an order in JSON or XML by Accept.
func (s *Server) handleGetOrder(w http.ResponseWriter, r *http.Request) {
	media, err := orderMedia(r)
	var o *yard.Order
	if err == nil {
		o, err = s.db.orders.FindOrderByID(r.Context(), r.PathValue("order_id"))
	}
	if err == nil && !visible(yard.PrincipalFromContext(r.Context()), o) {
		err = orderNotFound()
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeOrder(w, r, http.StatusOK, o, media)
}

// handlePutOrder takes the order's representation back (the spec's first
// cancellation): canceled may change, and status for an administrator; any
// other field that differs from the stored order is 409, and fields left
// out keep their stored values. A change the order's state forbids
// (cancelling a shipped order, shipping a cancelled one) is 409.
func (s *Server) handlePutOrder(w http.ResponseWriter, r *http.Request) {
	media, in, err := readOrderRequest(r)
	if err == nil && in.Status != nil && !yard.ValidOrderStatus(*in.Status) {
		err = statusField()
	}
	now := s.db.orders.Clock()
	var created, updated *time.Time
	if err == nil {
		created, err = parseOrderTime(in.CreatedAt, "createdAt", now)
	}
	if err == nil {
		updated, err = parseOrderTime(in.UpdatedAt, "updatedAt", now)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	p := yard.PrincipalFromContext(r.Context())
	s.updateOrder(w, r, media, func(o *yard.Order) error {
		differ := fieldIf(nil, in.ID != nil && *in.ID != o.ID, "id", "differs from the stored order")
		differ = fieldIf(differ, in.CustomerID != nil && *in.CustomerID != o.CustomerID, "customerId", "differs from the stored order")
		differ = fieldIf(differ, in.Status != nil && *in.Status != o.Status && !p.IsAdmin(), "status", "only an administrator may change the status")
		differ = fieldIf(differ, created != nil && !created.Equal(o.CreatedAt), "createdAt", "differs from the stored order (read-only; may be left out)")
		differ = fieldIf(differ, updated != nil && !updated.Equal(o.UpdatedAt), "updatedAt", "differs from the stored order (read-only; may be left out)")
		if len(differ) > 0 {
			return &yard.Error{Code: yard.ECONFLICT, Fields: differ,
				Message: "Only canceled (and, for an administrator, status) can be changed; other fields must be as stored or left out."}
		}
		setIf(&o.Status, in.Status)
		setIf(&o.Canceled, in.Canceled)
		return nil
	})
}

// handleCancelOrder is the spec's simpler cancellation: POST
// /order/{id}/canceled with the body true (JSON or text/plain). The body is
// the value canceled takes, so false on an order that is not cancelled
// changes nothing, and on a cancelled one is 409.
func (s *Server) handleCancelOrder(w http.ResponseWriter, r *http.Request) {
	media, err := orderMedia(r)
	canceled := false
	if err == nil {
		canceled, err = readCanceled(r)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.updateOrder(w, r, media, func(o *yard.Order) error {
		o.Canceled = canceled
		return nil
	})
}

// updateOrder applies change to the order of the path, if the caller may
// see it and the request's preconditions hold, and answers the order.
func (s *Server) updateOrder(w http.ResponseWriter, r *http.Request, media string, change func(*yard.Order) error) {
	p := yard.PrincipalFromContext(r.Context())
	o, err := s.db.orders.UpdateOrder(r.Context(), r.PathValue("order_id"), func(o *yard.Order) error {
		if !visible(p, o) {
			return orderNotFound()
		}
		if err := orderPreconditions(r, o); err != nil {
			return err
		}
		return change(o)
	})
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeOrder(w, r, http.StatusOK, o, media)
}

// readCanceled reads the body of POST /order/{id}/canceled: the JSON
// literal true or false, or the same word as text/plain.
func readCanceled(r *http.Request) (bool, error) {
	notBool := yard.Invalid("The body must be true or false.", yard.FieldError{Field: "canceled", Message: "must be true or false"})
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if ct != "" && err == nil && mt == "text/plain" {
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "us-ascii") {
			return false, yard.Errorf(yard.EUNSUPPORTED, "Send the text in UTF-8, not %q.", cs)
		}
		body, err := readBody(r)
		if err != nil {
			return false, err
		}
		switch strings.TrimSpace(string(body)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, notBool
	}
	if ct != "" && (err != nil || !(mt == mediaJSON || strings.HasSuffix(mt, "+json"))) {
		return false, yard.Errorf(yard.EUNSUPPORTED, "Send true as application/json or text/plain, not %q.", ct)
	}
	v, err := decode[*bool](r)
	if err != nil {
		if yard.ErrorCode(err) == yard.EINVALID {
			return false, notBool
		}
		return false, err
	}
	if v == nil {
		return false, yard.Invalid("The body must be true or false.", yard.FieldError{Field: "canceled", Message: "must be true or false, not null"})
	}
	return *v, nil
}
