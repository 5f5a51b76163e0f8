package httpapi_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// xmlOrder is an order's XML representation as a client reads it.
type xmlOrder struct {
	XMLName    xml.Name `xml:"order"`
	ID         string   `xml:"id"`
	CustomerID string   `xml:"customerId"`
	Status     string   `xml:"status"`
	Canceled   bool     `xml:"canceled"`
	CreatedAt  string   `xml:"createdAt"`
	UpdatedAt  string   `xml:"updatedAt"`
}

// xmlProblem is an RFC 9457 appendix B problem as a client reads it.
type xmlProblem struct {
	XMLName xml.Name `xml:"urn:ietf:rfc:7807 problem"`
	Type    string   `xml:"type"`
	Title   string   `xml:"title"`
	Status  int      `xml:"status"`
	Detail  string   `xml:"detail"`
	Errors  []struct {
		Field   string `xml:"field"`
		Message string `xml:"message"`
	} `xml:"errors>i"`
}

// orderEnv is a running API with an admin (root), two customers (alice,
// bob) and helpers for orders.
type orderEnv struct {
	*apitest.Env
	t                 *testing.T
	alice, bob, admin *yard.User
}

func newOrderEnv(t *testing.T, db *store.DB) *orderEnv {
	env := apitest.Start(t, db)
	e := &orderEnv{Env: env, t: t}
	e.admin = env.CreateUser("root", pw, yard.RoleAdmin, yard.RoleUser)
	e.alice = env.CreateUser("alice", pw)
	e.bob = env.CreateUser("bob", pw)
	return e
}

// as sends a request as user with the headers (Content-Type among them).
func (e *orderEnv) as(user, method, path, body string, headers ...string) *apitest.Response {
	e.t.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	req := apitest.Request{Method: method, Path: path, Headers: h}
	if body != "" {
		req.Body = body
	}
	if user != "" {
		req.User, req.Password = user, pw
	}
	return e.Do(req)
}

// create places an order for alice in JSON and returns its id.
func (e *orderEnv) create(user string, body string) string {
	e.t.Helper()
	resp := e.as(user, "POST", "/orders", body)
	if resp.StatusCode != 201 {
		e.t.Fatalf("create order: got %d %s", resp.StatusCode, resp.Body)
	}
	return resp.Map(e.t)["id"].(string)
}

