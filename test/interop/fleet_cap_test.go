package interop

import (
	"net/http"
	"strings"
	"testing"
)

// testFleetPayerCap: sessions.max_per_payer (2) holds across the fleet: a wallet holding
// a session on replica 1 and one on replica 2 is refused a third on replica 0 (429, nothing
// charged), and opens again there once it closed one.
func testFleetPayerCap(t *testing.T, c *chain, f *fleet, keyFile string) {
	a, b := payOpen(t, f, 1, keyFile), payOpen(t, f, 2, keyFile)
	before := snapshot(t, c)
	var r sessionPay
	runClient(t, &r, "pay", f.nodes[0].URL+"/v1/sessions", keyFile, "--body", "{}")
	if r.Status != http.StatusTooManyRequests || !strings.Contains(r.Body.Error, "this wallet holds 2 sessions") {
		t.Fatalf("a third open on a third replica: %+v", r)
	}
	expectUnmoved(t, c, before)
	closeSession(t, f, 0, a) // forwarded to replica 1
	c3 := payOpen(t, f, 0, keyFile)
	for _, id := range []string{b, c3} {
		closeSession(t, f, 0, id)
	}
}

// closeSession ends session id through replica i: 204.
func closeSession(t *testing.T, f *fleet, i int, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, f.nodes[i].URL+"/v1/sessions/"+id, nil)
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("close %s through replica %d: %d", id[:8], i, res.StatusCode)
	}
}
