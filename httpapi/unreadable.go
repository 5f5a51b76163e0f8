package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/framing"
)

// UnreadableAnswer renders the answer to an HTTP/1.1 request that Go's
// server could not read, and so never handed to the API: a bad request
// line, URL or header field (400), header fields past the server's limit
// (431), a transfer coding other than chunked (501), an HTTP version other
// than 1.x (505), plain HTTP sent to the TLS port (400, text
// framing.PlainHTTP; sent in plain HTTP, so without HSTS). remote, code
// and text are the client's host and what the server chose to say
// (framing.Unreadable); the answer is a problem like every other error,
// with the headers every answer carries, and the connection closes after
// it (docs/operations.md, "Transport").
func (s *Server) UnreadableAnswer(remote string, code int, text string) []byte {
	kind := problemKinds[yard.EMALFORMED]
	detail := "The request could not be read as HTTP/1.1: its request line, its URL or a header field is malformed."
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		kind = problemKinds["header_too_large"]
		detail = "The request's header fields, its URL among them, are larger than the server reads."
	case http.StatusNotImplemented:
		kind = problemKinds["not_implemented"]
		detail = "The request's Transfer-Encoding is not one the server reads: only chunked is."
	case http.StatusHTTPVersionNotSupported:
		kind = problemKinds["version_not_supported"]
		detail = "The request's HTTP version is not one the server speaks."
	case http.StatusBadRequest:
		if text == framing.PlainHTTP {
			detail = "This address speaks HTTPS only: send the request to " + s.deps.BaseURL + " (the same path, https://)."
			break
		}
		// Go's server names what it found in a few cases ("400 Bad
		// Request: missing required Host header"); its words, never
		// the client's bytes.
		if _, why, ok := strings.Cut(text, ": "); ok && why != "" {
			detail = "The request could not be read as HTTP/1.1: " + why + "."
		}
	default:
		kind.Status = code
	}
	id := newRequestID()
	p := s.problemOf(kind)
	p.Detail, p.RequestID = detail, id
	body, _ := marshalJSON(p)
	b := make([]byte, 0, 320+len(body))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(kind.Status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(kind.Status)...)
	b = append(b, "\r\nConnection: close\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nContent-Type: application/problem+json\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	if text != framing.PlainHTTP { // HSTS only over TLS (RFC 6797 §7.2)
		b = append(b, "\r\nStrict-Transport-Security: "...)
		b = append(b, hstsValue[0]...)
	}
	b = append(b, "\r\nX-Content-Type-Options: "...)
	b = append(b, nosniffValue[0]...)
	b = append(b, "\r\nX-Request-Id: "...)
	b = append(b, id...)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	if s.metrics != nil {
		s.metrics.observe("", "unreadable", kind.Status, 0)
	}
	s.deps.Logger.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("request_id", id),
		slog.String("route", "unreadable"), slog.Int("status", kind.Status), slog.String("remote", remote), slog.String("error", text))
	return b
}
