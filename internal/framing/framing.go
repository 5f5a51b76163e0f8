// Package framing refuses HTTP/1.1 requests whose framing is ambiguous.
//
// A request that carries both Content-Length and Transfer-Encoding may be
// an attempt at request smuggling: RFC 9112 §6.1 says a server may reject it
// and MUST close the connection after answering it. Go's net/http drops the
// Content-Length and keeps the connection open, so a request pipelined
// behind it would be served. This package sees the decrypted bytes of each
// HTTP/1.x connection as the server reads them, follows the message framing
// (header block, Content-Length body, chunked body and trailers), and notes
// the request that carried both fields; Handler marks that request, and
// the API's handler asks Refused and answers it 400 with Connection: close
// (docs/operations.md, "Transport").
//
// The listener does the TLS handshake itself (with a deadline, many at
// once), so that HTTP/2 connections (ALPN "h2") reach the server as the
// *tls.Conn it expects, and HTTP/1.x connections as a Conn that watches
// them. A Conn is not a *tls.Conn, so the server does not fill in
// Request.TLS for it: Handler does.
//
// A Conn also sees what the server writes. Go's server answers a request
// it cannot read (a bad request line or header, headers past its limit, a
// transfer coding it does not know) itself, before any handler, in a fixed
// text/plain form; a Conn hands that answer to the Listener's Unreadable,
// which writes it in the API's own form instead (docs/operations.md,
// "Transport").
package framing

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MaxHandshakes bounds the TLS handshakes in progress at once, and
// MaxHandshakesPerAddr those from one client address, so that one client
// holding connections open without finishing a handshake cannot take the
// others' places; a connection past either bound is closed at once.
const (
	MaxHandshakes        = 4096
	MaxHandshakesPerAddr = 256
)

// Unreadable renders the server's answer to an HTTP/1.x request it could
// not read: remote is the client's host (without the port), code the
// status Go's server chose (400, 431, 501 or 505) and text what it said
// (its fixed words, never the client's bytes). It returns the whole
// response to write instead, status line to body; the connection closes
// after it.
type Unreadable func(remote string, code int, text string) []byte

// PlainHTTP is the text Unreadable gets for a request sent in plain HTTP
// to the TLS port. Its answer goes out unencrypted, since the client
// speaks no TLS.
const PlainHTTP = "client sent an HTTP request to an HTTPS server"

// looksLikeHTTP reports whether the first bytes of a TLS record are the
// start of an HTTP/1.x request instead (net/http's test of the same).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "PATCH", "DELET":
		return true
	}
	return false
}

// Listener accepts TCP connections from an inner listener, completes their
// TLS handshakes and returns them ready to serve.
type Listener struct {
	inner      net.Listener
	config     *tls.Config
	timeout    time.Duration
	unreadable Unreadable

	conns   chan net.Conn
	errs    chan error
	done    chan struct{}
	closing sync.Once

	mu      sync.Mutex
	pending int
	perAddr map[string]int
}

// NewListener returns a Listener serving TLS with config over inner. A
// handshake not done within timeout closes its connection. unreadable, if
// not nil, writes the answers to HTTP/1.x requests the server could not
// read.
func NewListener(inner net.Listener, config *tls.Config, timeout time.Duration, unreadable Unreadable) *Listener {
	l := &Listener{
		inner:      inner,
		config:     config,
		timeout:    timeout,
		unreadable: unreadable,
		conns:      make(chan net.Conn),
		errs:       make(chan error),
		done:       make(chan struct{}),
		perAddr:    map[string]int{},
	}
	go l.run()
	return l
}

func (l *Listener) run() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		addr := remoteHost(c)
		if !l.begin(addr) {
			c.Close()
			continue
		}
		go l.handshake(c, addr)
	}
}

// begin counts a handshake from addr, or reports that a bound is reached.
func (l *Listener) begin(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending >= MaxHandshakes || l.perAddr[addr] >= MaxHandshakesPerAddr {
		return false
	}
	l.pending++
	l.perAddr[addr]++
	return true
}

// end counts a handshake from addr as done.
func (l *Listener) end(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending--
	if l.perAddr[addr]--; l.perAddr[addr] <= 0 {
		delete(l.perAddr, addr)
	}
}

