package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/yard-api/yard"
)

// Policy says where fetches may go: which file:// directories and which
// hosts the operator allows beyond the public Internet. The zero Policy
// allows https://, ssh:// and git@host:path to public addresses only, and
// no file:// URL. See docs/barks.md, "Where fetches may go".
type Policy struct {
	// AllowDirs are directories under which file:// URLs may point.
	AllowDirs []string
	// AllowHosts are host names or IP addresses the operator trusts: their
	// addresses are not checked (the tests' local git servers, an
	// internal git host).
	AllowHosts []string
	// Resolve looks up the addresses of a host name; nil means the
	// system resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Target is the parsed place a codeUrl points at.
type Target struct {
	Scheme string // https, ssh or file (git@host:path is ssh)
	Host   string // without brackets or a trailing dot, lower case
	Port   string // "" for the scheme's default
	Path   string // file:// only: the cleaned local path
}

// ParseTarget splits a codeUrl already accepted by yard.ValidateCodeURL.
func ParseTarget(s string) (Target, error) {
	if strings.HasPrefix(s, "git@") {
		host, _, ok := strings.Cut(strings.TrimPrefix(s, "git@"), ":")
		if !ok {
			return Target{}, errors.New("git@host:path form is malformed")
		}
		return Target{Scheme: "ssh", Host: normHost(host)}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, errors.New("is not a URL")
	}
	t := Target{Scheme: u.Scheme, Host: normHost(u.Hostname()), Port: u.Port()}
	if u.Scheme == "file" {
		t.Host = ""
		t.Path = filepath.Clean(u.Path)
	}
	return t, nil
}

func normHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// CheckURL is the check made when a codeUrl is written: its form
// (yard.ValidateCodeURL), file:// only under an allowed directory, and a
// host that is allowed or not obviously internal (an IP literal of a
// non-public range in any spelling, localhost and the private-use names).
// Names are resolved only when the fetch runs.
func (p *Policy) CheckURL(s string) error {
	if err := yard.ValidateCodeURL(s); err != nil {
		return err
	}
	t, err := ParseTarget(s)
	if err != nil {
		return err
	}
	switch t.Scheme {
	case "file":
		if !p.dirAllowed(t.Path) {
			return errors.New("file:// URLs are allowed only under a directory the operator allows")
		}
		return nil
	case "https", "ssh":
	default:
		return errors.New("scheme must be https, ssh or the git@host:path form")
	}
	if t.Port == "0" {
		return errors.New("port 0 cannot be reached")
	}
	if p.HostAllowed(t.Host, t.defaultPort()) {
		return nil
	}
	return checkHostName(t.Host)
}

// HostAllowed reports whether the operator lists host, alone or with
// port ("HOST" allows every port, "HOST:PORT" that port only).
func (p *Policy) HostAllowed(host, port string) bool {
	host = normHost(strings.Trim(host, "[]"))
	return slices.ContainsFunc(p.AllowHosts, func(h string) bool {
		ah, ap := h, ""
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			ah, ap = hh, pp
		}
		return normHost(strings.Trim(ah, "[]")) == host && (ap == "" || ap == port)
	})
}

// defaultPort is the port of a target without one.
func (t Target) defaultPort() string {
	if t.Scheme == "ssh" {
		return cmp.Or(t.Port, "22")
	}
	return cmp.Or(t.Port, "443")
}

// dirAllowed reports whether path lies inside one of the allowed
// directories, also once symbolic links are followed.
func (p *Policy) dirAllowed(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	path = filepath.Clean(path)
	real, err := filepath.EvalSymlinks(path)
	for _, d := range p.AllowDirs {
		d = filepath.Clean(d)
		if !under(path, d) {
			continue
		}
		if err != nil {
			// Not there (yet): the fetch fails on its own.
			return true
		}
		if rd, derr := filepath.EvalSymlinks(d); derr == nil && under(real, rd) {
			return true
		}
	}
	return false
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(os.PathSeparator))+string(os.PathSeparator))
}

