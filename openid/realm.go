package openid

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Realm is a parsed openid.realm: the URL pattern of the relying party
// that the user is asked to trust (OpenID 2.0 §9.2).
type Realm struct {
	Scheme string
	// Host is the domain without any "*." wildcard; Wildcard says whether
	// subdomains match too.
	Host     string
	Wildcard bool
	Port     string
	Path     string
	raw      string
}

// String returns the realm as the relying party wrote it.
func (r *Realm) String() string { return r.raw }

// ParseRealm checks a realm: an absolute http(s) URL without a fragment,
// whose host may start with "*." (a wildcard). A wildcard over a bare
// top-level domain (https://*.com/) is refused as too broad.
func ParseRealm(s string) (*Realm, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("the realm is not an absolute http or https URL")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return nil, errors.New("the realm must not have a fragment")
	}
	if u.User != nil {
		return nil, errors.New("the realm must not carry user information")
	}
	r := &Realm{Scheme: u.Scheme, Host: strings.ToLower(u.Hostname()), raw: s}
	r.Port, r.Path = portPath(u)
	if rest, ok := strings.CutPrefix(r.Host, "*."); ok {
		r.Host, r.Wildcard = rest, true
		if !strings.Contains(rest, ".") || net.ParseIP(rest) != nil {
			return nil, errors.New("the realm's wildcard covers too much")
		}
	}
	if strings.Contains(r.Host, "*") {
		return nil, errors.New("a wildcard may only start the realm's host (*.example.org)")
	}
	return r, nil
}

// portPath returns u's port, the scheme's default when it names none, and
// its escaped path, "/" when empty.
func portPath(u *url.URL) (port, path string) {
	port, path = u.Port(), u.EscapedPath()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if path == "" {
		path = "/"
	}
	return port, path
}

// Matches reports whether a return_to URL lies inside the realm: same
// scheme and port, the same host (or a subdomain of a wildcard realm), and
// a path equal to the realm's or below it (OpenID 2.0 §9.2).
func (r *Realm) Matches(returnTo string) bool {
	u, err := url.Parse(returnTo)
	if err != nil || u.Scheme != r.Scheme || u.Host == "" || u.Fragment != "" || u.User != nil {
		return false
	}
	port, p := portPath(u)
	if port != r.Port {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host != r.Host && !(r.Wildcard && strings.HasSuffix(host, "."+r.Host)) {
		return false
	}
	switch {
	case p == r.Path:
		return true
	case strings.HasSuffix(r.Path, "/"):
		return strings.HasPrefix(p, r.Path)
	default:
		return strings.HasPrefix(p, r.Path+"/")
	}
}

// ValidReturnTo reports whether s can be redirected to: an absolute http
// or https URL without a fragment.
func ValidReturnTo(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Fragment == "" &&
		!strings.ContainsAny(s, "\r\n")
}

// nonceTime is the layout of a response nonce's time (OpenID 2.0 §10.1).
const nonceTime = "2006-01-02T15:04:05Z"

// NewNonce returns a response nonce: the time in UTC, to the second, and
// 16 random printable characters.
func NewNonce(now time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format(nonceTime) + base64.RawURLEncoding.EncodeToString(b[:])
}

// NonceTime returns the time of a response nonce, checking its form: at
// most 255 characters, the time, then printable ASCII without spaces.
func NonceTime(nonce string) (time.Time, error) {
	if len(nonce) < len(nonceTime) || len(nonce) > 255 {
		return time.Time{}, errors.New("the response nonce has a bad length")
	}
	if strings.ContainsFunc(nonce[len(nonceTime):], func(c rune) bool { return c < 33 || c > 126 }) {
		return time.Time{}, errors.New("the response nonce has a bad character")
	}
	t, err := time.Parse(nonceTime, nonce[:len(nonceTime)])
	if err != nil {
		return time.Time{}, fmt.Errorf("the response nonce does not start with a time: %v", err)
	}
	return t, nil
}

// XRDS returns an XRDS document (Yadis 1.0, OpenID 2.0 §7.3.2) with one
// OpenID service: an OP identifier element when localID is empty
// (Type .../server), else a claimed identifier element (Type .../signon)
// with its LocalID.
func XRDS(endpoint, localID string) []byte {
	type service struct {
		Priority int    `xml:"priority,attr"`
		Type     string `xml:"Type"`
		URI      string `xml:"URI"`
		LocalID  string `xml:"LocalID,omitempty"`
	}
	type xrd struct {
		XMLName xml.Name `xml:"xri://$xrd*($v*2.0) XRD"`
		Service service  `xml:"Service"`
	}
	type xrds struct {
		XMLName xml.Name `xml:"xri://$xrds XRDS"`
		XRD     xrd
	}
	s := service{Priority: 0, Type: TypeServer, URI: endpoint}
	if localID != "" {
		s.Type, s.LocalID = TypeSignon, localID
	}
	out, _ := xml.MarshalIndent(xrds{XRD: xrd{Service: s}}, "", "  ")
	return append([]byte(xml.Header), append(out, '\n')...)
}
