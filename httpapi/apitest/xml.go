package apitest

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// xmlBodyDecoder validates XML bodies whose schema is an object (orders,
// XML problem details) like JSON ones: it turns the document into the
// value its JSON twin would decode to. A schema of type string keeps the
// body as text. registerBodyDecoders (apitest.go) installs it.
func xmlBodyDecoder(body io.Reader, h http.Header, schema *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
	if schema == nil || schema.Value == nil || schema.Value.Type == nil || !schema.Value.Type.Is("object") {
		return openapi3filter.PlainBodyDecoder(body, h, schema, enc)
	}
	dec := xml.NewDecoder(body)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if start, ok := tok.(xml.StartElement); ok {
			return xmlValue(dec, start)
		}
	}
}

// xmlValue reads the element that start opens: an element with children
// is an object, or an array when every child is <i> (RFC 9457 appendix B);
// text is a boolean or an integer when it reads as one, else a string.
func xmlValue(dec *xml.Decoder, start xml.StartElement) (any, error) {
	var text strings.Builder
	obj := map[string]any{}
	var arr []any
	children := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			v, err := xmlValue(dec, t)
			if err != nil {
				return nil, err
			}
			children++
			if t.Name.Local == "i" {
				arr = append(arr, v)
			} else {
				if _, dup := obj[t.Name.Local]; dup {
					return nil, errors.New("repeated element " + t.Name.Local)
				}
				obj[t.Name.Local] = v
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			switch {
			case children > 0 && len(arr) == children:
				return arr, nil
			case len(arr) > 0:
				return nil, errors.New("mixed <i> and named elements in " + start.Name.Local)
			case children > 0:
				return obj, nil
			}
			s := text.String()
			if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
				return b, nil
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return float64(n), nil
			}
			return s, nil
		}
	}
}
