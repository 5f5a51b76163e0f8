package conform

import (
	"encoding/xml"
	"strings"
)

// order places an order as the owner (or, with fields, as the
// administrator for the owner) and returns its Location. Orders cannot
// be deleted through the API: they stay, under the kit's person.
func (t *T) order(fields map[string]any) string {
	who := basic(t.owner())
	body := map[string]any{}
	if fields != nil {
		who = basic(t.k.admin)
		body = fields
		body["customerId"] = t.owner().id
	}
	r := t.Expect(201, "POST", "/orders", who, jsonBody(body))
	return t.Location(r, "/order/"+r.Str("id"))
}

// xmlOrder is the XML form of an order.
type xmlOrder struct {
	XMLName    xml.Name `xml:"order"`
	ID         string   `xml:"id"`
	CustomerID string   `xml:"customerId"`
	Status     string   `xml:"status"`
	Canceled   bool     `xml:"canceled"`
}

func orderChecks() []Check {
	const p, doc = "orders", "docs/api.md#orders"
	xmlType := func(r *Resp) bool {
		mt := r.MediaType()
		return mt == "application/xml" || mt == "text/xml"
	}
	return []Check{
		def(p, "create", Must, doc, "POST /orders {} as a customer",
			`201, Location /order/{id}, the order with status placed, canceled false and customerId the caller`, func(t *T) {
				r := t.Expect(201, "POST", "/orders", basic(t.owner()), jsonBody(map[string]any{}))
				t.Location(r, "/order/"+r.Str("id"))
				t.Check(r.Str("status") == "placed" && r.JSON()["canceled"] == false && r.Str("customerId") == t.owner().id,
					"the new order %s, want placed, not canceled, of %s", r.Body, t.owner().id)
			}),
		def(p, "xml", Must, doc, "GET /order/{id} with Accept: application/xml",
			"200 application/xml, <order> with id, customerId, status and canceled", func(t *T) {
				loc := t.order(nil)
				r := t.Expect(200, "GET", loc, basic(t.owner()), header("Accept", "application/xml"))
				t.Check(xmlType(r), "Content-Type %q, want application/xml", r.Header.Get("Content-Type"))
				var o xmlOrder
				t.Check(xml.Unmarshal(r.Body, &o) == nil && o.ID != "" && o.Status == "placed" && o.CustomerID == t.owner().id, "the XML order %s", r.Body)
			}),
		def(p, "vary", Should, doc, "GET /order/{id} as JSON and as XML",
			"Vary naming Accept, and an ETag per representation (they differ)", func(t *T) {
				loc := t.order(nil)
				j := t.Do("GET", loc, basic(t.owner()), header("Accept", "application/json"))
				x := t.Do("GET", loc, basic(t.owner()), header("Accept", "application/xml"))
				t.Check(strings.Contains(j.Header.Get("Vary"), "Accept"), "Vary %q does not name Accept", j.Header.Get("Vary"))
				t.Check(j.Header.Get("ETag") != "" && x.Header.Get("ETag") != "" && j.Header.Get("ETag") != x.Header.Get("ETag"), "ETags %q (JSON) and %q (XML), want two different ones", j.Header.Get("ETag"), x.Header.Get("ETag"))
			}),
		def(p, "not-acceptable", Must, doc, "GET /order/{id} with Accept: image/png",
			"406 problem", func(t *T) {
				t.Expect(406, "GET", t.order(nil), basic(t.owner()), header("Accept", "image/png"))
			}),
		def(p, "cancel-put-xml", Must, doc, "PUT /order/{id} <order><canceled>true</canceled></order> as application/xml",
			"200 with the order, canceled true, in XML", func(t *T) {
				loc := t.order(nil)
				r := t.Expect(200, "PUT", loc, basic(t.owner()), rawBody("application/xml", []byte(`<order><canceled>true</canceled></order>`)))
				var o xmlOrder
				t.Check(xmlType(r) && xml.Unmarshal(r.Body, &o) == nil && o.Canceled, "the answer %q %s, want the cancelled order in XML", r.Header.Get("Content-Type"), r.Body)
			}),
		def(p, "cancel-put-json", Must, doc, `PUT /order/{id} {"canceled":true} as JSON`,
			"200 with canceled true", func(t *T) {
				r := t.Expect(200, "PUT", t.order(nil), basic(t.owner()), jsonBody(map[string]any{"canceled": true}))
				t.Check(r.JSON()["canceled"] == true, "canceled %v, want true", r.JSON()["canceled"])
			}),
		def(p, "cancel-post", Must, doc, "POST /order/{id}/canceled with the body true, then GET",
			"200 with canceled true; the order reads canceled", func(t *T) {
				loc := t.order(nil)
				r := t.Expect(200, "POST", loc+"/canceled", basic(t.owner()), rawBody("application/json", []byte("true")))
				t.Check(r.JSON()["canceled"] == true, "canceled %v, want true", r.JSON()["canceled"])
				g := t.Do("GET", loc, basic(t.owner()))
				t.Check(g.JSON()["canceled"] == true, "the order reads canceled %v", g.JSON()["canceled"])
			}),
		def(p, "cancel-twice", Must, doc, "cancel a cancelled order again (POST …/canceled true)",
			"200, still canceled", func(t *T) {
				loc := t.order(nil)
				t.Expect(200, "POST", loc+"/canceled", basic(t.owner()), rawBody("application/json", []byte("true")))
				r := t.Expect(200, "POST", loc+"/canceled", basic(t.owner()), rawBody("application/json", []byte("true")))
				t.Check(r.JSON()["canceled"] == true, "canceled %v", r.JSON()["canceled"])
			}),
		def(p, "shipped-409", Must, doc, "an administrator places a shipped order for the customer; the customer cancels it both ways",
			"409 problem with a detail, for the PUT and the POST; the order stays not canceled", func(t *T) {
				loc := t.order(map[string]any{"status": "shipped"})
				r := t.Do("PUT", loc, basic(t.owner()), jsonBody(map[string]any{"canceled": true}))
				t.Problem(r, 409, "conflict")
				t.Check(r.Str("detail") != "", "the 409 says nothing")
				t.Problem(t.Do("POST", loc+"/canceled", basic(t.owner()), rawBody("application/json", []byte("true"))), 409, "conflict")
				g := t.Do("GET", loc, basic(t.owner()))
				t.Check(g.JSON()["canceled"] == false, "the shipped order reads canceled %v", g.JSON()["canceled"])
			}),
		def(p, "other-field-409", Must, doc, `PUT /order/{id} {"canceled":true,"customerId":<another>}`,
			"409 problem naming customerId", func(t *T) {
				t.Problem(t.Do("PUT", t.order(nil), basic(t.owner()), jsonBody(map[string]any{"canceled": true, "customerId": t.other().id})), 409, "conflict", "customerId")
			}),
		def(p, "xml-problem", Must, doc, "PUT /order/{id} with malformed XML (application/xml)",
			"400 as application/problem+xml", func(t *T) {
				r := t.Expect(400, "PUT", t.order(nil), basic(t.owner()), rawBody("application/xml", []byte(`<order><canceled>true</order>`)))
				t.Check(r.MediaType() == "application/problem+xml", "Content-Type %q, want application/problem+xml", r.Header.Get("Content-Type"))
				t.Check(strings.Contains(string(r.Body), "<problem"), "the body is not a <problem>")
			}),
		def(p, "others-orders", Must, doc, "GET another customer's order",
			"404, as for a missing one", func(t *T) {
				t.Problem(t.Do("GET", t.order(nil), basic(t.other())), 404, "not-found")
			}),
		def(p, "needs-credentials", Must, doc, "GET /orders without credentials",
			"401", func(t *T) {
				t.Expect(401, "GET", "/orders")
			}),
		def(p, "list-filter", Should, doc, "GET /orders?canceled=true as the customer, after cancelling one of two new orders",
			"a page of the customer's orders; the filter counts the cancelled one", func(t *T) {
				before := t.total("/orders?canceled=true", basic(t.owner()))
				loc := t.order(nil)
				t.order(nil)
				t.Expect(200, "POST", loc+"/canceled", basic(t.owner()), rawBody("application/json", []byte("true")))
				got := t.total("/orders?canceled=true", basic(t.owner()))
				t.Check(got == before+1, "canceled=true total %v, want %v", got, before+1)
			}),
	}
}
