package httpapi

import "testing"

// TestClientKey: a client is its host without the port, an IPv6 one its
// /64 network.
func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7:443", "192.0.2.7"},
		{"192.0.2.7:5000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:80", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:443", "::ffff:192.0.2.7"}, // an IPv4 client, by its address
		{"pipe", "pipe"},
	} {
		if got := ClientKey(tc.addr); got != tc.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
