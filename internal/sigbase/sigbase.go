// Package sigbase builds the strings yard's signing schemes sign, and signs
// them: the canonical string of a signed request (docs/auth.md, "Signed
// requests") and the signature base string of OAuth 1.0a (RFC 5849 §3.4).
// The server (package auth) verifies with these functions and the Go
// client (package client) signs with them, so the two cannot drift apart.
// It is a leaf: it imports nothing of yard.
package sigbase

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
)

// ParseRawQuery splits a raw query string (or a form body) on '&' into
// name/value pairs, percent-decoding each ('+' is a space, as in HTML
// forms). Empty pieces are skipped; a bad escape is an error. A ';' is
// part of a value (RFC 5849 §3.4.1.3.1 splits on '&' only, and so do
// signed requests).
func ParseRawQuery(raw string) ([][2]string, error) {
	var out [][2]string
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		n, v, _ := strings.Cut(piece, "=")
		name, err := url.QueryUnescape(n)
		if err != nil {
			return nil, err
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{name, val})
	}
	return out, nil
}

// CanonicalString returns the string a signed request signs (docs/auth.md,
// "Signed requests"): the decoded path, "?", then every query pair except
// signature as name=value with the name lower-cased and the raw (decoded)
// value, sorted by name and then by value, joined with "&".
func CanonicalString(path string, pairs [][2]string) string {
	kept := make([][2]string, 0, len(pairs))
	for _, p := range pairs {
		if name := strings.ToLower(p[0]); name != "signature" {
			kept = append(kept, [2]string{name, p[1]})
		}
	}
	return path + "?" + joinSorted(kept)
}

// sortPairs sorts pairs in place by name and then by value, and returns
// them.
func sortPairs(pairs [][2]string) [][2]string {
	slices.SortFunc(pairs, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return pairs
}

// joinSorted sorts pairs by name and then by value and joins them as
// name=value with '&'.
func joinSorted(pairs [][2]string) string {
	var b strings.Builder
	for i, p := range sortPairs(pairs) {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(p[1])
	}
	return b.String()
}

// Sign returns the signature of a signed request's canonical string:
// hex(HMAC-SHA256(secret, s)), lower-case.
func Sign(secret []byte, s string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}