// addrHost is the host of a connection's remote address.
func addrHost(a net.Addr) string {
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

// remoteHost is the client address of c (ClientKey).
func remoteHost(c net.Conn) string { return ClientKey(c.RemoteAddr().String()) }

// ClientKey is the client of a remote address (host:port): its host
// without the port; an IPv6 address counts by its /64 network, which one
// client usually holds whole. The per-client bounds of the server count
// by it (docs/operations.md, "Transport" and "Fair shares").
func ClientKey(a string) string {
	h, _, err := net.SplitHostPort(a)
	if err != nil {
		return a
	}
	if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return h
}

func (l *Listener) handshake(c net.Conn, addr string) {
	defer l.end(addr)
	tc := tls.Server(c, l.config)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	_ = c.SetDeadline(time.Now().Add(l.timeout))
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		// Plain HTTP sent to the TLS port (http:// for https://): say so,
		// as Go's server does when it does the handshake itself, rather
		// than close without a word. Nothing of the request is read.
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && l.unreadable != nil && looksLikeHTTP(re.RecordHeader) {
			_, _ = re.Conn.Write(l.unreadable(addrHost(c.RemoteAddr()), http.StatusBadRequest, PlainHTTP))
		}
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	var out net.Conn = tc
	if state := tc.ConnectionState(); state.NegotiatedProtocol != "h2" {
		out = &Conn{Conn: tc, state: &state, unreadable: l.unreadable}
	}
	select {
	case l.conns <- out:
	case <-l.done:
		out.Close()
	}
}

// Accept returns the next connection whose handshake is done.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections already returned stay open.
func (l *Listener) Close() error {
	l.closing.Do(func() { close(l.done) })
	return l.inner.Close()
}

// Addr is the inner listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Conn is an HTTP/1.x connection over TLS whose request framing is
// followed as the server reads it.
type Conn struct {
	*tls.Conn
	state      *tls.ConnectionState
	unreadable Unreadable

	scan    scanner // only the server's reads touch it, one at a time
	flagged atomic.Int64
	served  atomic.Int64
}

// Read reads from the TLS connection and follows the framing of what it
// read.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.scan.off {
		if k := c.scan.feed(p[:n]); k > 0 {
			c.flagged.Store(k)
		}
	}
	return n, err
}

// Write writes p to the TLS connection, except the server's own answer
// to a request it could not read, which goes out as the Listener's
// Unreadable renders it.
func (c *Conn) Write(p []byte) (int, error) {
	if c.unreadable != nil {
		if code, text, ok := refusal(p); ok {
			if _, err := c.Conn.Write(c.unreadable(addrHost(c.RemoteAddr()), code, text)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// refusalHeaders are the header fields of every answer Go's server gives
// a request it could not read (net/http's conn.serve), right after the
// status line. No other response starts that way: a handler's header
// fields come first, sorted, then Connection, Date and the length.
const refusalHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// refusal reports whether p is such an answer, written whole in one
// Write ("HTTP/1.1 431 Request Header Fields Too Large" + refusalHeaders +
// text), and returns its status and text.
func refusal(p []byte) (code int, text string, ok bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) || len(p) < len(proto)+4 || p[len(proto)+3] != ' ' {
		return 0, "", false
	}
	// The status line is short: look for its end in its first bytes only.
	end := bytes.IndexByte(p[:min(len(p), 128)], '\n')
	if end < 1 || !bytes.HasPrefix(p[end-1:], []byte(refusalHeaders)) {
		return 0, "", false
	}
	code, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil || code < 400 || code > 599 {
		return 0, "", false
	}
	return code, string(p[end-1+len(refusalHeaders):]), true
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext: it keeps the Conn for
// Handler.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, connKey{}, fc)
	}
	return ctx
}

// Handler wraps the server's handler: for a request on a Conn it fills in
// r.TLS (the server does not, a Conn not being a *tls.Conn) and counts the
// request, marking it when it carried both Content-Length and
// Transfer-Encoding; the handler asks Refused and answers such a request
// 400 with Connection: close, which makes the server close the connection.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _ := r.Context().Value(connKey{}).(*Conn); c != nil {
			if r.TLS == nil {
				r.TLS = c.state
			}
			if c.flagged.Load() == c.served.Add(1) {
				r = r.WithContext(context.WithValue(r.Context(), refusedKey{}, true))
			}
		}
		h.ServeHTTP(w, r)
	})
}

type refusedKey struct{}

// Refused reports whether Handler marked r: it carried both Content-Length
// and Transfer-Encoding.
func Refused(r *http.Request) bool {
	v, _ := r.Context().Value(refusedKey{}).(bool)
	return v
}
