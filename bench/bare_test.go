package bench

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
)

// bareAnswer is one recorded response.
type bareAnswer struct {
	header http.Header
	body   []byte
}

func (f *bareAnswer) serve(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range f.header {
		h[k] = v
	}
	_, _ = w.Write(f.body)
}

// loadBareAnswer reads a response recorded by curl -i.
func loadBareAnswer(path string) (*bareAnswer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		return nil, fmt.Errorf("%s: status %d, %d bytes of body: not a recorded 200", path, resp.StatusCode, len(body))
	}
	h := resp.Header.Clone()
	h.Del("Date")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	return &bareAnswer{header: h, body: body}, nil
}

// bareServer is the ceiling of scripts/bench-http: a bare net/http handler
// over TLS that answers every request with fixed bytes of the shape yard
// answers it with, so that yard's rate can be given as a share of what the
// machine, Go's HTTP and TLS, and the load generator do at all. It is a
// program of this test binary (tools, YARDBENCH_TOOL=bare) and serves until
// it fails:
//
//	go test -c -o /tmp/bench.test ./bench
//	YARDBENCH_TOOL=bare /tmp/bench.test -addr 127.0.0.1:18451 -cert DATA/tls/cert.pem -key DATA/tls/key.pem \
//	    -car car.http -page page.http -facets facets.http \
//	    -same same.http -same-query 'color=red&doors=4&make=!Ford&max=20'
//
// Each of -car, -page, -facets and -same names a response that yard gave, as
// `curl -i --http1.1` writes it (status line, headers, body): the body and
// the headers (Content-Type, ETag, Last-Modified, Link, the security headers,
// Content-Length) are answered as they are, but for Date, which net/http
// writes for each response as it does for yard. GET /cars/{id} answers -car,
// GET /cars?QUERY answers -same when QUERY is exactly -same-query, else
// -facets when it has facets=, else -page; nothing is parsed, looked up or
// encoded.
func bareServer(args []string) {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18451", "HTTPS listen address")
	cert := fs.String("cert", "", "TLS certificate (PEM), e.g. yard's DATA/tls/cert.pem")
	key := fs.String("key", "", "TLS key (PEM)")
	carFile := fs.String("car", "", "recorded response of GET /cars/{id}")
	pageFile := fs.String("page", "", "recorded response of GET /cars?… (a page of 20 cars with its Link header)")
	facetsFile := fs.String("facets", "", "recorded response of GET /cars?…&facets=… (default: -page)")
	sameFile := fs.String("same", "", "recorded response of GET /cars?SAME-QUERY (default: -page)")
	sameQuery := fs.String("same-query", "", "the query string answered with -same")
	_ = fs.Parse(args)
	if *cert == "" || *key == "" || *carFile == "" || *pageFile == "" {
		log.Fatal("bare: -cert, -key, -car and -page are required")
	}
	if *facetsFile == "" {
		*facetsFile = *pageFile
	}
	if *sameFile == "" {
		*sameFile = *pageFile
	}
	car, err := loadBareAnswer(*carFile)
	if err != nil {
		log.Fatal("bare: ", err)
	}
	page, err := loadBareAnswer(*pageFile)
	if err != nil {
		log.Fatal("bare: ", err)
	}
	facets, err := loadBareAnswer(*facetsFile)
	if err != nil {
		log.Fatal("bare: ", err)
	}
	same, err := loadBareAnswer(*sameFile)
	if err != nil {
		log.Fatal("bare: ", err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/readyz":
			_, _ = io.WriteString(w, "ready\n")
		case strings.HasPrefix(r.URL.Path, "/cars/"):
			car.serve(w)
		case r.URL.Path == "/cars" && *sameQuery != "" && r.URL.RawQuery == *sameQuery:
			same.serve(w)
		case r.URL.Path == "/cars" && strings.Contains(r.URL.RawQuery, "facets="):
			facets.serve(w)
		case r.URL.Path == "/cars":
			page.serve(w)
		default:
			http.NotFound(w, r)
		}
	})
	// The same TLS settings as yard serve (cmd/yard/serve.go, tlsSetup and
	// aeadSuites); wrk's OpenSSL speaks TLS 1.3 to both anyway.
	suites := []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
	srv := &http.Server{Addr: *addr, Handler: h, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: suites}}
	fmt.Printf("bare: listening on https://%s\n", *addr)
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