func (e *orderEnv) stored(id string) *yard.Order {
	e.t.Helper()
	o, err := e.DB.FindOrderByID(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

func (e *orderEnv) count() int {
	e.t.Helper()
	_, n, err := e.DB.FindOrders(e.t.Context(), yard.OrderFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// wantProblem checks an error answer: its status, its format (XML or
// JSON problem details) and that its body holds each substring.
func wantProblem(t *testing.T, resp *apitest.Response, status int, xmlForm bool, subs ...string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status: got %d, want %d; body %s", resp.StatusCode, status, resp.Body)
	}
	ct := resp.Header.Get("Content-Type")
	if xmlForm {
		if !strings.HasPrefix(ct, "application/problem+xml") {
			t.Fatalf("Content-Type: got %q, want application/problem+xml; body %s", ct, resp.Body)
		}
		var p xmlProblem
		if err := xml.Unmarshal(resp.Body, &p); err != nil || p.Status != status || !strings.Contains(p.Type, "/problems/") || p.Title == "" {
			t.Fatalf("problem+xml: got %+v, %v from %s", p, err, resp.Body)
		}
	} else if ct != "application/problem+json" {
		t.Fatalf("Content-Type: got %q, want application/problem+json; body %s", ct, resp.Body)
	}
	for _, s := range subs {
		if !strings.Contains(string(resp.Body), s) {
			t.Errorf("body: got %s, want it to contain %q", resp.Body, s)
		}
	}
}

func readXMLOrder(t *testing.T, resp *apitest.Response) xmlOrder {
	t.Helper()
	var o xmlOrder
	if err := xml.Unmarshal(resp.Body, &o); err != nil {
		t.Fatalf("XML order: %v in %s", err, resp.Body)
	}
	return o
}

const xmlCT = "application/xml"

func TestOrdersCreateAndRead(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := newOrderEnv(t, db)

		// A customer's {} and <order/> place orders for themself.
		resp := e.as("alice", "POST", "/orders", `{}`)
		if resp.StatusCode != 201 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("JSON create: got %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body)
		}
		o := resp.Map(t)
		id := o["id"].(string)
		if o["customerId"] != e.alice.ID || o["status"] != "placed" || o["canceled"] != false || o["createdAt"] == nil {
			t.Fatalf("JSON create: got %v", o)
		}
		if loc := resp.Header.Get("Location"); loc != e.URL+"/order/"+id {
			t.Fatalf("Location: got %q", loc)
		}
		resp = e.as("alice", "POST", "/orders", `<?xml version="1.0" encoding="UTF-8"?><order/>`, "Content-Type", xmlCT)
		if resp.StatusCode != 201 || !strings.HasPrefix(resp.Header.Get("Content-Type"), xmlCT) {
			t.Fatalf("XML create: got %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body)
		}
		xo := readXMLOrder(t, resp)
		if xo.CustomerID != e.alice.ID || xo.Status != "placed" || xo.Canceled || resp.Header.Get("Location") != e.URL+"/order/"+xo.ID {
			t.Fatalf("XML create: got %+v", xo)
		}
		// text/xml in, JSON out when Accept says so.
		resp = e.as("alice", "POST", "/orders", "<order>\n  <status>placed</status>\n</order>", "Content-Type", "text/xml", "Accept", "application/json")
		if resp.StatusCode != 201 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("text/xml create: got %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}

		// An administrator gives customerId and status, in JSON and in XML.
		resp = e.as("root", "POST", "/orders", fmt.Sprintf(`{"customerId":%q,"status":"shipped"}`, e.bob.ID))
		if m := resp.Map(t); resp.StatusCode != 201 || m["customerId"] != e.bob.ID || m["status"] != "shipped" {
			t.Fatalf("admin JSON create: %d %s", resp.StatusCode, resp.Body)
		}
		resp = e.as("root", "POST", "/orders", "<order><customerId>"+e.bob.ID+"</customerId><status>delivered</status><canceled>false</canceled></order>", "Content-Type", xmlCT)
		if x := readXMLOrder(t, resp); resp.StatusCode != 201 || x.CustomerID != e.bob.ID || x.Status != "delivered" {
			t.Fatalf("admin XML create: %d %s", resp.StatusCode, resp.Body)
		}
		before := e.count()
		for _, tc := range []struct {
			name, user, body, ct string
			status               int
			subs                 []string
		}{
			{"customer ships on create", "alice", `{"status":"shipped"}`, "", 403, nil},
			{"customer ships on create (XML)", "alice", `<order><status>shipped</status></order>`, xmlCT, 403, nil},
			{"customer orders for another", "alice", fmt.Sprintf(`{"customerId":%q}`, e.bob.ID), "", 403, nil},
			{"customer orders for another (XML)", "alice", "<order><customerId>" + e.bob.ID + "</customerId></order>", xmlCT, 403, nil},
			{"unknown customer", "root", `{"customerId":"ghost"}`, "", 400, []string{"customerId"}},
			{"unknown status", "alice", `{"status":"lost"}`, "", 400, []string{`"field":"status"`}},
			{"unknown status (XML)", "alice", `<order><status>lost</status></order>`, xmlCT, 400, []string{"<field>status</field>"}},
			{"id on create", "alice", `{"id":"mine"}`, "", 400, []string{`"field":"id"`}},
			{"id on create (XML)", "alice", `<order><id>mine</id></order>`, xmlCT, 400, []string{"<field>id</field>"}},
			{"cancelled on create", "alice", `{"canceled":true}`, "", 400, []string{"canceled"}},
			{"unknown field", "alice", `{"colour":"red"}`, "", 400, []string{`"field":"colour"`}},
			{"unknown element", "alice", `<order><colour>red</colour></order>`, xmlCT, 400, []string{"<field>colour</field>"}},
			{"form body", "alice", `status=placed`, "application/x-www-form-urlencoded", 415, nil},
			{"XML in Latin-1", "alice", `<order/>`, "application/xml; charset=iso-8859-1", 415, nil},
			{"no credentials", "", `{}`, "", 401, nil},
			{"no credentials (XML)", "", `<order/>`, xmlCT, 401, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var h []string
				if tc.ct != "" {
					h = []string{"Content-Type", tc.ct}
				}
				resp := e.as(tc.user, "POST", "/orders", tc.body, h...)
				wantProblem(t, resp, tc.status, strings.Contains(tc.ct, "xml"), tc.subs...)
			})
		}
		if n := e.count(); n != before {
			t.Fatalf("refused creates stored orders: %d, want %d", n, before)
		}

		// Content negotiation with q-values.
		for _, path := range []string{"/order/" + id, "/orders/" + id} {
			for _, tc := range []struct {
				accept, want string
			}{
				{"", "application/json"},
				{"application/json", "application/json"},
				{"application/xml", "application/xml"},
				{"text/xml", "text/xml"},
				{"*/*", "application/json"},
				{"text/*", "text/xml"},
				{"application/*;q=0.5, text/xml", "text/xml"},
				{"application/json;q=0.5, application/xml", "application/xml"},
				{"application/xml;q=0.1, application/json;q=0.9", "application/json"},
				{"application/json;q=0, */*;q=0.1", "application/xml"},
				{"text/html, application/xhtml+xml, application/xml;q=0.9, */*;q=0.8", "application/xml"},
				{"image/png", "406"},
				{"application/json;q=0, application/xml;q=0, text/xml;q=0", "406"},
			} {
				resp := e.as("alice", "GET", path, "", "Accept", tc.accept)
				if tc.want == "406" {
					wantProblem(t, resp, 406, false, "application/json, application/xml, text/xml")
					continue
				}
				ct := resp.Header.Get("Content-Type")
				if resp.StatusCode != 200 || !strings.HasPrefix(ct, tc.want) || resp.Header.Get("Vary") != "Accept" {
					t.Fatalf("%s Accept %q: got %d %q, want %s", path, tc.accept, resp.StatusCode, ct, tc.want)
				}
				if tc.want != "application/json" {
					if x := readXMLOrder(t, resp); x.ID != id || x.CustomerID != e.alice.ID || x.Status != "placed" {
						t.Fatalf("XML: %+v", x)
					}
				} else if resp.Map(t)["id"] != id {
					t.Fatalf("JSON: %s", resp.Body)
				}
			}
		}
		// Errors follow the format the client accepts.
		wantProblem(t, e.as("alice", "GET", "/order/nope", "", "Accept", "application/xml"), 404, true)
		wantProblem(t, e.as("alice", "GET", "/order/nope", "", "Accept", "application/json, application/xml;q=0.5"), 404, false)
		wantProblem(t, e.as("", "GET", "/order/"+id, "", "Accept", "text/xml"), 401, true, "unauthorized")
		wantProblem(t, e.as("alice", "GET", "/orders?status=lost", "", "Accept", "application/xml, application/json;q=0.1"), 400, true, "<field>status</field>")

		// Validators: each representation has its own ETag; both answer 304.
		j := e.as("alice", "GET", "/order/"+id, "")
		x := e.as("alice", "GET", "/order/"+id, "", "Accept", xmlCT)
		if j.Header.Get("ETag") == "" || j.Header.Get("ETag") == x.Header.Get("ETag") || !strings.HasSuffix(j.Header.Get("Last-Modified"), "GMT") {
			t.Fatalf("ETags: JSON %q, XML %q", j.Header.Get("ETag"), x.Header.Get("ETag"))
		}
		if r := e.as("alice", "GET", "/order/"+id, "", "Accept", xmlCT, "If-None-Match", x.Header.Get("ETag")); r.StatusCode != 304 {
			t.Fatalf("If-None-Match (XML): got %d", r.StatusCode)
		}
		if r := e.as("alice", "GET", "/order/"+id, "", "Accept", xmlCT, "If-None-Match", j.Header.Get("ETag")); r.StatusCode != 200 {
			t.Fatalf("the JSON ETag matched the XML representation: %d", r.StatusCode)
		}
		if r := e.as("alice", "GET", "/order/"+id, "", "If-Modified-Since", j.Header.Get("Last-Modified")); r.StatusCode != 304 {
			t.Fatalf("If-Modified-Since: got %d", r.StatusCode)
		}
		if r := e.as("alice", "HEAD", "/order/"+id, "", "Accept", xmlCT); r.StatusCode != 200 || len(r.Body) != 0 || r.Header.Get("ETag") != x.Header.Get("ETag") {
			t.Fatalf("HEAD: got %d %q", r.StatusCode, r.Header.Get("ETag"))
		}

		// Ownership: another customer gets 404, an administrator sees all.
		wantProblem(t, e.as("bob", "GET", "/order/"+id, ""), 404, false)
		wantProblem(t, e.as("bob", "GET", "/order/"+id, "", "Accept", xmlCT), 404, true)
		if r := e.as("root", "GET", "/order/"+id, ""); r.StatusCode != 200 {
			t.Fatalf("admin reads an order: %d", r.StatusCode)
		}
	})
}

func TestOrdersList(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := newOrderEnv(t, db)
		a1 := e.create("alice", `{}`)
		a2 := e.create("alice", `{}`)
		b1 := e.create("bob", `{}`)
		s1 := e.create("root", fmt.Sprintf(`{"customerId":%q,"status":"shipped"}`, e.alice.ID))
		if r := e.as("alice", "POST", "/order/"+a2+"/canceled", "true"); r.StatusCode != 200 {
			t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
		}
		ids := func(user, query string) []string {
			t.Helper()
			resp := e.as(user, "GET", "/orders"+query, "")
			if resp.StatusCode != 200 {
				t.Fatalf("list %s: %d %s", query, resp.StatusCode, resp.Body)
			}
			var page struct {
				Items []struct{ ID string }
				Total int
			}
			resp.JSON(t, &page)
			var out []string
			for _, it := range page.Items {
				out = append(out, it.ID)
			}
			if page.Total != len(out) {
				t.Fatalf("list %s: total %d, %d items", query, page.Total, len(out))
			}
			return out
		}
		for _, tc := range []struct {
			user, query string
			want        []string
		}{
			{"alice", "", []string{a1, a2, s1}},
			{"bob", "", []string{b1}},
			{"root", "", []string{a1, a2, b1, s1}},
			{"alice", "?canceled=true", []string{a2}},
			{"alice", "?canceled=false;status=placed", []string{a1}},
			{"alice", "?status=!placed", []string{s1}},
			{"root", "?q.status.eq=placed&q.canceled.ne=true", []string{a1, b1}},
			{"root", "?status=placed,shipped&customerId=" + e.alice.ID, []string{a1, a2, s1}},
			{"bob", "?customerId=" + e.alice.ID, nil},
		} {
			if got := ids(tc.user, tc.query); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s %s: got %v, want %v", tc.user, tc.query, got, tc.want)
			}
		}
		resp := e.as("root", "GET", "/orders?max=2&offset=2", "")
		if !strings.Contains(resp.Header.Get("Link"), `offset=0&max=2>; rel="prev"`) || resp.Map(t)["total"] != 4.0 {
			t.Fatalf("paging: %q %s", resp.Header.Get("Link"), resp.Body)
		}
		wantProblem(t, e.as("alice", "GET", "/orders?status=lost", ""), 400, false, `"field":"status"`)
		wantProblem(t, e.as("alice", "GET", "/orders?colour=red", ""), 400, false, "colour")
		wantProblem(t, e.as("alice", "GET", "/orders", "", "Accept", "application/xml"), 406, true)
		// A method the orders do not take is refused in XML too (a route
		// marked handleXML speaks XML whatever fails); another resource
		// answers JSON whatever the client accepts.
		wantProblem(t, e.as("alice", "DELETE", "/orders", "", "Accept", "application/xml"), 405, true)
		wantProblem(t, e.as("alice", "DELETE", "/v1/dogs", "", "Accept", "application/xml"), 405, false)
		wantProblem(t, e.as("", "GET", "/orders", ""), 401, false)
	})
}

