package interop

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// mined waits for the transactions' receipts and fails the test unless each succeeded.
func (c *chain) mined(t *testing.T, txs ...string) {
	t.Helper()
	for _, tx := range txs {
		waitFor(10*time.Second, func() bool { return c.receiptStatus(t, tx) != "missing" })
		if s := c.receiptStatus(t, tx); s != "0x1" {
			t.Fatalf("transaction %s: status %s", tx, s)
		}
	}
}

// TestChannelWithdrawMidSession: a payer with a channel in use asks the escrow for most of its
// deposit back (initiateWithdraw). sandboxd's mirror (every second) sees it and its claimer
// claims what was charged at once, though no claim pass is due (claim_every 30 min, a
// threshold of 1 USDC); calls within the balance less the withdrawal are served, the next is
// refused (cumulative_exceeds_balance) and runs nothing. When the delay has passed (the
// chain's clock moved on) the payer finalizes, and at once (in the same block) asks for the
// rest, which it was charged for: sandboxd claims that too before it can be finalized. The
// payer ends up paying exactly what it was charged, all of it swept to payTo.
func TestChannelWithdrawMidSession(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	svc := startService(t, instance("channel-withdraw"), true, append(channelEnv(t, c, "onchain", nil),
		"SANDBOX_PAYMENTS_CHANNELS_MIRROR_EVERY=1s", "SANDBOX_PAYMENTS_CHANNELS_CLAIM_EVERY=30m")...)
	// The claimer's first pass, due at start, claims nothing yet.
	time.Sleep(2 * time.Second)
	key := writeKey(t, "payer.key", payer.key)
	code := codeCall(svc.URL, "print(6*7)")
	id, charged := checkCharged(t, payByChannel(t, c, key, 1, code, code, code).Results, 0)
	if st := escrowState(t, c, id); st.TotalClaimed.Sign() != 0 || st.Balance.Int64() != 50_000 {
		t.Fatalf("before the withdrawal the escrow shows %s claimed of %s; want nothing of the 50000 deposited", st.TotalClaimed, st.Balance)
	}
	config := configWords(payer.address, payee.address, relayer.address, channelWithdrawDelay)
	withdraw := func(amount int64) string {
		return c.sendAs(t, payer.address, escrowAddr, initiateWithdrawSelector+config+word(amount))
	}
	finalize := func() string { return c.sendAs(t, payer.address, escrowAddr, finalizeWithdrawSelector+config) }

	c.mined(t, withdraw(30_000)) // 20000 left to spend: one more call
	waitClaimed(t, c, id, charged)
	runs := runsOf(t, svc)
	more := payByChannel(t, c, key, 1, code, code)
	_, last := checkCharged(t, more.Results[:1], charged)
	charged += last
	if r := more.Results[1]; r.Status != http.StatusPaymentRequired || r.Settlement != nil || r.Required == nil ||
		!strings.Contains(r.Required.Error, codeExceedsBalance) {
		t.Errorf("a call past the balance less the withdrawal: %+v body %s; want a 402 %s", r, r.Body, codeExceedsBalance)
	}
	if got := runsOf(t, svc) - runs; got != 1 {
		t.Errorf("%d runs for a call served and one refused", got)
	}

	c.increaseTime(t, (channelWithdrawDelay+1)*time.Second)
	var txs []string
	c.inOneBlock(t, func() { txs = append(txs, finalize(), withdraw(50_000-30_000-(charged-last))) })
	c.mined(t, txs...)
	if got := c.balance(t, payer.address); got != 10_000_000-50_000+30_000 {
		t.Fatalf("the payer holds %d after its withdrawal, want %d", got, 10_000_000-50_000+30_000)
	}
	waitClaimed(t, c, id, charged)
	c.increaseTime(t, (channelWithdrawDelay+1)*time.Second)
	c.sendAs(t, payer.address, escrowAddr, finalizeWithdrawSelector+config) // nothing is left to take: it may revert
	waitFor(30*time.Second, func() bool { return c.balance(t, payee.address) == charged })
	if p, r := c.balance(t, payer.address), c.balance(t, payee.address); p != 10_000_000-charged || r != charged {
		t.Errorf("the payer holds %d and payTo %d; want %d and %d: the payer pays what it was charged",
			p, r, 10_000_000-charged, charged)
	}
}
