package httpapi

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"sandboxd"
)

// hopRecorder is a hop transport that remembers the hop headers it sent.
type hopRecorder struct {
	mu   sync.Mutex
	hops []string
}

func (h *hopRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.hops = append(h.hops, r.Header.Get(hopHeader))
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestFleetHopForAnotherReplicaIsRefused: a hop replica a signed for
// replica b, copied off the wire and sent to replica c (which never took
// it), is a 403 at c and runs nothing: the hop names its destination
// under its MAC.
func TestFleetHopForAnotherReplicaIsRefused(t *testing.T) {
	reg := &fakeRegistry{places: map[string]sandboxd.SessionPlace{}}
	a, b, c := newFleetReplica(t, reg, "a"), newFleetReplica(t, reg, "b"), newFleetReplica(t, reg, "c")
	rec := &hopRecorder{}
	a.srv.Fleet.Transport = rec
	path := openCodePath(t, b)
	if status, _, body := sendPaid(t, "POST", a.ts.URL+path, `{"code":"1"}`, nil); status != http.StatusOK {
		t.Fatalf("a call through a for b's session: %d %s", status, body)
	}
	if len(rec.hops) != 1 || rec.hops[0] == "" {
		t.Fatalf("a sent hops %q, want one", rec.hops)
	}
	status, _, body := sendPaid(t, "POST", c.ts.URL+path, `{"code":"1"}`, http.Header{hopHeader: {rec.hops[0]}})
	if status != http.StatusForbidden || !strings.Contains(body, hopHeader) {
		t.Errorf("b's hop replayed to c: %d %s; want 403", status, body)
	}
	if _, _, runs := c.engine.counts(); runs != 0 {
		t.Errorf("c ran %d calls", runs)
	}
}