func TestOrdersCancel(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := newOrderEnv(t, db)

		// PUT with JSON: the representation read with GET, canceled true.
		id := e.create("alice", `{}`)
		got := e.as("alice", "GET", "/order/"+id, "").Map(t)
		got["canceled"] = true
		body := fmt.Sprintf(`{"id":%q,"customerId":%q,"status":"placed","canceled":true,"createdAt":%q,"updatedAt":%q}`,
			id, e.alice.ID, got["createdAt"], got["updatedAt"])
		resp := e.as("alice", "PUT", "/order/"+id, body)
		if m := resp.Map(t); resp.StatusCode != 200 || m["canceled"] != true || m["status"] != "placed" {
			t.Fatalf("PUT cancel: %d %s", resp.StatusCode, resp.Body)
		}
		first := e.stored(id)
		// Cancelling twice is fine and changes nothing.
		resp = e.as("alice", "PUT", "/order/"+id, `{"canceled":true}`)
		if resp.StatusCode != 200 || e.stored(id).UpdatedAt != first.UpdatedAt {
			t.Fatalf("PUT cancel again: %d %s", resp.StatusCode, resp.Body)
		}
		resp = e.as("alice", "POST", "/order/"+id+"/canceled", "true")
		if resp.StatusCode != 200 || resp.Map(t)["canceled"] != true {
			t.Fatalf("POST cancel of a cancelled order: %d %s", resp.StatusCode, resp.Body)
		}
		// A cancelled order cannot be shipped, nor reinstated.
		wantProblem(t, e.as("root", "PUT", "/order/"+id, `{"status":"shipped"}`), 409, false, "cancelled")
		wantProblem(t, e.as("root", "PUT", "/order/"+id, `<order><status>shipped</status></order>`, "Content-Type", xmlCT), 409, true, "cancelled")
		wantProblem(t, e.as("alice", "POST", "/order/"+id+"/canceled", "false"), 409, false, "reinstated")
		if o := e.stored(id); !o.Canceled || o.Status != "placed" {
			t.Fatalf("refused changes changed the order: %+v", o)
		}

		// PUT with XML, the spec's form, at both paths.
		for _, path := range []string{"/order/", "/orders/"} {
			xid := e.create("alice", `{}`)
			x := readXMLOrder(t, e.as("alice", "GET", path+xid, "", "Accept", xmlCT))
			x.Canceled = true
			raw, _ := xml.Marshal(x)
			resp = e.as("alice", "PUT", path+xid, string(raw), "Content-Type", xmlCT)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), xmlCT) || !readXMLOrder(t, resp).Canceled {
				t.Fatalf("XML PUT cancel: %d %s", resp.StatusCode, resp.Body)
			}
			resp = e.as("alice", "PUT", path+xid, "<order><id>"+xid+"</id><customerId>"+e.alice.ID+"</customerId><status>placed</status><canceled>true</canceled></order>", "Content-Type", xmlCT)
			if resp.StatusCode != 200 || !readXMLOrder(t, resp).Canceled {
				t.Fatalf("XML PUT cancel again, without timestamps: %d %s", resp.StatusCode, resp.Body)
			}
		}

		// POST /canceled: JSON true and text/plain true.
		for _, tc := range []struct{ path, body, ct string }{
			{"/order/%s/canceled", "true", "application/json"},
			{"/orders/%s/canceled", "true\n", "text/plain"},
			{"/order/%s/canceled", " true ", "text/plain; charset=utf-8"},
		} {
			cid := e.create("alice", `{}`)
			resp = e.as("alice", "POST", fmt.Sprintf(tc.path, cid), tc.body, "Content-Type", tc.ct)
			if resp.StatusCode != 200 || resp.Map(t)["canceled"] != true || !e.stored(cid).Canceled {
				t.Fatalf("POST canceled %q as %s: %d %s", tc.body, tc.ct, resp.StatusCode, resp.Body)
			}
		}
		cid := e.create("alice", `{}`)
		resp = e.as("alice", "POST", "/order/"+cid+"/canceled", "true", "Content-Type", "text/plain", "Accept", "text/xml")
		if resp.StatusCode != 200 || !readXMLOrder(t, resp).Canceled {
			t.Fatalf("POST canceled answered in XML: %d %s", resp.StatusCode, resp.Body)
		}

		// Too late: a shipped or delivered order cannot be cancelled (409,
		// saying why), by either variant and in either format.
		shipped := e.create("alice", `{}`)
		resp = e.as("root", "PUT", "/order/"+shipped, `<order><status>shipped</status></order>`, "Content-Type", xmlCT)
		if resp.StatusCode != 200 || readXMLOrder(t, resp).Status != "shipped" {
			t.Fatalf("admin ships: %d %s", resp.StatusCode, resp.Body)
		}
		delivered := e.create("root", fmt.Sprintf(`{"customerId":%q,"status":"delivered"}`, e.alice.ID))
		for _, oid := range []string{shipped, delivered} {
			before := e.stored(oid)
			wantProblem(t, e.as("alice", "POST", "/order/"+oid+"/canceled", "true"), 409, false, "can no longer be cancelled", before.Status)
			wantProblem(t, e.as("alice", "POST", "/order/"+oid+"/canceled", "true", "Content-Type", "text/plain", "Accept", xmlCT), 409, true, "can no longer be cancelled")
			wantProblem(t, e.as("alice", "PUT", "/order/"+oid, `{"canceled":true}`), 409, false, "can no longer be cancelled")
			wantProblem(t, e.as("alice", "PUT", "/order/"+oid, `<order><canceled>true</canceled></order>`, "Content-Type", xmlCT), 409, true, "can no longer be cancelled")
			wantProblem(t, e.as("root", "PUT", "/order/"+oid, `{"canceled":true}`), 409, false, "can no longer be cancelled")
			if after := e.stored(oid); *after != *before {
				t.Fatalf("a refused cancel changed the order: %+v, was %+v", after, before)
			}
		}
		wantProblem(t, e.as("root", "PUT", "/order/"+delivered, `{"status":"placed"}`), 409, false, "forward")

		// PUT: fields other than canceled must be as stored.
		pid := e.create("alice", `{}`)
		for _, tc := range []struct {
			name, user, body, ct string
			status               int
			subs                 []string
		}{
			{"other customer", "alice", fmt.Sprintf(`{"customerId":%q,"canceled":true}`, e.bob.ID), "", 409, []string{`"field":"customerId"`}},
			{"other customer (XML)", "alice", "<order><customerId>" + e.bob.ID + "</customerId><canceled>true</canceled></order>", xmlCT, 409, []string{"<field>customerId</field>"}},
			{"other id", "alice", `{"id":"another","canceled":true}`, "", 409, []string{`"field":"id"`}},
			{"customer ships", "alice", `{"status":"shipped"}`, "", 409, []string{`"field":"status"`}},
			{"customer ships (XML)", "alice", `<order><status>shipped</status></order>`, xmlCT, 409, []string{"<field>status</field>"}},
			{"stale updatedAt", "alice", `{"canceled":true,"updatedAt":"2001-01-01T00:00:00Z"}`, "", 409, []string{`"field":"updatedAt"`}},
			{"stale createdAt (XML)", "alice", `<order><createdAt>2001-01-01T00:00:00Z</createdAt><canceled>true</canceled></order>`, xmlCT, 409, []string{"<field>createdAt</field>"}},
			{"unknown status", "root", `{"status":"lost"}`, "", 400, []string{`"field":"status"`}},
			{"unknown status (XML)", "root", `<order><status>lost</status></order>`, xmlCT, 400, []string{"<field>status</field>"}},
			{"canceled is not a boolean", "alice", `{"canceled":"yes"}`, "", 400, []string{"canceled"}},
			{"canceled is not a boolean (XML)", "alice", `<order><canceled>yes</canceled></order>`, xmlCT, 400, []string{"<field>canceled</field>"}},
			{"bad timestamp", "alice", `{"updatedAt":"yesterday"}`, "", 400, []string{"updatedAt"}},
			{"another's order", "bob", `{"canceled":true}`, "", 404, nil},
			{"another's order (XML)", "bob", `<order><canceled>true</canceled></order>`, xmlCT, 404, nil},
			{"stale If-Match", "alice", `{"canceled":true}`, "", 412, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := []string{}
				if tc.ct != "" {
					h = append(h, "Content-Type", tc.ct)
				}
				if tc.status == 412 {
					h = append(h, "If-Match", `"stale"`)
				}
				wantProblem(t, e.as(tc.user, "PUT", "/order/"+pid, tc.body, h...), tc.status, tc.ct == xmlCT, tc.subs...)
			})
		}
		for _, tc := range []struct {
			name, user, body, ct string
			status               int
		}{
			{"another's order", "bob", "true", "", 404},
			{"not a boolean", "alice", `"true"`, "", 400},
			{"null", "alice", `null`, "", 400},
			{"not a word", "alice", "yes", "text/plain", 400},
			{"XML body", "alice", "<canceled>true</canceled>", xmlCT, 415},
			{"no credentials", "", "true", "", 401},
		} {
			t.Run("POST canceled: "+tc.name, func(t *testing.T) {
				var h []string
				if tc.ct != "" {
					h = []string{"Content-Type", tc.ct}
				}
				wantProblem(t, e.as(tc.user, "POST", "/order/"+pid+"/canceled", tc.body, h...), tc.status, tc.ct == xmlCT)
			})
		}
		if o := e.stored(pid); o.Canceled || o.Status != "placed" {
			t.Fatalf("refused PUTs changed the order: %+v", o)
		}
		wantProblem(t, e.as("alice", "PUT", "/order/nope", `{"canceled":true}`), 404, false)

		// If-Match with the ETag of either representation.
		etag := e.as("alice", "GET", "/order/"+pid, "", "Accept", "text/xml").Header.Get("ETag")
		resp = e.as("alice", "PUT", "/order/"+pid, `{"canceled":true}`, "If-Match", etag)
		if resp.StatusCode != 200 {
			t.Fatalf("If-Match with the XML ETag: %d %s", resp.StatusCode, resp.Body)
		}
		// The answer's format is checked before anything is applied.
		nid := e.create("alice", `{}`)
		wantProblem(t, e.as("alice", "POST", "/order/"+nid+"/canceled", "true", "Accept", "image/png"), 406, false)
		if e.stored(nid).Canceled {
			t.Fatal("a 406 answer cancelled the order")
		}
	})
}

