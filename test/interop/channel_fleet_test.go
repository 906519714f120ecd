package interop

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"testing"
	"time"

	payledger "sandboxd/payments/ledger"
)

// TestChannelFleet: two replicas on one PostgreSQL ledger, both settling on chain with the
// same relayer (so both quote the same receiver authorizer and a payer's channel is one), and
// one payer's channel used on both at once: the official client sends calls eight at a time
// over the two, its vouchers racing for the channel's running total. Each answer is charged
// once and what is refused runs nothing; a last call from a fresh client goes through
// replica 1. After the claims, the escrow shows claimed exactly
// the price of each answer delivered (never more), as the ledger does, one charge row per
// answer from both replicas; and one claimer claimed it all.
func TestChannelFleet(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer)
	// One relayer for both: the receiver authorizer of one channel. Only the claimer sends
	// transactions once the deposit is in, so their nonces do not race.
	settle := settlementEnv(t, c, "onchain", nil)
	f := startFleetOf(t, 2, "channels", func(int) []string {
		return append(settle, "SANDBOX_PAYMENTS_CHANNELS_MIN_DEPOSIT=1", "SANDBOX_PAYMENTS_CHANNELS_CLAIM_THRESHOLD=0.005",
			"SANDBOX_PAYMENTS_CHANNELS_MIRROR_EVERY=2s")
	})
	key := writeKey(t, "payer.key", payer.key)
	id, charged := checkCharged(t, payByChannel(t, c, key, 1, codeCall(f.nodes[0].URL, "print(6*7)")).Results, 0)
	// Each call is its own request: calls racing on one channel sign the
	// same voucher, and the same voucher for the same request is one call
	// answered again (a retry), not another run to charge.
	var steps []batchCall
	for i := range 16 {
		steps = append(steps, codeCall(f.nodes[i%2].URL, fmt.Sprintf("print(6*7)  # call %d", i)))
	}
	delivered, statuses := 0, map[int]int{}
	for i, r := range payByChannel(t, c, key, 8, steps...).Results {
		statuses[r.Status]++
		switch r.Status {
		case http.StatusOK:
			if r.Settlement == nil || !r.Settlement.Success || stdoutOf(r.Body) != "42\n" || r.Settlement.Extra.ChargedAmount != "5000" {
				t.Errorf("call %d: a 200 that is not a charged print(6*7): %+v body %s", i, r, r.Body)
			}
			delivered++
		case http.StatusPaymentRequired:
			if r.Settlement != nil || stdoutOf(r.Body) != "" {
				t.Errorf("call %d: a refusal that ran or settled: %+v body %s", i, r, r.Body)
			}
		default:
			t.Errorf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("sixteen calls eight at a time over two replicas: %v", statuses)
	// A fresh client (its state from the chain and the corrective 402) through replica 1,
	// with a request of its own: before the claim is mined it signs the first voucher
	// again, which for the first call's request would be that call answered again.
	if r := payByChannel(t, c, key, 1, codeCall(f.nodes[1].URL, "print(6*7)  # a fresh client")).Results[0]; r.Status != http.StatusOK || stdoutOf(r.Body) != "42\n" {
		t.Fatalf("a call after the race: %+v body %s", r, r.Body)
	}
	delivered++
	want := charged + int64(delivered)*price
	waitClaimed(t, c, id, want)

	l := openLedger(t, f.db)
	var row payledger.Channel
	waitFor(10*time.Second, func() bool { // the claimer records the claim once it is mined
		var err error
		row, err = l.Channel(context.Background(), id)
		return err == nil && row.Claimed.Int64() == want
	})
	charges, err := l.ChannelCharges(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	replicas := map[string]int{}
	for _, ch := range charges {
		replicas[ch.Replica]++
	}
	if row.Charged.Int64() != want || row.Claimed.Int64() != want || len(charges) != 1+delivered || len(replicas) != 2 {
		t.Errorf("ledger: charged %s, claimed %s, %d charges by %v; want %d, %d, %d by both replicas",
			row.Charged, row.Claimed, len(charges), replicas, want, want, 1+delivered)
	}
	db, err := sql.Open("pgx", f.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var claimers int
	if err := db.QueryRow(`SELECT COUNT(DISTINCT replica) FROM channel_ops WHERE kind = 'claim'`).Scan(&claimers); err != nil || claimers != 1 {
		t.Errorf("claims sent by %d replicas (%v), want one claimer", claimers, err)
	}
	waitFor(30*time.Second, func() bool { return c.balance(t, payee.address) == want })
	if got := c.balance(t, payee.address); got != want {
		t.Errorf("payTo holds %d, want %d", got, want)
	}
}
