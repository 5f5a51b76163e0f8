package fetch

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
)

// guard is the filtering proxy of one fetch: a CONNECT proxy (RFC 9110
// §9.3.6) on a loopback port that only this fetch's commands are told
// about (with a one-time password). For each tunnel it resolves the host,
// checks every address against the policy, and dials a checked address
// itself, so what git connects to is decided at dial time, after any DNS
// change. It also notes, per tunnel, when bytes last went each way, for
// the idle time-out, and what went wrong, for the task's error.
type guard struct {
	policy      *Policy
	dialTimeout time.Duration
	ln          net.Listener
	secret      string

	refused atomic.Bool // a tunnel was refused by the policy
	unreach atomic.Bool // a checked host could not be reached
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	// tunnels holds the open tunnels (*tunnel keys).
	tunnels sync.Map
}

// tunnel holds the times (unix nanoseconds) of the last bytes of one
// tunnel: up from git, down from the remote.
type tunnel struct {
	up, down atomic.Int64
}

func startGuard(p *Policy, dialTimeout time.Duration) (*guard, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &guard{policy: p, dialTimeout: dialTimeout, ln: ln, secret: yard.NewID(), conns: map[net.Conn]struct{}{}}
	g.wg.Go(g.serve)
	return g, nil
}

// stalled reports whether an open tunnel has waited idle for an answer:
// git sent bytes and nothing came back since. A tunnel kept open while git
// works on what it received (the remote spoke last) is not stalled; a
// remote that stops in the middle of an answer is git's own low-speed
// limit's to end (http.lowSpeedTime).
func (g *guard) stalled(idle time.Duration) bool {
	now := time.Now().UnixNano()
	stalled := false
	g.tunnels.Range(func(k, _ any) bool {
		t := k.(*tunnel)
		up, down := t.up.Load(), t.down.Load()
		stalled = up > down && now-up >= int64(idle)
		return !stalled
	})
	return stalled
}

func (g *guard) close() {
	g.ln.Close()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

func (g *guard) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *guard) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	c.Close()
}

func (g *guard) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		if !g.track(c) {
			continue
		}
		g.wg.Go(func() { g.handle(c) })
	}
}

func (g *guard) handle(c net.Conn) {
	defer g.untrack(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	answer := func(status int) {
		_, _ = io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(status)+" "+http.StatusText(status)+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}
	if !g.authorized(req) {
		_, _ = io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"yard fetch\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	if req.Method != http.MethodConnect {
		answer(http.StatusMethodNotAllowed)
		return
	}
	host, portStr, err := net.SplitHostPort(req.Host)
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || port == 0 {
		answer(http.StatusBadRequest)
		return
	}
	host = normHost(host)
	ctx, cancel := context.WithTimeout(context.Background(), g.dialTimeout)
	remote, err := g.policy.Dial(ctx, &net.Dialer{}, host, uint16(port))
	cancel()
	if err != nil {
		if errors.Is(err, ErrNotPublic) {
			g.refused.Store(true)
			answer(http.StatusForbidden)
		} else {
			g.unreach.Store(true)
			answer(http.StatusBadGateway)
		}
		return
	}
	if !g.track(remote) {
		return
	}
	defer g.untrack(remote)
	t := &tunnel{}
	t.down.Store(time.Now().UnixNano())
	g.tunnels.Store(t, nil)
	defer g.tunnels.Delete(t)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var pipes sync.WaitGroup
	pipe := func(dst net.Conn, src io.Reader, last *atomic.Int64) {
		pipes.Go(func() {
			_, _ = io.Copy(dst, &activityReader{r: src, last: last})
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
		})
	}
	pipe(remote, br, &t.up) // bytes git sent after its CONNECT are still in br
	pipe(c, remote, &t.down)
	pipes.Wait()
}

func (g *guard) authorized(req *http.Request) bool {
	enc, ok := strings.CutPrefix(req.Header.Get("Proxy-Authorization"), "Basic ")
	raw, err := base64.StdEncoding.DecodeString(enc)
	if !ok || err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(raw, []byte("yard:"+g.secret)) == 1
}

// activityReader notes the time of every read that brought bytes.
type activityReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(time.Now().UnixNano())
	}
	return n, err
}
