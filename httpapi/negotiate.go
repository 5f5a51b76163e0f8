package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Media types of the XML representations (RFC 7303) and of XML problem
// details (RFC 9457 appendix B).
const (
	mediaJSON       = "application/json"
	mediaXML        = "application/xml"
	mediaTextXML    = "text/xml"
	mediaProblemXML = "application/problem+xml"
)

// maxAcceptRanges bounds the media ranges read from one Accept header.
const maxAcceptRanges = 32

// acceptRange is one media range of an Accept header with its weight.
type acceptRange struct {
	typ, sub string
	q        float64
}

// parseAccept reads an Accept header (RFC 9110 §12.5.1). Ranges that do not
// parse are skipped; a missing or malformed q counts as 1.
func parseAccept(header string) []acceptRange {
	var out []acceptRange
	for _, part := range strings.Split(header, ",") {
		if len(out) == maxAcceptRanges {
			break
		}
		mt, params, _ := strings.Cut(part, ";")
		typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(mt)), "/")
		if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
		out = append(out, acceptRange{typ, sub, q})
	}
	return out
}

// negotiate returns the offer the Accept header prefers, or "" when it
// accepts none. Each offer takes the weight of the most specific range that
// matches it (type/subtype over type/* over */*); among equal weights the
// earlier offer wins. Without an Accept header (or with an empty one) the
// first offer is chosen, and so it is when no range of the header parses.
func negotiate(accept string, offers ...string) string {
	ranges := parseAccept(accept)
	if len(ranges) == 0 {
		return offers[0]
	}
	best, bestQ := "", 0.0
	for _, offer := range offers {
		typ, sub, _ := strings.Cut(offer, "/")
		q, spec := 0.0, -1
		for _, r := range ranges {
			s := -1
			switch {
			case r.typ == typ && r.sub == sub:
				s = 2
			case r.typ == typ && r.sub == "*":
				s = 1
			case r.typ == "*":
				s = 0
			}
			if s > spec {
				q, spec = r.q, s
			}
		}
		if q > bestQ {
			best, bestQ = offer, q
		}
	}
	return best
}

// sentXML reports whether the request body is XML by its Content-Type.
func sentXML(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == mediaXML || mt == mediaTextXML)
}

// problemXML reports whether an error should be answered as
// application/problem+xml: the request to an order resource sent an XML
// body, or asks for XML over JSON. Orders are the only resources with an
// XML representation; every other resource answers its errors in JSON
// whatever the request sent or accepts (an XML body there is 415).
func (s *Server) problemXML(r *http.Request) bool {
	// The path is one of a route marked in routes.go as having an XML
	// representation (handleXML), whatever the method.
	if _, pattern := s.xmlPaths.Handler(r); pattern == "" {
		return false
	}
	m := negotiate(r.Header.Get("Accept"), "application/problem+json", mediaJSON, mediaProblemXML, mediaXML, mediaTextXML)
	return sentXML(r) || m == mediaXML || m == mediaTextXML || m == mediaProblemXML
}
