package sigbase

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/url"
	"strings"
)

// OAuth 1.0a signature methods (RFC 5849 §3.4; HMAC-SHA256 is the common
// extension of §3.4.2 with SHA-256).
const (
	OAuthHMACSHA1   = "HMAC-SHA1"
	OAuthHMACSHA256 = "HMAC-SHA256"
	OAuthPlaintext  = "PLAINTEXT"
)

// OAuthEncode percent-encodes s as RFC 5849 §3.6 requires: every byte but
// the unreserved characters ALPHA, DIGIT, '-', '.', '_' and '~' becomes
// %XX with upper-case hex digits.
func OAuthEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexdig = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexdig[c>>4], hexdig[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// OAuthBaseURI returns the base string URI of RFC 5849 §3.4.1.2: the
// scheme and host in lower case, the port only when it is not the
// scheme's default, the path, and no query or fragment.
func OAuthBaseURI(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && !(scheme == "https" && p == "443") && !(scheme == "http" && p == "80") {
		host += ":" + p
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path
}

// OAuthNormalizeParams returns the normalized request parameters of RFC
// 5849 §3.4.1.3.2: each name and value encoded, sorted by name and then by
// value, joined as name=value with '&'. params must already exclude
// oauth_signature and realm.
func OAuthNormalizeParams(params [][2]string) string {
	enc := make([][2]string, len(params))
	for i, p := range params {
		enc[i] = [2]string{OAuthEncode(p[0]), OAuthEncode(p[1])}
	}
	return joinSorted(enc)
}

// OAuthBaseString returns the signature base string of RFC 5849 §3.4.1.1:
// the upper-case method, the encoded base string URI and the encoded
// normalized parameters, joined with '&'.
func OAuthBaseString(method, baseURI string, params [][2]string) string {
	return strings.ToUpper(method) + "&" + OAuthEncode(baseURI) + "&" + OAuthEncode(OAuthNormalizeParams(params))
}

// ErrOAuthMethod is returned for a signature method yard does not accept.
var ErrOAuthMethod = errors.New("oauth1: unsupported signature method")

// OAuthSign returns the oauth_signature of a base string with the given
// method (RFC 5849 §3.4.2 and §3.4.4): the key is the encoded consumer
// secret, '&', and the encoded token secret (empty when there is no
// token). PLAINTEXT ignores the base string and is the key itself.
func OAuthSign(method, base, consumerSecret, tokenSecret string) (string, error) {
	key := OAuthEncode(consumerSecret) + "&" + OAuthEncode(tokenSecret)
	var h func() hash.Hash
	switch method {
	case OAuthHMACSHA1:
		h = sha1.New
	case OAuthHMACSHA256:
		h = sha256.New
	case OAuthPlaintext:
		return key, nil
	default:
		return "", ErrOAuthMethod
	}
	m := hmac.New(h, []byte(key))
	m.Write([]byte(base))
	return base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}
