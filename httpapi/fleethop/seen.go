package fleethop

import (
	"sync"
	"time"

	"sandboxd"
)

// Seen remembers the hops a replica took, for as long as each could still
// verify (its time plus Skew), so that a hop copied off the wire between
// two replicas is refused when it comes again. Only hops that verify are
// remembered, and only a replica holding the fleet secret can make one, so
// what it holds is bounded by the fleet's own forwarding rate; maxSeen
// bounds it anyway. The zero value is ready; it is safe for concurrent use.
type Seen struct {
	mu   sync.Mutex
	macs map[string]time.Time
	// next is when the next sweep is due: at most one a second.
	next time.Time
}

// maxSeen bounds the hops remembered at once: 2*Skew of forwards at over
// 4,000 a second, some 10 MiB.
const maxSeen = 1 << 18

// Take takes hop at now once: a second time it is the 403 of a replay. A
// replica that remembers maxSeen hops already refuses more as busy.
func (h *Seen) Take(hop Verified, now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.macs == nil {
		h.macs = map[string]time.Time{}
	}
	if !now.Before(h.next) {
		h.sweep(now)
	}
	if _, ok := h.macs[hop.mac]; ok {
		return refused("this hop was taken already (each forwarded call is signed once)")
	}
	if len(h.macs) >= maxSeen {
		return &sandboxd.Error{Code: sandboxd.CodeBusy, Op: op, RetryAfter: time.Second,
			Message: "this replica is taking more forwarded calls than it can remember; nothing was charged, retry after the time in Retry-After"}
	}
	h.macs[hop.mac] = hop.at.Add(Skew)
	return nil
}

// sweep drops the hops that can no longer verify at now.
func (h *Seen) sweep(now time.Time) {
	h.next = now.Add(time.Second)
	for mac, until := range h.macs {
		if now.After(until) {
			delete(h.macs, mac)
		}
	}
}
