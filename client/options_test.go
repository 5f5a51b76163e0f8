package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned makes a self-signed certificate for localhost and 127.0.0.1,
// as yard serve does on first start, and writes it as PEM to dir/name.
func selfSigned(t *testing.T, dir, name string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}

// A client trusts a self-signed server only with WithCAFile/WithRootCAs
// naming that server's certificate, and never changes the http.Client it
// was given.
func TestWithCAFile(t *testing.T) {
	dir := t.TempDir()
	cert, certFile := selfSigned(t, dir, "cert.pem")
	_, otherFile := selfSigned(t, dir, "other.pem")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"rex"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	ctx := context.Background()
	var dog struct{ ID string }

	// Without the option the system roots do not know the certificate.
	err := New(srv.URL, nil, nil).Get(ctx, "/v1/dogs/rex/", &dog)
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Fatalf("without WithCAFile: err = %v, want a certificate verification error", err)
	}
	// Another self-signed certificate does not help.
	if err := New(srv.URL, nil, nil, WithCAFile(otherFile)).Get(ctx, "/v1/dogs/rex/", &dog); !errors.As(err, &verr) {
		t.Fatalf("with another certificate: err = %v, want a certificate verification error", err)
	}

	// With the server's certificate file it works, also through a caller's
	// http.Client, which keeps its own transport and time-out.
	if err := New(srv.URL, nil, nil, WithCAFile(certFile)).Get(ctx, "/v1/dogs/rex/", &dog); err != nil || dog.ID != "rex" {
		t.Fatalf("with WithCAFile: dog %+v, err %v", dog, err)
	}
	mine := &http.Client{Timeout: 7 * time.Second}
	c := New(srv.URL, mine, nil, WithCAFile(certFile))
	if err := c.Get(ctx, "/v1/dogs/rex/", &dog); err != nil {
		t.Fatalf("with a caller's http.Client: %v", err)
	}
	if mine.Transport != nil || c.HTTP == mine || c.HTTP.Timeout != 7*time.Second {
		t.Errorf("the caller's http.Client was changed or its time-out lost: %+v", c.HTTP)
	}
	if http.DefaultClient.Transport != nil {
		t.Errorf("http.DefaultClient was changed")
	}

	// WithRootCAs takes a pool directly.
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	if err := New(srv.URL, nil, nil, WithRootCAs(pool)).Get(ctx, "/v1/dogs/rex/", &dog); err != nil {
		t.Fatalf("with WithRootCAs: %v", err)
	}

	// An unreadable file fails every request, naming the file.
	missing := filepath.Join(dir, "missing.pem")
	if err := New(srv.URL, nil, nil, WithCAFile(missing)).Get(ctx, "/", nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: err = %v, want one naming %s", err, missing)
	}
	notPEM := filepath.Join(dir, "not.pem")
	_ = os.WriteFile(notPEM, []byte("hello"), 0o600)
	if err := New(srv.URL, nil, nil, WithCAFile(notPEM)).Get(ctx, "/", nil); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("file without a certificate: err = %v", err)
	}
}
