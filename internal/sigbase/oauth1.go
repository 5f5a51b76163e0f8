package sigbase

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/url"
	"slices"
	"strings"
	"sync"
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
	return string(appendEncoded(make([]byte, 0, len(s)+2*n), s))
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

// OAuthBaseString returns the signature base string of RFC 5849 §3.4.1.1
// that OAuthSignature signs: the upper-case method, the encoded base
// string URI and the encoded normalized parameters, joined with '&'. It
// leaves params as they are; the server shows it in a refusal
// (docs/auth.md, "Diagnostics of a refused signature").
func OAuthBaseString(method, baseURI string, params [][2]string) string {
	return string(appendBaseString(nil, method, baseURI, slices.Clone(params)))
}

// encodeParams encodes each name and value of params in place (RFC 5849
// §3.6; a string with nothing to encode is kept as it is) and returns
// them.
func encodeParams(params [][2]string) [][2]string {
	for i, p := range params {
		params[i] = [2]string{OAuthEncode(p[0]), OAuthEncode(p[1])}
	}
	return params
}

// appendBaseString appends the base string to dst; params are encoded
// and sorted in place.
func appendBaseString(dst []byte, method, baseURI string, params [][2]string) []byte {
	dst = append(dst, strings.ToUpper(method)...)
	dst = append(dst, '&')
	dst = appendEncoded(dst, baseURI)
	dst = append(dst, '&')
	// The normalized parameters, encoded once more as the base string
	// holds them: "name=value" pairs joined with '&', each of the three
	// encoded.
	for i, p := range sortPairs(encodeParams(params)) {
		if i > 0 {
			dst = append(dst, "%26"...)
		}
		dst = appendEncoded(dst, p[0])
		dst = append(dst, "%3D"...)
		dst = appendEncoded(dst, p[1])
	}
	return dst
}

const upperHex = "0123456789ABCDEF"

// appendEncoded appends OAuthEncode(s) to dst.
func appendEncoded(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return dst
}

// OAuthSignature signs a request (RFC 5849 §3.4): the base string of
// method, baseURI and params, signed with the secrets by the signature
// method sigMethod. It is signBase(sigMethod, OAuthBaseString(…), …)
// built in one buffer. params must exclude oauth_signature and realm;
// they are encoded and sorted in place.
func OAuthSignature(sigMethod, method, baseURI string, params [][2]string, consumerSecret, tokenSecret string) (string, error) {
	if sigMethod == OAuthPlaintext {
		return signBase(sigMethod, nil, consumerSecret, tokenSecret)
	}
	bp := basePool.Get().(*[]byte)
	base := appendBaseString((*bp)[:0], method, baseURI, params)
	sig, err := signBase(sigMethod, base, consumerSecret, tokenSecret)
	if cap(base) <= 8<<10 {
		*bp = base
		basePool.Put(bp)
	}
	return sig, err
}

// basePool holds base string buffers.
var basePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// ErrOAuthMethod is returned for a signature method yard does not accept.
var ErrOAuthMethod = errors.New("oauth1: unsupported signature method")

// signBase returns the oauth_signature of a base string with the given
// method (RFC 5849 §3.4.2 and §3.4.4): the key is the encoded consumer
// secret, '&', and the encoded token secret (empty when there is no
// token). PLAINTEXT ignores the base string and is the key itself.
func signBase(method string, base []byte, consumerSecret, tokenSecret string) (string, error) {
	var kb [128]byte
	key := appendEncoded(kb[:0], consumerSecret)
	key = append(key, '&')
	key = appendEncoded(key, tokenSecret)
	var h func() hash.Hash
	switch method {
	case OAuthHMACSHA1:
		h = sha1.New
	case OAuthHMACSHA256:
		h = sha256.New
	case OAuthPlaintext:
		return string(key), nil
	default:
		return "", ErrOAuthMethod
	}
	m := hmac.New(h, key)
	m.Write(base)
	var sum [sha256.Size]byte
	return base64.StdEncoding.EncodeToString(m.Sum(sum[:0])), nil
}