var hostLabelRe = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$`)

// checkHostName refuses hosts that are plainly internal or malformed:
// IP literals outside the public ranges, numbers that are not a plain
// dotted quad (2130706433, 0x7f.1, 017700000001, 127.1: what a resolver
// would read as an IPv4 address), localhost and the names set aside for
// private networks.
func checkHostName(host string) error {
	if host == "" {
		return errors.New("must name a host")
	}
	if strings.Contains(host, ":") || strings.Contains(host, "%") {
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return errors.New("host is not a valid IPv6 address")
		}
		return CheckAddr(a)
	}
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if endsInNumber(last) {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is4() {
			return errors.New("host looks like an IPv4 address in an unusual spelling; write it as four decimal numbers")
		}
		return CheckAddr(a)
	}
	if len(host) > 253 {
		return errors.New("host name is too long")
	}
	for _, l := range labels {
		if len(l) > 63 || !hostLabelRe.MatchString(l) {
			return errors.New("host is not a valid host name")
		}
	}
	switch {
	case host == "localhost", strings.HasSuffix(host, ".localhost"),
		host == "localhost.localdomain", strings.HasSuffix(host, ".localdomain"),
		strings.HasSuffix(host, ".local"), strings.HasSuffix(host, ".internal"),
		strings.HasSuffix(host, ".home.arpa"), host == "local", host == "internal":
		return errors.New("host not allowed: a name for local or private networks")
	}
	return nil
}

// endsInNumber reports whether a last host label makes a resolver or URL
// parser read the host as an IPv4 address (WHATWG URL "ends in a number").
func endsInNumber(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0X") {
		_, err := strconv.ParseUint("0"+l[2:], 16, 64)
		return err == nil || l[2:] == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// Ranges that are not the public Internet (IANA special-purpose address
// registries, RFC 6890 and its updates). IPv6 outside 2000::/3 is refused
// as a whole; addresses that embed an IPv4 address are judged by it.
var refused4 = prefixes(
	"0.0.0.0/8",       // "this network", unspecified
	"10.0.0.0/8",      // private (RFC 1918)
	"100.64.0.0/10",   // shared address space, carrier-grade NAT (RFC 6598)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, broadcast
)

var refused6 = prefixes(
	"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
	"2001::/23",      // IETF protocol assignments (Teredo, benchmarking, ORCHID)
	"2001:db8::/32",  // documentation
	"3fff::/20",      // documentation
	"5f00::/16",      // segment routing SIDs
)

var global6 = netip.MustParsePrefix("2000::/3")

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// ErrNotPublic is returned by CheckAddr for an address that fetches may not
// connect to.
var ErrNotPublic = errors.New("host not allowed")

// CheckAddr reports whether a fetch may connect to a: nil for a public
// unicast address, an error wrapping ErrNotPublic otherwise. IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and
// 6to4 (2002::/16) addresses are judged by the IPv4 address they carry.
func CheckAddr(a netip.Addr) error {
	a = a.WithZone("")
	orig := a
	refused := func() error { return fmt.Errorf("%w: %s is not a public address", ErrNotPublic, orig) }
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() {
		// An IPv6 address that carries an IPv4 one is judged by it below.
		b := a.As16()
		switch {
		case netip.MustParsePrefix("::/96").Contains(a):
			// IPv4-compatible (deprecated), unspecified and loopback.
			return refused()
		case netip.MustParsePrefix("64:ff9b::/96").Contains(a):
			a = netip.AddrFrom4([4]byte(b[12:16]))
		case netip.MustParsePrefix("2002::/16").Contains(a):
			a = netip.AddrFrom4([4]byte(b[2:6]))
		case !global6.Contains(a) || slices.ContainsFunc(refused6, func(p netip.Prefix) bool { return p.Contains(a) }):
			return refused()
		default:
			return nil
		}
	}
	if slices.ContainsFunc(refused4, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return refused()
	}
	return nil
}

// resolve returns the addresses of host, every one of them public; a host
// with any other address is refused whole (a name that also points inside
// is not trusted). An IP literal is checked as it is.
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if err := checkHostName(host); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPublic, err)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	look := p.Resolve
	if look == nil {
		look = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := look(ctx, host)
	if err != nil {
		return nil, &connectError{err}
	}
	if len(addrs) == 0 {
		return nil, &connectError{errors.New("no addresses")}
	}
	for i, a := range addrs {
		if err := CheckAddr(a); err != nil {
			return nil, err
		}
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// Dial connects to host:port on a user's behalf (a fetch through the
// guard, a webhook delivery): a host the policy allows as it is; any other
// only at its addresses, resolved now, every one of which must be public
// (a name with one that is not is refused whole), and each checked again
// as the socket connects (d's Control), so an answer that changes between
// the check and the connection cannot lead inside. A refusal wraps
// ErrNotPublic; a failure to resolve or to connect is a connection error.
func (p *Policy) Dial(ctx context.Context, d *net.Dialer, host string, port uint16) (net.Conn, error) {
	hostPort := net.JoinHostPort(host, strconv.Itoa(int(port)))
	if p.HostAllowed(host, strconv.Itoa(int(port))) {
		c, err := d.DialContext(ctx, "tcp", hostPort)
		if err != nil {
			return nil, &connectError{err}
		}
		return c, nil
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	checked := *d
	checked.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotPublic, err)
		}
		return CheckAddr(ap.Addr())
	}
	var last error
	for _, a := range addrs {
		c, err := checked.DialContext(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err == nil {
			return c, nil
		}
		if errors.Is(err, ErrNotPublic) {
			return nil, err
		}
		last = err
	}
	return nil, &connectError{last}
}

// connectError is a failure to reach a host (resolution or connection).
type connectError struct{ err error }

func (e *connectError) Error() string { return "could not connect: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }
