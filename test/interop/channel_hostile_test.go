package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/internal/pgtest"
	payledger "sandboxd/payments/ledger"
	"sandboxd/x402/channel"
)

// anvilChainID is the id anvil runs with (Base Sepolia's).
var anvilChainID = big.NewInt(84532)

// openLedger opens the ledger at location (a PostgreSQL URL can be read while services
// use it; a SQLite file only once its service stopped), closed when the test ends.
func openLedger(t *testing.T, location string) *payledger.SQL {
	t.Helper()
	l, err := payledger.OpenAt(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// channelsOf lists the channel rows of payer in the ledger l.
func channelsOf(t *testing.T, l *payledger.SQL, payer string) []payledger.Channel {
	t.Helper()
	rows, err := l.ListChannels(context.Background(), payledger.ChannelFilter{Payer: payer})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestChannelHostile: payers who bend the channel rules against one sandboxd (settling on
// chain; a deposit is two calls' worth, payments.channels.min_deposit 0.01), each with a
// channel of its own, driving the official client (see each case).
func TestChannelHostile(t *testing.T) {
	mustInterop(t)
	c := startChannelChain(t, payer, other, third)
	db := pgtest.NewDatabase(t)
	svc := startService(t, instance("channel-hostile"), true, append(channelEnv(t, c, "onchain", nil),
		// A PostgreSQL ledger, read while the service runs; one replica, without sessions.
		"SANDBOX_PAYMENTS_LEDGER="+db, "SANDBOX_SESSIONS_ENABLED=false", "SANDBOX_PAYMENTS_CHANNELS_MIN_DEPOSIT=0.01")...)
	l := openLedger(t, db)
	t.Run("replay", func(t *testing.T) { testChannelReplay(t, c, svc) })
	t.Run("over-balance", func(t *testing.T) { testChannelOverBalance(t, c, svc) })
	t.Run("deposit-reused", func(t *testing.T) { testChannelDepositReused(t, c, svc) })
	t.Run("underfunded", func(t *testing.T) { testChannelUnderfunded(t, c, svc, l) })
}

// testChannelReplay: the voucher that bought an answer, sent again byte for byte with the
// same request, gets that answer back: its original PAYMENT-RESPONSE,
// Idempotent-Replayed, nothing run or charged; with another request it gets the corrective
// 402: the bare code in PAYMENT-REQUIRED's error, the charged total that already counts it,
// no PAYMENT-RESPONSE, nothing run. So does the deposit that opened the channel (its
// voucher is as stale), and no second deposit is collected.
func testChannelReplay(t *testing.T, c *chain, svc *service) {
	out := payByChannel(t, c, writeKey(t, "payer.key", payer.key), 1, codeCall(svc.URL, "print(6*7)"), codeCall(svc.URL, "print(6*7)"))
	id, charged := checkCharged(t, out.Results, 0)
	for i, what := range []string{"the deposit", "the voucher"} {
		status, h := resend(t, svc, svc.URL+"/v1/code", out.Results[i].Sent, "print(6*7)")
		var got channelSettlement
		headerJSON(t, h, "PAYMENT-RESPONSE", &got)
		if status != http.StatusOK || h.Get("Idempotent-Replayed") != "true" ||
			got.Extra.ChannelState.ChargedCumulativeAmount != out.Results[i].Settlement.Extra.ChannelState.ChargedCumulativeAmount {
			t.Errorf("%s sent again with its request: %d, replayed %q, report %+v; want its answer and report",
				what, status, h.Get("Idempotent-Replayed"), got)
		}
		status, h = resend(t, svc, svc.URL+"/v1/code", out.Results[i].Sent, "print(42)")
		if status != http.StatusPaymentRequired || h.Get("PAYMENT-RESPONSE") != "" {
			t.Errorf("%s sent again with another request: %d, PAYMENT-RESPONSE %q; want a corrective 402 without one",
				what, status, h.Get("PAYMENT-RESPONSE"))
			continue
		}
		if pr := requiredOf(t, h); pr.Error != codeMismatch || pr.corrective() != strconv.FormatInt(charged, 10) {
			t.Errorf("%s sent again: error %q, charged total %q; want %s at %d", what, pr.Error, pr.corrective(), codeMismatch, charged)
		}
	}
	if st := escrowState(t, c, id); st.Balance.Int64() != 2*price {
		t.Errorf("the channel holds %s after its deposit was sent again, want the one deposit %d", st.Balance, 2*price)
	}
}

// testChannelOverBalance: with the deposit spent, a voucher past the channel's balance (the
// client told not to top up) is refused (cumulative_exceeds_balance), nothing run or
// charged; the client's own top-up deposit then restores service, the running total going
// on from the last answer.
func testChannelOverBalance(t *testing.T, c *chain, svc *service) {
	runs := runsOf(t, svc)
	over := codeCall(svc.URL, "print(6*7)")
	over.VoucherOnly = true
	out := payByChannel(t, c, writeKey(t, "other.key", other.key), 1,
		codeCall(svc.URL, "print(6*7)"), codeCall(svc.URL, "print(6*7)"), over, codeCall(svc.URL, "print(6*7)"))
	id, charged := checkCharged(t, out.Results[:2], 0)
	r := out.Results[2]
	if r.Status != http.StatusPaymentRequired || r.Settlement != nil || r.Required == nil ||
		!strings.Contains(r.Required.Error, codeExceedsBalance) || strings.Contains(string(r.Body), "stdout") {
		t.Errorf("a voucher past the balance: %+v body %s; want a 402 %s", r, r.Body, codeExceedsBalance)
	}
	topUp := out.Results[3]
	if topUp.Status != 200 || topUp.Settlement == nil || !txHash.MatchString(topUp.Settlement.Transaction) ||
		topUp.Settlement.Amount != strconv.Itoa(2*price) || topUp.Settlement.Extra.ChannelState.ChargedCumulativeAmount != strconv.FormatInt(charged+price, 10) {
		t.Fatalf("the top-up deposit: %+v body %s", topUp, topUp.Body)
	}
	if got := runsOf(t, svc) - runs; got != 3 {
		t.Errorf("%d runs for three paid calls and one refused", got)
	}
	if st := escrowState(t, c, id); st.Balance.Int64() != 4*price {
		t.Errorf("the channel holds %s after the top-up, want %d", st.Balance, 4*price)
	}
}

// testChannelDepositReused: the authorization of a deposit that was collected, sent again
// with a fresh voucher at the right running total (so that only the authorization is
// stale), is refused as already used, and nothing runs, moves or is charged.
func testChannelDepositReused(t *testing.T, c *chain, svc *service) {
	out := payByChannel(t, c, writeKey(t, "third.key", third.key), 1, codeCall(svc.URL, "print(6*7)"))
	id, charged := checkCharged(t, out.Results, 0)
	held := c.balance(t, third.address)
	reused := revouch(t, out.Results[0].Sent, third, charged+price)
	status, h := resend(t, svc, svc.URL+"/v1/code", reused, "print(6*7)")
	pr := requiredOf(t, h)
	if status != http.StatusPaymentRequired || !strings.Contains(pr.Error, "already used") || !strings.Contains(pr.Error, codeSimulationFailed) {
		t.Errorf("a used deposit authorization: %d %q; want a 402 that says it was already used (%s)", status, pr.Error, codeSimulationFailed)
	}
	if st := escrowState(t, c, id); st.Balance.Int64() != 2*price || c.balance(t, third.address) != held {
		t.Errorf("the channel holds %s and the payer %d after the reuse; want %d and %d", st.Balance, c.balance(t, third.address), 2*price, held)
	}
	// Another request: a new client knowing only the chain signs the first voucher again,
	// which with the first's request would be its retry, answered from the store.
	next := payByChannel(t, c, writeKey(t, "third.key", third.key), 1, codeCall(svc.URL, "print(42)"))
	if _, more := checkCharged(t, next.Results, charged); more != price {
		t.Errorf("the next call was charged %d", more)
	}
}

// revouch is the payment header sent with its voucher replaced by one of max, signed by
// the payer a (the payload's deposit authorization kept as it was).
func revouch(t *testing.T, header string, a account, max int64) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	voucher := p["payload"].(map[string]any)["voucher"].(map[string]any)
	key, err := crypto.HexToECDSA(strings.TrimPrefix(a.key, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := channel.SignVoucher(key, common.HexToHash(voucher["channelId"].(string)), big.NewInt(max), anvilChainID)
	if err != nil {
		t.Fatal(err)
	}
	voucher["maxClaimableAmount"], voucher["signature"] = strconv.FormatInt(max, 10), hexutil.Encode(sig)
	raw, _ = json.Marshal(p)
	return base64.StdEncoding.EncodeToString(raw)
}

// testChannelUnderfunded: a payer without the tokens it deposits is refused
// (insufficient_balance) before anything is reserved: nothing runs or moves, and (when the
// ledger l can be read: nil skips it) nothing is charged to its channel.
func testChannelUnderfunded(t *testing.T, c *chain, svc *service, l *payledger.SQL) {
	runs := runsOf(t, svc)
	out := payByChannel(t, c, writeKey(t, "unfunded.key", unfunded.key), 1, codeCall(svc.URL, "print(6*7)"))
	r := out.Results[0]
	if r.Status != http.StatusPaymentRequired || r.Settlement != nil || r.Required == nil || !strings.Contains(r.Required.Error, codeInsufficientFunds) {
		t.Errorf("an underfunded deposit: %+v body %s; want a 402 %s", r, r.Body, codeInsufficientFunds)
	}
	if st := escrowState(t, c, channelIDOf(t, r.Sent)); runsOf(t, svc) != runs || st.Balance.Sign() != 0 {
		t.Errorf("an underfunded deposit ran (%d runs) or funded its channel (%s)", runsOf(t, svc)-runs, st.Balance)
	}
	if l == nil {
		return
	}
	for _, row := range channelsOf(t, l, unfunded.address) {
		if row.Charged.Sign() != 0 || row.Calls != 0 {
			t.Errorf("the underfunded payer's channel was charged: %+v", row)
		}
	}
}
