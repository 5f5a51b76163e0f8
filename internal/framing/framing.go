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
package framing

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
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

// Listener accepts TCP connections from an inner listener, completes their
// TLS handshakes and returns them ready to serve.
type Listener struct {
	inner   net.Listener
	config  *tls.Config
	timeout time.Duration

	conns   chan net.Conn
	errs    chan error
	done    chan struct{}
	closing sync.Once

	mu      sync.Mutex
	pending int
	perAddr map[string]int
}

// NewListener returns a Listener serving TLS with config over inner. A
// handshake not done within timeout closes its connection.
func NewListener(inner net.Listener, config *tls.Config, timeout time.Duration) *Listener {
	l := &Listener{
		inner:   inner,
		config:  config,
		timeout: timeout,
		conns:   make(chan net.Conn),
		errs:    make(chan error),
		done:    make(chan struct{}),
		perAddr: map[string]int{},
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
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	var out net.Conn = tc
	if state := tc.ConnectionState(); state.NegotiatedProtocol != "h2" {
		out = &Conn{Conn: tc, state: &state}
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
	state *tls.ConnectionState

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