// TestOrdersHostileXML sends bodies meant to exhaust or trick an XML
// parser: each is refused, and nothing is stored or changed.
func TestOrdersHostileXML(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := newOrderEnv(t, db)
		id := e.create("alice", `{}`)
		before, n := e.stored(id), e.count()
		laughs := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
			`<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><order><status>&lol3;</status></order>`
		deep := "<order><status>" + strings.Repeat("<a>", 10000) + strings.Repeat("</a>", 10000) + "</status></order>"
		for _, tc := range []struct {
			name, body string
			status     int
			sub        string
		}{
			{"billion laughs", laughs, 400, "DOCTYPE"},
			{"external entity", `<?xml version="1.0"?><!DOCTYPE order [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><order><customerId>&xxe;</customerId><canceled>true</canceled></order>`, 400, "DOCTYPE"},
			{"undeclared entity", `<order><customerId>&xxe;</customerId></order>`, 400, "entity"},
			{"10,000-deep nesting", deep, 400, "nested"},
			{"deep root", strings.Repeat("<order>", 10000), 400, "is not a field of an order"},
			{"unknown element", `<order><colour>red</colour></order>`, 400, "colour"},
			{"unknown root", `<cart/>`, 400, "root element"},
			{"second root", `<order/><order/>`, 400, "second root"},
			{"text outside fields", `<order>hello<canceled>true</canceled></order>`, 400, "text outside"},
			{"text in a boolean", `<order><canceled>maybe</canceled></order>`, 400, "canceled"},
			{"element in a boolean", `<order><canceled><b>true</b></canceled></order>`, 400, "nested"},
			{"repeated field", `<order><canceled>true</canceled><canceled>false</canceled></order>`, 400, "twice"},
			{"processing instruction", `<order><?php system("id"); ?><canceled>true</canceled></order>`, 400, "processing instruction"},
			{"attribute", `<order canceled="true"/>`, 400, "attributes"},
			{"name space", `<o:order xmlns:o="urn:x"/>`, 400, "name space"},
			{"declared encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><order/>`, 400, "only UTF-8 is read"},
			{"unclosed", `<order><canceled>true</canceled>`, 400, "line"},
			{"empty", ` `, 400, "empty"},
			{"2 MiB", "<order>" + strings.Repeat(" ", 2<<20) + "</order>", 413, "too-large"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantProblem(t, e.as("alice", "POST", "/orders", tc.body, "Content-Type", xmlCT), tc.status, true, tc.sub)
				wantProblem(t, e.as("alice", "PUT", "/order/"+id, tc.body, "Content-Type", xmlCT), tc.status, true, tc.sub)
			})
		}
		// 2 MiB without a Content-Length is cut off while reading.
		req, _ := http.NewRequest("POST", e.URL+"/orders", io.MultiReader(strings.NewReader("<order>"), bytes.NewReader(bytes.Repeat([]byte(" "), 2<<20)), strings.NewReader("</order>")))
		req.Header.Set("Content-Type", xmlCT)
		req.SetBasicAuth("alice", pw)
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 || req.ContentLength > 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+xml") {
			t.Fatalf("chunked 2 MiB: got %d %q (length %d)", resp.StatusCode, resp.Header.Get("Content-Type"), req.ContentLength)
		}
		if after := e.stored(id); *after != *before || e.count() != n {
			t.Fatalf("hostile bodies changed the store: %+v (was %+v), %d orders (was %d)", after, before, e.count(), n)
		}
	})
}

