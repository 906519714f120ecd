package httpapi

import (
	"sync"
	"time"

	"sandboxd"
)

// hopsSeen remembers the hops a replica took, for as long as each could
// still verify (its time plus hopSkew), so that a hop copied off the wire
// between two replicas is refused when it comes again. Only hops that
// verify are remembered, and only a replica holding the fleet secret can
// make one, so what it holds is bounded by the fleet's own forwarding
// rate; maxHopsSeen bounds it anyway.
type hopsSeen struct {
	mu   sync.Mutex
	macs map[string]time.Time
	// next is when the next sweep is due: at most one a second.
	next time.Time
}

// maxHopsSeen bounds the hops remembered at once: 2*hopSkew of forwards at
// over 4,000 a second, some 10 MiB.
const maxHopsSeen = 1 << 18

// take takes hop at now once: a second time it is the 403 of a replay. A
// replica that remembers maxHopsSeen hops already refuses more as busy.
func (h *hopsSeen) take(hop verifiedHop, now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.macs == nil {
		h.macs = map[string]time.Time{}
	}
	if !now.Before(h.next) {
		h.sweep(now)
	}
	if _, ok := h.macs[hop.mac]; ok {
		return hopRefused("httpapi.hop", "this hop was taken already (each forwarded call is signed once)")
	}
	if len(h.macs) >= maxHopsSeen {
		return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "httpapi.hop", RetryAfter: time.Second,
			Message: "this replica is taking more forwarded calls than it can remember; nothing was charged, retry after the time in Retry-After"}
	}
	h.macs[hop.mac] = hop.at.Add(hopSkew)
	return nil
}

// sweep drops the hops that can no longer verify at now.
func (h *hopsSeen) sweep(now time.Time) {
	h.next = now.Add(time.Second)
	for mac, until := range h.macs {
		if now.After(until) {
			delete(h.macs, mac)
		}
	}
}
