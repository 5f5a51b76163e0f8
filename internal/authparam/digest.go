package authparam

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// DigestChallenges returns the parameters (by lower-case name) of the
// Digest challenges in h's WWW-Authenticate field values, one challenge
// a value as yard sends them (RFC 7616 §3.3, §3.7); the last of a
// repeated name wins. A value whose parameters do not parse is left out.
func DigestChallenges(h http.Header) []map[string]string {
	var out []map[string]string
	for _, v := range h.Values("WWW-Authenticate") {
		scheme, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
		ps, err := Parse(rest, false)
		if !strings.EqualFold(scheme, "Digest") || err != nil {
			continue
		}
		m := make(map[string]string, len(ps))
		for _, p := range ps {
			m[strings.ToLower(p.Name)] = p.Value
		}
		out = append(out, m)
	}
	return out
}

// DigestAnswer is a client's answer to a Digest challenge with qop=auth
// (RFC 7616 §3.4): the hashes it computes and the Authorization value
// that carries them.
type DigestAnswer struct {
	HA1, HA2, Response string
	Authorization      string
}

// AnswerDigest answers the Digest challenge ch (its parameters by
// lower-case name, as DigestChallenges gives them) for a request of
// method to uri, with the nonce count nc (8 hex digits) and the client
// nonce cnonce (RFC 7616 §3.4.1). algorithm is stated in the credentials
// as given; MD5 (in any case) hashes with MD5, anything else with
// SHA-256. The opaque of the challenge, when it has one, is echoed.
func AnswerDigest(ch map[string]string, algorithm, username, password, method, uri, nc, cnonce string) DigestAnswer {
	sum := func(s string) string { return DigestHash(algorithm, s) }
	a := DigestAnswer{HA1: sum(username + ":" + ch["realm"] + ":" + password), HA2: sum(method + ":" + uri)}
	a.Response = sum(a.HA1 + ":" + ch["nonce"] + ":" + nc + ":" + cnonce + ":auth:" + a.HA2)
	a.Authorization = "Digest username=" + Quote(username) + ", realm=" + Quote(ch["realm"]) + ", nonce=" + Quote(ch["nonce"]) +
		", uri=" + Quote(uri) + ", algorithm=" + algorithm + ", qop=auth, nc=" + nc + ", cnonce=" + Quote(cnonce) + ", response=" + Quote(a.Response)
	if o, ok := ch["opaque"]; ok {
		a.Authorization += ", opaque=" + Quote(o)
	}
	return a
}

// DigestHash is the lower-case hex hash of s with the Digest algorithm
// named (RFC 7616 §3.4.1): MD5 (in any case) hashes with MD5, anything
// else with SHA-256. The server's checks and the clients' answers hash
// with it alike.
func DigestHash(algorithm, s string) string {
	h := sha256.New
	if strings.EqualFold(algorithm, "MD5") {
		h = md5.New
	}
	x := h()
	x.Write([]byte(s))
	return hex.EncodeToString(x.Sum(nil))
}
