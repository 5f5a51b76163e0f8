package client

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/internal/sigbase"
)

// The worked example of docs/auth.md, signed by the client.
func TestSignedWorkedExample(t *testing.T) {
	const want = "6d865e1e2f43cf9bc4409495ce713cdaee78c839520cb2e34abac0c0dde7345b"
	pairs := [][2]string{{"timestamp", "1763800000"}, {"apiKey", "ak_3xAmPlE"}, {"Note", "rex & co"}, {"tag", "b"}, {"tag", "a"}}
	s := sigbase.CanonicalString("/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/", pairs)
	if got := sigbase.Sign([]byte("sk_example-secret-do-not-use"), s); got != want {
		t.Fatalf("signature of %q = %s, want %s", s, got, want)
	}

	// Signed.Apply produces the same canonical string for the same
	// request, with the method and the body's hash bound (docs/auth.md,
	// "Binding the method and the body").
	const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	bound := sigbase.Sign([]byte("sk_example-secret-do-not-use"), sigbase.CanonicalString("/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/",
		append(pairs, [2]string{"method", "GET"}, [2]string{"bodyhash", emptyHash})))
	signer := &Signed{APIKey: "ak_3xAmPlE", Secret: "sk_example-secret-do-not-use", Now: func() time.Time { return time.Unix(1763800000, 0) }}
	req, _ := http.NewRequest("GET", "https://localhost/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/?Note=rex%20%26%20co&tag=b&tag=a", nil)
	if err := signer.Apply(nil, req); err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(req.URL.RawQuery)
	if q.Get("signature") != bound || q.Get("timestamp") != "1763800000" || q.Get("apiKey") != "ak_3xAmPlE" ||
		q.Get("method") != "GET" || q.Get("bodyhash") != emptyHash {
		t.Errorf("signed query %s", req.URL.RawQuery)
	}
	// The same request again in the same second gets a later timestamp, so
	// its signature differs (the server accepts a signature once).
	req2, _ := http.NewRequest("GET", "https://localhost/v1/dogs/0193a5b2-7c1e-7d2a-9f00-1234567890ab/?Note=rex%20%26%20co&tag=b&tag=a", nil)
	_ = signer.Apply(nil, req2)
	if strings.Contains(req2.URL.RawQuery, bound) || !strings.Contains(req2.URL.RawQuery, "timestamp=1763800001") {
		t.Errorf("repeated request: %s", req2.URL.RawQuery)
	}
}

// A body is hashed into bodyhash and still sent.
func TestSignedBindsBody(t *testing.T) {
	signer := &Signed{APIKey: "ak_3xAmPlE", Secret: "sk_example-secret-do-not-use", Now: func() time.Time { return time.Unix(1763800000, 0) }}
	req, _ := http.NewRequest("PUT", "https://localhost/v1/dogs/x/", strings.NewReader(`{"name":"Rex"}`))
	if err := signer.Apply(nil, req); err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(req.URL.RawQuery)
	// printf %s '{"name":"Rex"}' | sha256sum
	if got, want := q.Get("bodyhash"), "3b7fdbc0b236195b6bf45611b4d3d52dbc54612faeca2cda8696aa9b5ed4ebfa"; got != want {
		t.Fatalf("bodyhash %q, want %s", got, want)
	}
	if q.Get("method") != "PUT" {
		t.Errorf("method %q, want PUT", q.Get("method"))
	}
	b, _ := io.ReadAll(req.Body)
	if string(b) != `{"name":"Rex"}` {
		t.Errorf("body after signing: %q", b)
	}
}
