package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/fairgate"
)

// admit takes a slot of gate for r's client (its address, an IPv6 one by
// its /64) or says why not: 429 when the client already has its share
// waiting, 503 when the server has, or when the wait ran out
// (docs/operations.md, "Fair shares"). On nil the caller releases the
// slot with gate.Release(client) once the work is done and before the
// answer is written, so that a client that reads slowly holds no slot.
func admit(gate *fairgate.Gate, r *http.Request, what string) (client string, err error) {
	client = ClientKey(r.RemoteAddr)
	err = gate.Acquire(r.Context(), client)
	switch {
	case err == nil:
		return client, nil
	case errors.Is(err, fairgate.ErrClientBusy):
		return "", &yard.Error{Code: yard.ERATELIMIT, RetryAfter: 1,
			Message: "This client address already has as many " + what + " waiting as it may; send fewer at once."}
	case errors.Is(err, fairgate.ErrBusy), errors.Is(err, context.DeadlineExceeded):
		return "", &yard.Error{Code: yard.EUNAVAILABLE, RetryAfter: 1,
			Message: "The server is busy with " + what + "; try again shortly."}
	}
	return "", err
}

// ClientKey is the client of a remote address (host:port): its host
// without the port; an IPv6 address counts by its /64 network, which one
// client usually holds whole (docs/operations.md, "Fair shares").
func ClientKey(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return h
}

// registerGateMetrics exports a gate's state as name_running,
// name_waiting and name_refused_total{reason="client"|"busy"}.
func registerGateMetrics(reg *prometheus.Registry, name, what string, g *fairgate.Gate) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name + "_running", Help: "Slots taken by " + what + "."},
			func() float64 { return float64(g.Stats().Busy) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name + "_waiting", Help: what + " waiting for a slot."},
			func() float64 { return float64(g.Stats().Waiting) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name + "_refused_total", Help: what + " refused: client (429: its address had its share waiting), busy (503).",
			ConstLabels: prometheus.Labels{"reason": "client"}}, func() float64 { return float64(g.Stats().RefusedClient) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name + "_refused_total", Help: what + " refused: client (429: its address had its share waiting), busy (503).",
			ConstLabels: prometheus.Labels{"reason": "busy"}}, func() float64 { return float64(g.Stats().RefusedBusy) }),
	)
}
