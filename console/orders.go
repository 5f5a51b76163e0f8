package console

import (
	"encoding/xml"
	"net/http"
)

// order is an order as GET /order/{order_id} shows it, in JSON and in XML
// (docs/api.md, "Orders").
type order struct {
	XMLName    xml.Name `json:"-" xml:"order"`
	ID         string   `json:"id" xml:"id"`
	CustomerID string   `json:"customerId" xml:"customerId"`
	Status     string   `json:"status" xml:"status"`
	Canceled   bool     `json:"canceled" xml:"canceled"`
	CreatedAt  string   `json:"createdAt,omitempty" xml:"createdAt,omitempty"`
	UpdatedAt  string   `json:"updatedAt,omitempty" xml:"updatedAt,omitempty"`
}

// acceptXML asks for the XML representation.
var acceptXML = map[string]string{"Accept": "application/xml"}

// handleOrders lists the person's orders (GET /orders; administrators:
// all) and places a new one (POST /orders).
func (c *Console) handleOrders(cl *call, w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var o order
		if cl.accepted(cl.do("POST", "/orders", map[string]any{}, nil), &o) {
			cl.notice = "Placed the order " + o.ID + "."
		}
	}
	orders := readList[order](cl, r, "/orders", Prefix+"orders?")
	c.render(w, r, cl, cl.status, "orders", "Orders", orders)
}

type orderPage struct {
	Order order
	JSON  string // the JSON representation, as the API sent it
	XML   string // the XML representation, as the API sent it
	Self  string
}

// handleOrder is one order in both representations, with the two ways to
// cancel it: a PUT of its XML representation with canceled true, or a
// POST of true to its canceled sub-resource. An order that has shipped
// cannot be cancelled: the API's 409 is shown. Administrators move its
// status on (PUT of the JSON representation).
func (c *Console) handleOrder(cl *call, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("order_id")
	api := "/order/" + seg(id)
	if r.Method == http.MethodPost {
		if res := c.orderAction(cl, r, api); !res.ok() {
			cl.refused(res)
		}
	}
	page := orderPage{Self: Prefix + "orders/" + seg(id)}
	res, ok := c.read(w, r, cl, api, &page.Order, "order")
	if !ok {
		return
	}
	page.JSON = string(res.Body)
	if x := cl.do("GET", api, nil, acceptXML); x.ok() {
		page.XML = string(x.Body)
	}
	c.render(w, r, cl, cl.status, "order", "Order", page)
}

// orderAction runs the form's op against the order at api.
func (c *Console) orderAction(cl *call, r *http.Request, api string) result {
	switch r.PostForm.Get("op") {
	case "cancel-put":
		// Read the XML representation, set canceled, put it back.
		x := cl.do("GET", api, nil, acceptXML)
		var o order
		if !x.ok() || xml.Unmarshal(x.Body, &o) != nil {
			return x
		}
		o.Canceled, o.CreatedAt, o.UpdatedAt = true, "", ""
		body, _ := xml.Marshal(o)
		res := cl.do("PUT", api, body, map[string]string{"Content-Type": "application/xml", "Accept": "application/xml"})
		return cl.noteOK(res, "Canceled by a PUT of the XML representation.")
	case "cancel-post":
		return cl.noteOK(cl.do("POST", api+"/canceled", true, nil), "Canceled by a POST to the canceled sub-resource.")
	case "status":
		var o order
		g := cl.do("GET", api, nil, nil)
		if !g.decode(&o) {
			return g
		}
		o.Status, o.CreatedAt, o.UpdatedAt = r.PostForm.Get("status"), "", ""
		return cl.noteOK(cl.do("PUT", api, o, nil), "The order is "+o.Status+".")
	}
	cl.problem = "Unknown action."
	return result{Status: http.StatusBadRequest}
}