// TestOrdersCancelShipRace cancels (the customer) and ships (an
// administrator) the same order at once through the API: exactly one wins,
// the other is 409.
func TestOrdersCancelShipRace(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		e := newOrderEnv(t, db)
		wins := map[string]int{}
		for i := range 12 {
			id := e.create("alice", `{}`)
			var wg sync.WaitGroup
			start := make(chan struct{})
			var cancel, ship *apitest.Response
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					cancel = e.as("alice", "POST", "/order/"+id+"/canceled", "true")
				} else {
					cancel = e.as("alice", "PUT", "/order/"+id, `<order><canceled>true</canceled></order>`, "Content-Type", xmlCT)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				ship = e.as("root", "PUT", "/order/"+id, `{"status":"shipped"}`)
			}()
			close(start)
			wg.Wait()
			o := e.stored(id)
			switch {
			case cancel.StatusCode == 200 && ship.StatusCode == 409:
				wins["cancel"]++
				if !o.Canceled || o.Status != "placed" || !strings.Contains(string(ship.Body), "cancelled") {
					t.Fatalf("cancel won: order %+v, ship answered %s", o, ship.Body)
				}
			case ship.StatusCode == 200 && cancel.StatusCode == 409:
				wins["ship"]++
				if o.Canceled || o.Status != "shipped" || !strings.Contains(string(cancel.Body), "shipped") {
					t.Fatalf("ship won: order %+v, cancel answered %s", o, cancel.Body)
				}
			default:
				t.Fatalf("cancel %d %s, ship %d %s: want exactly one 409", cancel.StatusCode, cancel.Body, ship.StatusCode, ship.Body)
			}
		}
		t.Logf("wins: %v", wins)
	})
}

