package interop

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandboxd/internal/servicetest"
)

// fixedID is the payment id the cases below send on purpose, twice.
const fixedID = "pay_retry_interop_0123456789abcdef"

// testRetryHangUp (§4.6, §4.4): the caller hangs up while its paid program still runs (the
// service sees it leave) and asks again with the same header while it runs: the retry waits
// for the first and gets its answer, replayed; the run is settled once.
func testRetryHangUp(t *testing.T, c *chain, p *servicetest.DropProxy, d *dropper, key string) {
	before, drops := snapshot(t, c), len(p.Drops())
	p.SetHangUp(500 * time.Millisecond)
	defer p.SetHangUp(0)
	d.arm()
	steps := runRetry(t, key, []retryCall{{URL: p.URL + "/v1/code", Body: pythonBody("import time\ntime.sleep(2)\n" + tokenCode)}})
	s := steps[0]
	if lost := lastDrop(t, p, drops+1); !lost.HungUp {
		t.Fatalf("the proxy did not hang up: %+v", lost)
	}
	if s.Dropped == "" || s.Status != http.StatusOK || s.Replayed != "true" || s.PaymentResponse == "" || len(stdoutOfText(t, s.Text)) != 17 {
		t.Errorf("the retry after a hang-up: %+v; want the first's answer, replayed", s)
	}
	expectMoved(t, c, before, payer.address)
}

// testRetryIDConflict (§8): the same payment id with another body is a 409, whether in a
// new payment of the payer or in the first's own header; neither is paid: one transfer.
func testRetryIDConflict(t *testing.T, c *chain, base, key string) {
	before := snapshot(t, c)
	id := fixedID + "_conflict"
	first := 0
	steps := runRetry(t, key, []retryCall{
		{URL: base + "/v1/code", Body: pythonBody("print(1)"), ID: id},
		{URL: base + "/v1/code", Body: pythonBody("print(2)"), ID: id},
		{ResendOf: &first, Body: pythonBody("print(2)")},
	})
	if steps[0].Status != http.StatusOK || steps[0].ID != id {
		t.Fatalf("first call: %+v", steps[0])
	}
	for i, s := range steps[1:] {
		if s.Status != http.StatusConflict || !strings.Contains(s.Text, "another request") || s.PaymentResponse != "" {
			t.Errorf("call %d, the same id with another body: %d %s (PAYMENT-RESPONSE %q), want 409", i+2, s.Status, s.Text, s.PaymentResponse)
		}
	}
	expectMoved(t, c, before, payer.address)
}

// testRetryOtherWallet (§8): another wallet sending a payment id the payer used, with the
// same body, gets a run of its own (another token), paid by itself, and nothing of the
// payer's answer; the payer's retry still gets its answer back.
func testRetryOtherWallet(t *testing.T, c *chain, p *servicetest.DropProxy, d *dropper, key string) {
	before, drops := snapshot(t, c), len(p.Drops())
	id := fixedID + "_wallet"
	otherKey := writeKey(t, "other.key", other.key)
	first := 0
	d.arm()
	steps := runRetry(t, key, []retryCall{
		{URL: p.URL + "/v1/code", Body: pythonBody(tokenCode), ID: id},
		{URL: p.URL + "/v1/code", Body: pythonBody(tokenCode), ID: id, KeyFile: otherKey},
		{ResendOf: &first},
	})
	lost := lastDrop(t, p, drops+1)
	checkReplayed(t, steps[0], lost, http.StatusOK)
	theirs := steps[1]
	if theirs.Status != http.StatusOK || theirs.Replayed != "" || theirs.ID != id {
		t.Fatalf("the other wallet's call: %+v", theirs)
	}
	if stdoutOfText(t, theirs.Text) == stdoutOfText(t, string(lost.Body)) || theirs.PaymentResponse == steps[0].PaymentResponse {
		t.Errorf("the other wallet got the payer's answer: %s", theirs.Text)
	}
	if again := steps[2]; again.Status != http.StatusOK || again.Text != string(lost.Body) || again.Replayed != "true" {
		t.Errorf("the payer's retry after the other wallet's call: %d %s (replayed %q)", again.Status, again.Text, again.Replayed)
	}
	transfers := c.transfersTo(t, payee.address, before.block)
	if len(transfers) != 2 || strings.EqualFold(transfers[0].From, transfers[1].From) {
		t.Errorf("transfers %+v, want one from each wallet", transfers)
	}
}

// testRetryCall: `sandboxd call` whose answer is lost asks again by itself with the same
// payment, prints the replay note and the answer, and pays once.
func testRetryCall(t *testing.T, c *chain, p *servicetest.DropProxy, d *dropper, key string) {
	before, drops := snapshot(t, c), len(p.Drops())
	d.arm()
	code, out := runSandboxd(t, "call", "--key-file", key, "--url", p.URL+"/v1/code", "-c", tokenCode)
	lost := lastDrop(t, p, drops+1)
	if code != 0 || !strings.Contains(out, "asking again with the same payment") || !strings.Contains(out, "answer replayed: paid once") {
		t.Fatalf("sandboxd call exited %d:\n%s", code, out)
	}
	if token := stdoutOfText(t, string(lost.Body)); !strings.Contains(out, strings.TrimSpace(token)) {
		t.Errorf("sandboxd call printed no token %q of the lost answer:\n%s", token, out)
	}
	expectMoved(t, c, before, payer.address)
}

// TestRetryChannel: the official batch-settlement client pays a deposit, then a
// voucher whose answer is lost on the way; the same voucher sent again gets that answer
// back byte for byte with its original PAYMENT-RESPONSE (not a corrective 402), and the
// voucher after it is charged on top of two calls, not three: the retry was charged nothing,
// and the escrow shows three prices claimed.
func TestRetryChannel(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	p, d, key := startBehindProxy(t, "retry-channel", append(channelEnv(t, c, "onchain", nil), claimPromptly...))
	call := retryCall{URL: p.URL + "/v1/code", Body: pythonBody(tokenCode)}
	d.armNth(2)
	steps := runRetry(t, key, []retryCall{call, call, call}, "--scheme", "batch-settlement", "--rpc", c.rpc)
	if steps[0].Status != http.StatusOK || steps[0].Dropped != "" {
		t.Fatalf("the deposit: %+v", steps[0])
	}
	checkReplayed(t, steps[1], lastDrop(t, p, 1), http.StatusOK)
	settled := make([]*channelSettlement, len(steps))
	for i, s := range steps {
		if err := json.Unmarshal(s.Settlement, &settled[i]); err != nil || settled[i] == nil {
			t.Fatalf("step %d: settlement %s: %v", i, s.Settlement, err)
		}
	}
	if got := settled[1].Extra.ChannelState.ChargedCumulativeAmount; got != strconv.Itoa(2*price) {
		t.Errorf("the replayed voucher's report says %s charged in all, want the original %d", got, 2*price)
	}
	if got := settled[2].Extra.ChannelState.ChargedCumulativeAmount; steps[2].Status != http.StatusOK || got != strconv.Itoa(3*price) {
		t.Errorf("the voucher after the retry: %d, %s charged in all; want 200 and %d (three calls)", steps[2].Status, got, 3*price)
	}
	waitClaimed(t, c, settled[2].Extra.ChannelState.ChannelID, 3*price)
}
