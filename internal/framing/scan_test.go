package framing

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// request builds one HTTP/1.1 request of a random framing: no body, a
// Content-Length body, or a chunked body with extensions and trailers.
// Bodies hold text that looks like requests, to catch a scanner that reads
// headers inside bodies.
func request(rng *rand.Rand, smuggle bool) string {
	var b strings.Builder
	method := []string{"GET", "POST", "PUT", "PATCH"}[rng.IntN(4)]
	fmt.Fprintf(&b, "%s /v1/dogs/%d HTTP/1.1\r\nHost: localhost\r\n", method, rng.IntN(1000))
	body := strings.Repeat("x", rng.IntN(300)) + "\r\nGET / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
	switch {
	case smuggle:
		// Both, in either order and case.
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "content-length: %d\r\nTransfer-Encoding: chunked\r\n\r\n", len(body))
		} else {
			fmt.Fprintf(&b, "Transfer-Encoding:  Chunked \r\nCONTENT-LENGTH:%d\r\n\r\n", len(body))
		}
		fmt.Fprintf(&b, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	case rng.IntN(3) == 0:
		b.WriteString("\r\n")
	case rng.IntN(2) == 0:
		fmt.Fprintf(&b, "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	default:
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := body; rest != ""; {
			n := min(len(rest), 1+rng.IntN(100))
			ext := ""
			if rng.IntN(3) == 0 {
				ext = ";name=value"
			}
			fmt.Fprintf(&b, "%X%s\r\n%s\r\n", n, ext, rest[:n])
			rest = rest[n:]
		}
		b.WriteString("0\r\n")
		if rng.IntN(2) == 0 {
			b.WriteString("X-Trailer: 1\r\n")
		}
		b.WriteString("\r\n")
	}
	return b.String()
}

// TestScannerFindsTheRequestThatCarriesBoth: pipelines of random requests,
// fed in random pieces; the scanner names the one request that carries both
// Content-Length and Transfer-Encoding, and no other (bodies that look like
// such requests included).
func TestScannerFindsTheRequestThatCarriesBoth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		n := 1 + rng.IntN(8)
		bad := int64(0)
		if rng.IntN(3) > 0 {
			bad = 1 + rng.Int64N(int64(n))
		}
		var stream strings.Builder
		counted := int64(0)
		for k := int64(1); k <= int64(n); k++ {
			if rng.IntN(10) == 0 {
				stream.WriteString("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n") // no handler sees it
			}
			counted++
			stream.WriteString(request(rng, k == bad))
		}
		var s scanner
		got := int64(0)
		rest := stream.String()
		for rest != "" {
			m := min(len(rest), 1+rng.IntN(700))
			if k := s.feed([]byte(rest[:m])); k > 0 {
				if got != 0 {
					t.Fatalf("pipeline %d: flagged twice", i)
				}
				got = k
			}
			rest = rest[m:]
		}
		if got != bad {
			t.Fatalf("pipeline %d of %d requests: flagged request %d, want %d\n%q", i, counted, got, bad, stream.String())
		}
		if bad == 0 && s.off {
			t.Fatalf("pipeline %d: the scanner lost the framing of valid requests\n%q", i, stream.String())
		}
	}
}

// TestScannerLongLines: header lines and values longer than what the
// scanner keeps do not confuse it.
func TestScannerLongLines(t *testing.T) {
	long := strings.Repeat("a", 5000)
	stream := "GET /" + long + " HTTP/1.1\r\nX-Long: " + long + "\r\nHost: x\r\n\r\n" +
		"POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
	var s scanner
	if k := s.feed([]byte(stream)); k != 2 {
		t.Fatalf("flagged %d, want 2", k)
	}
}
