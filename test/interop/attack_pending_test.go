package interop

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	payledger "sandboxd/payments/ledger"
)

// stallDelay holds the settlement's outcome well past payments.settle_timeout (3 s here).
const stallDelay = 10 * time.Second

// TestSettlementPendingOnchain: the receipts of settlement transactions
// do not come back in time (a stalled RPC node); the transaction was sent and mined.
func TestSettlementPendingOnchain(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "onchain", func(t testing.TB, url string) string {
		return delayProxy(t, url, stallDelay, func(_ string, req, _ []byte) bool {
			return bytes.Contains(req, []byte("eth_getTransactionReceipt"))
		})
	})
	testSettlementPending(t, c, "pending-onchain", env, payledger.StatusSettled)
}

// TestSettlementPendingFacilitator: the facilitator's /settle answers after
// payments.settle_timeout; it settles anyway.
func TestSettlementPendingFacilitator(t *testing.T) {
	mustInterop(t)
	c, env := startMode(t, "facilitator", func(t testing.TB, url string) string {
		return delayProxy(t, url, stallDelay, func(path string, _, _ []byte) bool { return strings.HasSuffix(path, "/settle") })
	})
	testSettlementPending(t, c, "pending-facilitator", env, payledger.StatusFailed)
}

// testSettlementPending pays with the official client's signature for a call whose
// settlement may have been sent but whose outcome the service does not learn in time. The
// answer is 202 settlement_pending with the transaction hash when known, never a 402
// inviting a second payment; the same payment is then answered the same (its retry) or,
// with another request, refused; the payer paid exactly once; after a restart, recovery
// resolves the row: settled from the chain (onchain), or failed for the operator to look
// up (a facilitator cannot be asked).
func testSettlementPending(t *testing.T, c *chain, name string, modeEnv []string, resolved string) {
	ledgerPath := filepath.Join(t.TempDir(), "ledger.db")
	env := append(paymentEnv(modeEnv), "SANDBOX_PAYMENTS_SETTLE_TIMEOUT=3s", "SANDBOX_PAYMENTS_LEDGER="+ledgerPath)
	svc := startService(t, instance(name), true, env...)
	url := svc.URL + "/v1/code"
	before := snapshot(t, c)
	h := signPayments(t, url, "--key-file", writeKey(t, "payer.key", payer.key))[0]
	status, body, header := paidPost(t, url, h, "print(6*7)", 60*time.Second)
	if status != http.StatusAccepted || body.Status != payledger.ReasonSettlementPending || body.Stdout != nil {
		t.Fatalf("a settlement whose outcome is unknown: status %d, body %v (status %q); want 202 settlement_pending", status, body, body.Status)
	}
	sr := settlementOf(t, header)
	if sr.Success || sr.ErrorReason != payledger.ReasonSettlementPending {
		t.Fatalf("PAYMENT-RESPONSE %+v: want success false, errorReason settlement_pending", sr)
	}
	if header.Get("PAYMENT-REQUIRED") != "" {
		t.Errorf("the pending answer carries terms: an invitation to pay again")
	}
	waitFor(stallDelay+5*time.Second, func() bool { return c.balance(t, payee.address) != before.payee })
	hash := expectMoved(t, c, before, payer.address)
	if resolved == payledger.StatusSettled && !strings.EqualFold(sr.Transaction, hash) {
		t.Errorf("PAYMENT-RESPONSE names transaction %q, the transfer is in %s", sr.Transaction, hash)
	}
	// The same payment with the same request is its retry: the stored pending
	// answer again (or, once the resolver settled it, the answer), never a second run.
	if status, body, hdr := paidPost(t, url, h, "print(6*7)", 30*time.Second); hdr.Get("Idempotent-Replayed") != "true" ||
		(status != http.StatusAccepted && status != http.StatusOK) {
		t.Errorf("the same payment sent again: status %d, body %v, replayed %q; want the pending answer again",
			status, body, hdr.Get("Idempotent-Replayed"))
	}
	if status, body, _ := paidPost(t, url, h, "print(6*7+0)", 30*time.Second); status != http.StatusPaymentRequired || body.Stdout != nil {
		t.Errorf("the same payment with another request: status %d, body %v; want 402", status, body)
	}
	svc.stop()
	// The same replica restarts (its instance, so its replica id): it resolves its own rows.
	again := startService(t, instance(name), false, env...)
	again.stop()
	time.Sleep(300 * time.Millisecond)
	expectMoved(t, c, before, payer.address)
	row := ledgerRow(t, ledgerPath, h)
	if row.Status != resolved || (resolved == payledger.StatusSettled && !strings.EqualFold(row.TxHash, hash)) {
		t.Fatalf("ledger row after recovery %+v, want %s (tx %s)", row, resolved, hash)
	}
}
