package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugListen opens the --debug-addr listener: Go's profiler
// (net/http/pprof) over plain HTTP, for measuring where a running server
// spends its time (docs/benchmark-journal.md, "Where a request's time goes"). It
// serves loopback addresses only: a profile shows the process's code
// paths and the trace endpoint its requests' timings, which are nobody
// else's business.
func debugListen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError("--debug-addr " + addr + ": want HOST:PORT")
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usageError("--debug-addr " + addr + ": only a loopback address (127.0.0.1, ::1, localhost)")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	return ln, nil
}

// debugServer serves the profiler's endpoints under /debug/pprof/, and
// the metrics at /metrics without the credentials the API's /metrics
// needs, for a scraper on the same host (docs/operations.md, "Metrics and
// traces").
func debugServer(metrics http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
