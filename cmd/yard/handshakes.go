package main

import (
	"net"
	"net/http"
	"sync"

	"github.com/yard-api/yard/httpapi"
)

// Connections that have not yet sent a request (their TLS handshake
// included) are bounded, in all and per client address, so that one client
// opening connections and never finishing a handshake cannot take every
// other client's place (docs/operations.md, "Transport"). A connection
// accepted past either bound is closed at once.
const (
	maxNewConns        = 4096
	maxNewConnsPerAddr = 256
)

// newConns counts the server's connections in http.StateNew (accepted, no
// request read yet) through the server's ConnState hook.
type newConns struct {
	mu      sync.Mutex
	perAddr map[string]int
	pending map[net.Conn]string // connection → its client's key (httpapi.ClientKey)
}

// connState is the http.Server's ConnState hook.
func (n *newConns) connState(c net.Conn, s http.ConnState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s != http.StateNew {
		if key, ok := n.pending[c]; ok {
			delete(n.pending, c)
			if n.perAddr[key]--; n.perAddr[key] == 0 {
				delete(n.perAddr, key)
			}
		}
		return
	}
	key := httpapi.ClientKey(c.RemoteAddr().String())
	if len(n.pending) >= maxNewConns || n.perAddr[key] >= maxNewConnsPerAddr {
		_ = c.Close() // the server then sees it closed (StateClosed)
		return
	}
	n.pending[c] = key
	n.perAddr[key]++
}
