package interop

import (
	"fmt"
	"net/http"
	"testing"
)

// TestRetryFleet: two replicas on one PostgreSQL ledger, settling on chain. A
// paid answer lost on the way from replica 0 is asked again of replica 1: by the same
// payment, and then by its payment id in a new payment of the payer, each gets the answer
// replica 0 gave, paid once. A session call held by replica 0, lost and retried through
// replica 1 (which forwards it to the holder), does not run twice.
func TestRetryFleet(t *testing.T) {
	mustInterop(t)
	c := startAnvil(t)
	c.setup(t, map[string]int64{payer.address: 10_000_000})
	f := startFleetOf(t, 2, "retry", func(i int) []string {
		return []string{
			"SANDBOX_PAYMENTS_SETTLEMENT=onchain",
			"SANDBOX_PAYMENTS_RPC_URL=" + c.rpc,
			"SANDBOX_PAYMENTS_RELAYER_KEY_FILE=" + writeKey(t, fmt.Sprintf("relayer%d.key", i), fleetRelayers[i].key),
		}
	})
	p, d := dropProxy(t, f.nodes[0].URL)
	key := writeKey(t, "payer.key", payer.key)
	t.Run("one-shot", func(t *testing.T) {
		before := snapshot(t, c)
		id := fixedID + "_fleet"
		d.arm()
		steps := runRetry(t, key, []retryCall{
			{URL: p.URL + "/v1/code", Body: pythonBody(tokenCode), ID: id, RetryURL: f.nodes[1].URL + "/v1/code"},
			{URL: f.nodes[1].URL + "/v1/code", Body: pythonBody(tokenCode), ID: id},
		})
		lost := lastDrop(t, p, 1)
		checkReplayed(t, steps[0], lost, http.StatusOK)
		byID := steps[1]
		if byID.Status != http.StatusOK || byID.Text != string(lost.Body) || byID.Replayed != "true" || byID.Header == steps[0].Header {
			t.Errorf("a new payment with the id on replica 1: %d %s (replayed %q), want the lost answer", byID.Status, byID.Text, byID.Replayed)
		}
		expectMoved(t, c, before, payer.address)
	})
	t.Run("session", func(t *testing.T) {
		before := snapshot(t, c)
		id := payOpen(t, f, 0, key)
		counter := pythonBody("n = globals().get('n', 0) + 1\nprint(n)")
		path := "/v1/sessions/" + id + "/code"
		d.arm()
		steps := runRetry(t, key, []retryCall{
			{URL: p.URL + path, Body: counter, RetryURL: f.nodes[1].URL + path},
			{URL: f.nodes[1].URL + path, Body: counter},
		})
		checkReplayed(t, steps[0], lastDrop(t, p, 2), http.StatusOK)
		if stdoutOfText(t, steps[0].Text) != "1\n" || steps[1].Status != http.StatusOK || stdoutOfText(t, steps[1].Text) != "2\n" {
			t.Errorf("the replayed call %s, the next %d %s; want 1 then 2", steps[0].Text, steps[1].Status, steps[1].Text)
		}
		if n := len(c.transfersTo(t, payee.address, before.block)); n != 3 {
			t.Errorf("%d transfers for an open and two calls, want 3", n)
		}
	})
}
