package ingress

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

// TestClientAddrBehindATrustedProxy: the client of a request from a
// trusted proxy is the last X-Forwarded-For hop that is not a trusted
// proxy; from any other peer X-Forwarded-For is ignored; an IPv6 client
// is counted by its /64.
func TestClientAddrBehindATrustedProxy(t *testing.T) {
	clients := Clients{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	cases := []struct{ peer, xff, want string }{
		{"192.0.2.1:1", "203.0.113.9", "192.0.2.1/32"},
		{"10.0.0.1:1", "203.0.113.9", "203.0.113.9/32"},
		{"10.0.0.1:1", "198.51.100.1, 203.0.113.9, 10.0.0.2", "203.0.113.9/32"},
		{"10.0.0.1:1", "", "10.0.0.1/32"},
		{"10.0.0.1:1", "not-an-address", "10.0.0.1/32"},
		{"[::1]:1", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::9]:1", "", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.1]:1", "", "192.0.2.1/32"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/v1/code", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		a, ok := clients.Addr(r)
		if got := Key(a).String(); !ok || got != c.want {
			t.Errorf("peer %s, X-Forwarded-For %q: client %s (%v), want %s", c.peer, c.xff, got, ok, c.want)
		}
	}
}