// TestDogV1SuccessorLinks checks that every v1 dog answer links to its v2
// successor, the dog list included.
func TestDogV1SuccessorLinks(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		env := apitest.Start(t, db)
		env.CreateUser("alice", pw)
		resp := env.Do(apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "rex@example.org"}})
		id := resp.Map(t)["id"].(string)
		succ := "<" + env.URL + "/v2/dogs/" + id + `>; rel="successor-version"`
		if resp.Header.Get("Link") != succ {
			t.Fatalf("create: Link %q", resp.Header.Get("Link"))
		}
		resp = env.Do(apitest.Request{Path: "/v1/dogs?max=1", User: "alice", Password: pw})
		link := resp.Header.Get("Link")
		if resp.StatusCode != 200 || !strings.Contains(link, "<"+env.URL+`/v2/dogs>; rel="successor-version"`) || !strings.Contains(link, `rel="first"`) || !strings.Contains(link, `rel="last"`) {
			t.Fatalf("list: %d, Link %q", resp.StatusCode, link)
		}
		resp = env.Do(apitest.Request{Path: "/v2/dogs", User: "alice", Password: pw})
		if strings.Contains(resp.Header.Get("Link"), "successor-version") {
			t.Fatalf("v2 list links to a successor: %q", resp.Header.Get("Link"))
		}
		dog := "/v1/dogs/" + id + "/"
		for _, req := range []apitest.Request{
			{Path: "/v1/dogs/" + id},
			{Path: dog},
			{Method: "HEAD", Path: dog},
			{Method: "PUT", Path: dog, Body: map[string]any{"name": "Rex", "email": "rex@example.org"}},
			{Method: "PATCH", Path: dog, Body: map[string]any{"name": "Rexy"}},
			{Method: "DELETE", Path: dog},
		} {
			req.User, req.Password = "alice", pw
			resp := env.Do(req)
			if resp.StatusCode >= 400 || resp.Header.Get("Link") != succ {
				t.Fatalf("%s %s: %d, Link %q", req.Method, req.Path, resp.StatusCode, resp.Header.Get("Link"))
			}
		}
	})
}
