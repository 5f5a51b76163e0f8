package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// An Option adjusts a Client made by New.
type Option func(*Client) error

// WithRootCAs makes the client trust the certificates in pool (and only
// those) when it verifies the server's certificate: for a server with a
// self-signed certificate or a private certificate authority. The client's
// http.Client is copied, never changed; its Transport must be nil or an
// *http.Transport.
//
//	pool := x509.NewCertPool()
//	pool.AppendCertsFromPEM(pemBytes)
//	c := client.New("https://localhost:8443", nil, auth, client.WithRootCAs(pool))
func WithRootCAs(pool *x509.CertPool) Option {
	return func(c *Client) error {
		if pool == nil {
			return errors.New("client: WithRootCAs: nil certificate pool")
		}
		hc := *c.HTTP // a copy: the caller's client (or http.DefaultClient) stays as it was
		var tr *http.Transport
		switch t := hc.Transport.(type) {
		case nil:
			tr = http.DefaultTransport.(*http.Transport).Clone()
		case *http.Transport:
			tr = t.Clone()
		default:
			return fmt.Errorf("client: WithRootCAs: the http.Client's Transport is a %T, not an *http.Transport", t)
		}
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{}
		}
		tr.TLSClientConfig.RootCAs = pool
		hc.Transport = tr
		c.HTTP = &hc
		return nil
	}
}

// WithCAFile is WithRootCAs with the PEM certificates of a file, such as
// the self-signed certificate yard serve creates in DATA/tls/cert.pem:
//
//	c := client.New("https://localhost:8443", nil, auth, client.WithCAFile("data/tls/cert.pem"))
//
// When the file cannot be read or holds no certificate, every request of
// the client fails with an error naming the file.
func WithCAFile(path string) Option {
	return func(c *Client) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("client: WithCAFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("client: WithCAFile: no PEM certificate in %s", path)
		}
		return WithRootCAs(pool)(c)
	}
}
