package httpapi

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

// trusted reports whether a is one of the proxies whose X-Forwarded-*
// headers are believed.
func trusted(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// fromTrustedProxy reports whether r's peer is a trusted proxy.
func (s *Server) fromTrustedProxy(r *http.Request) bool {
	a, ok := peerAddr(r.RemoteAddr)
	return ok && trusted(s.TrustedProxies, a)
}

// clientAddr is the address r was sent from: its peer, or, when the peer
// is a trusted proxy, the last address of X-Forwarded-For that is not a
// trusted proxy (the nearest hop no proxy of ours can vouch for; the ones
// before it are the client's to write).
//
// A call another replica of the fleet forwarded is the caller's its signed
// hop names (fleet_hop.go).
func (s *Server) clientAddr(r *http.Request) (netip.Addr, bool) {
	if a, ok := hopClient(r.Context()); ok {
		return a, true
	}
	a, ok := peerAddr(r.RemoteAddr)
	if !ok || !trusted(s.TrustedProxies, a) {
		return a, ok
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return a, true // a hop we cannot read: count the proxy's own address
		}
		if hop = hop.Unmap(); !trusted(s.TrustedProxies, hop) {
			return hop, true
		}
	}
	return a, true
}

// clientKey is what a per-client cap counts a from by: the address, or
// the /64 of an IPv6 one.
func clientKey(a netip.Addr) netip.Prefix {
	if a.Is6() {
		p, _ := a.Prefix(ipv6ClientBits)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// clientCounter counts, per client, something held at once (bodies being
// read, connections open).
type clientCounter struct {
	mu   sync.Mutex
	held map[netip.Prefix]int
}

// take counts one more for key unless it already holds most, and reports
// whether it did.
func (c *clientCounter) take(key netip.Prefix, most int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = make(map[netip.Prefix]int)
	}
	if c.held[key] >= most {
		return false
	}
	c.held[key]++
	return true
}

// give counts one less for key.
func (c *clientCounter) give(key netip.Prefix) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[key]--; c.held[key] <= 0 {
		delete(c.held, key)
	}
}

// clientCtxKey is the context key of a request's client (clientKey of its
// clientAddr, as text).
type clientCtxKey struct{}

// clients puts each request's client in its context (clientFrom), for the
// caps counted deeper down than the request (the free sessions').
func (s *Server) clients(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := s.clientAddr(r); ok {
			r = r.WithContext(context.WithValue(r.Context(), clientCtxKey{}, clientKey(a).String()))
		}
		next.ServeHTTP(w, r)
	})
}

// clientFrom is the client that clients put in ctx; "" when none.
func clientFrom(ctx context.Context) string {
	c, _ := ctx.Value(clientCtxKey{}).(string)
	return c
}
