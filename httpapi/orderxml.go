package httpapi

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/yard-api/yard"
)

// orderInput is an order as a request body holds it, JSON or XML; a nil
// field was left out. The timestamps are kept raw (an RFC 3339 string or a
// number of Unix seconds, as in every request) and parsed by the handler.
type orderInput struct {
	ID         *string         `json:"id"`
	CustomerID *string         `json:"customerId"`
	Status     *string         `json:"status"`
	Canceled   *bool           `json:"canceled"`
	CreatedAt  json.RawMessage `json:"createdAt"`
	UpdatedAt  json.RawMessage `json:"updatedAt"`
}

// orderXMLFields are the child elements of <order>.
var orderXMLFields = []string{"id", "customerId", "status", "canceled", "createdAt", "updatedAt"}

// maxOrderFieldText bounds the text of one field element.
const maxOrderFieldText = 1024

// decodeOrderXML reads an XML order strictly and in bounded work. It walks
// the tokens of encoding/xml (which never loads or expands anything beyond
// the five predefined entities and character references) and refuses, as
// 400 naming the line and column: a DOCTYPE or any other <!...>
// declaration (so no entity can be declared, let alone expanded), a
// processing instruction other than the leading XML declaration, a
// declared encoding other than UTF-8, attributes and name spaces, a root
// other than <order>, an unknown or repeated field, any element inside a
// field (the order's shape is two levels deep), text outside the fields, a
// second root element, and a canceled that is not true or false. The body
// is at most MaxBodyBytes (413 before this is called).
func decodeOrderXML(body []byte) (orderInput, error) {
	var in orderInput
	if len(bytes.TrimSpace(body)) == 0 {
		return in, yard.Errorf(yard.EMALFORMED, "The request body is empty; an <order> document is required.")
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	dec.CharsetReader = func(charset string, _ io.Reader) (io.Reader, error) {
		return nil, fmt.Errorf("only UTF-8 is read, and the document declares encoding %q", charset)
	}
	bad := func(format string, args ...any) error {
		line, col := dec.InputPos()
		return yard.Errorf(yard.EMALFORMED, "Malformed XML at line %d, column %d: %s.", line, col, fmt.Sprintf(format, args...))
	}
	var (
		depth    int
		field    string
		text     strings.Builder
		seen     = map[string]bool{}
		rootDone bool
		tokens   int
	)
	for ; ; tokens++ {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if syn, ok := errors.AsType[*xml.SyntaxError](err); ok {
				return in, yard.Errorf(yard.EMALFORMED, "Malformed XML at line %d: %s.", syn.Line, strings.TrimPrefix(syn.Msg, "xml: "))
			}
			return in, bad("%s", strings.TrimPrefix(err.Error(), "xml: "))
		}
		switch t := tok.(type) {
		case xml.ProcInst:
			// The XML declaration may open the document; encoding/xml has
			// already refused an encoding other than UTF-8 in it.
			if t.Target == "xml" && tokens == 0 {
				continue
			}
			return in, bad("processing instructions (<?%s ...?>) are not accepted", truncateName(t.Target))
		case xml.Directive:
			return in, bad("a DOCTYPE or other declaration (<!...>) is not accepted; the server expands no entities")
		case xml.Comment:
			continue
		case xml.StartElement:
			name := t.Name.Local
			if t.Name.Space != "" {
				return in, bad("element <%s> has a name space; an order has none", truncateName(name))
			}
			if len(t.Attr) > 0 {
				return in, bad("element <%s> has attributes; an order has none", truncateName(name))
			}
			depth++
			switch {
			case depth == 1 && rootDone:
				return in, bad("a second root element <%s> after </order>", truncateName(name))
			case depth == 1 && name != "order":
				return in, bad("the root element must be <order>, not <%s>", truncateName(name))
			case depth == 2:
				if !slices.Contains(orderXMLFields, name) {
					return in, &yard.Error{Code: yard.EINVALID, Message: "The order has an unknown element.",
						Fields: []yard.FieldError{{Field: truncateName(name), Message: "is not a field of an order"}}}
				}
				if seen[name] {
					return in, bad("<%s> appears twice", name)
				}
				seen[name], field = true, name
				text.Reset()
			case depth > 2:
				return in, bad("<%s> is nested inside <%s>; the fields of an order hold text only", truncateName(name), field)
			}
		case xml.CharData:
			if depth == 2 {
				if text.Len()+len(t) > maxOrderFieldText {
					return in, yard.Invalid("A field of the order is too long.", yard.FieldError{Field: field, Message: fmt.Sprintf("must be at most %d bytes", maxOrderFieldText)})
				}
				text.Write(t)
			} else if len(bytes.TrimSpace(t)) > 0 {
				return in, bad("text outside the fields of the order")
			}
		case xml.EndElement:
			switch depth {
			case 2:
				if err := in.setXML(field, strings.TrimSpace(text.String())); err != nil {
					return in, err
				}
			case 1:
				rootDone = true
			}
			depth--
		}
	}
	if !rootDone {
		return in, bad("no <order> element")
	}
	return in, nil
}

