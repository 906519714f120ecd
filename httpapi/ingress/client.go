package ingress

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

// ipv6ClientBits is the prefix an IPv6 client is counted by: one host is
// commonly given a whole /64, so counting single addresses would give it
// 2^64 of each per-client cap.
const ipv6ClientBits = 64

// peerAddr is the address of the connection's far end, from RemoteAddr.
func peerAddr(remote string) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(remote)
		if splitErr != nil {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(host)
		return a.Unmap(), err == nil
	}
	return ap.Addr().Unmap(), true
}

// Trusted reports whether a is in one of proxies: the peers whose
// X-Forwarded-* headers are believed, or a fleet's replicas.
func Trusted(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Clients finds the client a request was sent for. Its fields are read
// on each call.
type Clients struct {
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// Hop, when set, names the caller of a request another replica of the
	// fleet forwarded (its signed hop), which Addr takes before any other.
	Hop func(context.Context) (netip.Addr, bool)
}

// FromTrustedProxy reports whether r's peer is a trusted proxy.
func (c Clients) FromTrustedProxy(r *http.Request) bool {
	a, ok := peerAddr(r.RemoteAddr)
	return ok && Trusted(c.TrustedProxies, a)
}

// Addr is the address r was sent from: its peer, or, when the peer is a
// trusted proxy, the last address of X-Forwarded-For that is not a
// trusted proxy (the nearest hop no proxy of ours can vouch for; the ones
// before it are the client's to write). A call another replica of the
// fleet forwarded is the caller's its hop names (Hop).
func (c Clients) Addr(r *http.Request) (netip.Addr, bool) {
	if c.Hop != nil {
		if a, ok := c.Hop(r.Context()); ok {
			return a, true
		}
	}
	a, ok := peerAddr(r.RemoteAddr)
	if !ok || !Trusted(c.TrustedProxies, a) {
		return a, ok
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return a, true // a hop we cannot read: count the proxy's own address
		}
		if hop = hop.Unmap(); !Trusted(c.TrustedProxies, hop) {
			return hop, true
		}
	}
	return a, true
}

// Key is what a per-client cap counts a from by: the address, or the /64
// of an IPv6 one.
func Key(a netip.Addr) netip.Prefix {
	if a.Is6() {
		p, _ := a.Prefix(ipv6ClientBits)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// Counter counts, per client (Key), something held at once (bodies being
// read, connections open, a fleet's lookups). Its zero value is ready.
type Counter struct {
	mu     sync.Mutex
	counts map[netip.Prefix]int
}

// Take counts one more for key unless it already holds most, and reports
// whether it did.
func (c *Counter) Take(key netip.Prefix, most int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = make(map[netip.Prefix]int)
	}
	if c.counts[key] >= most {
		return false
	}
	c.counts[key]++
	return true
}

// Give counts one less for key.
func (c *Counter) Give(key netip.Prefix) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts[key]--; c.counts[key] <= 0 {
		delete(c.counts, key)
	}
}

// held is how many key holds.
func (c *Counter) held(key netip.Prefix) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// clientCtxKey is the context key of a request's client (Key of its
// Addr, as text).
type clientCtxKey struct{}

// WithClient returns ctx naming a's client (Key), for ClientFrom.
func WithClient(ctx context.Context, a netip.Addr) context.Context {
	return context.WithValue(ctx, clientCtxKey{}, Key(a).String())
}

// ClientFrom is the client WithClient put in ctx; "" when none.
func ClientFrom(ctx context.Context) string {
	c, _ := ctx.Value(clientCtxKey{}).(string)
	return c
}