// setXML stores the text of one field element.
func (in *orderInput) setXML(field, v string) error {
	switch field {
	case "id":
		in.ID = &v
	case "customerId":
		in.CustomerID = &v
	case "status":
		in.Status = &v
	case "canceled":
		var b bool
		switch v {
		case "true", "1": // xsd:boolean
			b = true
		case "false", "0":
		default:
			return yard.Invalid("The order has invalid fields.", yard.FieldError{Field: "canceled", Message: "must be true or false"})
		}
		in.Canceled = &b
	case "createdAt", "updatedAt":
		raw := json.RawMessage(v)
		if v == "" || strings.Trim(v, "0123456789") != "" { // not Unix seconds
			raw, _ = json.Marshal(v)
		}
		if field == "createdAt" {
			in.CreatedAt = raw
		} else {
			in.UpdatedAt = raw
		}
	}
	return nil
}

// truncateName shortens a name quoted in an error message.
func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// orderDoc is an order's representation, in JSON and in XML
// (<order><id>…</id>…</order>).
type orderDoc struct {
	XMLName    xml.Name `json:"-" xml:"order"`
	ID         string   `json:"id" xml:"id"`
	CustomerID string   `json:"customerId" xml:"customerId"`
	Status     string   `json:"status" xml:"status"`
	Canceled   bool     `json:"canceled" xml:"canceled"`
	CreatedAt  string   `json:"createdAt" xml:"createdAt"`
	UpdatedAt  string   `json:"updatedAt" xml:"updatedAt"`
}

func newOrderDoc(o *yard.Order) orderDoc {
	return orderDoc{ID: o.ID, CustomerID: o.CustomerID, Status: o.Status, Canceled: o.Canceled,
		CreatedAt: Timestamp(o.CreatedAt), UpdatedAt: Timestamp(o.UpdatedAt)}
}

// marshalXML renders v as an XML document with its declaration.
func marshalXML(v any) ([]byte, error) {
	body, err := xml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), body...), nil
}

// problemXMLDoc is an RFC 9457 problem in XML (appendix B): the name space
// urn:ietf:rfc:7807, one element per member, arrays as <i> elements.
type problemXMLDoc struct {
	XMLName  xml.Name `xml:"urn:ietf:rfc:7807 problem"`
	Type     string   `xml:"type"`
	Title    string   `xml:"title"`
	Status   int      `xml:"status"`
	Detail   string   `xml:"detail,omitempty"`
	Instance string   `xml:"instance,omitempty"`
	Errors   *struct {
		I []fieldErrorXML `xml:"i"`
	} `xml:"errors,omitempty"`
	RequestID string `xml:"requestId,omitempty"`
}

type fieldErrorXML struct {
	Field   string `xml:"field"`
	Message string `xml:"message"`
}

// writeProblemXML writes p as application/problem+xml.
func writeProblemXML(w http.ResponseWriter, p Problem) {
	doc := problemXMLDoc{Type: p.Type, Title: p.Title, Status: p.Status, Detail: p.Detail, Instance: p.Instance, RequestID: p.RequestID}
	if len(p.Errors) > 0 {
		doc.Errors = &struct {
			I []fieldErrorXML `xml:"i"`
		}{}
		for _, f := range p.Errors {
			doc.Errors.I = append(doc.Errors.I, fieldErrorXML(f))
		}
	}
	body, _ := marshalXML(doc)
	writeProblemBody(w, p.Status, mediaProblemXML+"; charset=utf-8", body)
}
