package channels

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// depositKey is the key of the payment row of the payer's deposit salted
// by salt, as the seller records it.
func (h *harness) depositKey(salt [32]byte) (payer, nonce string) {
	return strings.ToLower(h.config.Payer.Hex()), strings.ToLower(channel.DepositNonce(h.id, salt).Hex())
}

// TestDeposit: a deposit on a new channel is collected before the run and
// charged with its voucher; the report carries the deposit's transaction
// and amount and the voucher's chargedAmount; the payment row is settled
// and the mirror holds the new balance, so the next voucher is taken.
func TestDeposit(t *testing.T) {
	h := newHarness(t, 0)
	salt := newSalt(t)
	st := h.mustPay(t, h.deposit(t, 50000, 5000, h.validBefore(), salt))
	var extra struct {
		ChargedAmount string               `json:"chargedAmount"`
		ChannelState  channel.ChannelState `json:"channelState"`
	}
	if err := json.Unmarshal(st.Extra, &extra); err != nil || !st.Success || st.Transaction != fakeTx || st.Amount != "50000" ||
		extra.ChargedAmount != "5000" || extra.ChannelState.ChargedCumulativeAmount != "5000" || extra.ChannelState.Balance != "50000" {
		t.Fatalf("settlement %+v extra %s (%v), want the deposit's tx and amount 50000, chargedAmount 5000, balance 50000", st, st.Extra, err)
	}
	payer, nonce := h.depositKey(salt)
	if e := h.store.onlyPayment(t); e.Payer != payer || e.Nonce != nonce || e.Status != ledger.StatusSettled || e.TxHash != fakeTx ||
		e.Amount != "50000" || e.ChannelID != h.idHex() {
		t.Fatalf("payment row %+v, want the deposit's (%s, %s) of channel %s settled by %s", e, payer, nonce, h.idHex(), fakeTx)
	}
	row := h.store.get(t, h.idHex())
	if row.Charged.Int64() != 5000 || row.Balance.Int64() != 50000 || row.State != ledger.ChannelOpen || row.Hold != nil {
		t.Fatalf("channel row %+v, want charged 5000, balance 50000, open", row)
	}
	h.mustPay(t, h.voucher(t, 10000))
}

// TestDepositFails: a deposit that cannot be collected runs nothing and
// holds nothing, and is answered by what is known of it: refused → 402
// with the failed settlement, row failed; never sent → 402, row released
// (the same deposit may be sent again); outcome unknown → 202 pending,
// row settling as pending.
func TestDepositFails(t *testing.T) {
	cases := []struct {
		outcome, status, reason string
		code                    sandboxd.Code
	}{
		{depositRefused, ledger.StatusFailed, "invalid_batch_settlement_evm_deposit_transaction_failed", sandboxd.CodePayment},
		{depositNotSent, ledger.StatusReleased, x402.ReasonUnexpectedSettle, sandboxd.CodePayment},
		{depositUnknown, ledger.StatusSettling, ledger.ReasonSettlementPending, sandboxd.CodePending},
	}
	for _, tc := range cases {
		t.Run(tc.outcome, func(t *testing.T) {
			h := newHarness(t, 0)
			h.dep.outcome = tc.outcome
			salt := newSalt(t)
			p := h.deposit(t, 50000, 5000, h.validBefore(), salt)
			_, terms, err := h.pay(p)
			var se *sandboxd.Error
			if sandboxd.ErrorCode(err) != tc.code || !errors.As(err, &se) || se.Payment == nil || se.Payment.Settlement == nil ||
				se.Payment.Settlement.Success || se.Payment.Settlement.ErrorReason != tc.reason {
				t.Fatalf("got %v, want %s with a failed settlement %s", err, tc.code, tc.reason)
			}
			if _, n := terms.asked(); n != 0 {
				t.Fatalf("a failed deposit answered with %d correctives, want none", n)
			}
			if e := h.store.onlyPayment(t); e.Status != tc.status {
				t.Fatalf("payment row %+v, want %s", e, tc.status)
			}
			if e := h.store.onlyPayment(t); tc.outcome == depositUnknown && (e.Reason != ledger.ReasonSettlementPending || e.TxHash != fakeTx) {
				t.Fatalf("payment row %+v, want pending with the transaction", e)
			}
			if row := h.store.get(t, h.idHex()); row.Hold != nil || row.Charged.Sign() != 0 {
				t.Fatalf("channel row %+v, want nothing held or charged", row)
			}
			if tc.outcome == depositNotSent {
				h.dep.outcome = depositOK
				h.mustPay(t, p)
			}
		})
	}
}

// TestDepositAuthorization: a deposit authorization that expired,
// expires before the call could end, is not valid yet or is not the
// payer's is refused before the collector is asked or anything recorded.
func TestDepositAuthorization(t *testing.T) {
	now := time.Now().Unix()
	cases := []struct {
		name                    string
		validAfter, validBefore int64
		other                   bool
		reason                  string
	}{
		{"expired", 0, now - 1, false, channel.ReasonValidBefore},
		{"expires before the call ends", 0, now + 30, false, channel.ReasonValidBefore},
		{"not valid yet", now + 60, now + 120, false, channel.ReasonValidAfter},
		{"signed by another key", 0, now + 120, true, channel.ReasonReceiveSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			key := h.payer
			if tc.other {
				key = x402test.Key(t)
			}
			_, _, err := h.pay(h.depositBy(t, key, &channel.Deposit{Amount: big.NewInt(50000), ValidAfter: big.NewInt(tc.validAfter),
				ValidBefore: big.NewInt(tc.validBefore), Salt: newSalt(t)}, 5000))
			wantRefusal(t, err, tc.reason)
			if h.dep.checks != 0 || len(h.store.payments) != 0 {
				t.Fatalf("%d collector checks, %d payment rows after the refusal, want none", h.dep.checks, len(h.store.payments))
			}
		})
	}
}

// TestDepositRaced: a deposit whose voucher lost the channel to a
// concurrent call is answered the corrective 402, its payment row
// released and nothing sent, so the same authorization pays once the
// client adopted the charged total.
func TestDepositRaced(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	first := mustReserve(t, h, 5000)
	salt := newSalt(t)
	_, _, err := h.pay(h.deposit(t, 50000, 5000, h.validBefore(), salt))
	if c := mustCorrective(t, err); c.state.ChargedCumulativeAmount != "5000" {
		t.Fatalf("corrective %+v, want the projected charged total 5000", c)
	}
	if e := h.store.onlyPayment(t); e.Status != ledger.StatusReleased || h.dep.deposits != 0 {
		t.Fatalf("payment row %+v after %d deposits sent, want released and none sent", e, h.dep.deposits)
	}
	if _, err := first.Settle(t.Context(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}}); err != nil {
		t.Fatal(err)
	}
	h.mustPay(t, h.deposit(t, 50000, 10000, h.validBefore(), salt))
	if got := h.charged(t); got != 10000 || h.dep.deposits != 1 {
		t.Fatalf("charged %d after %d deposits, want 10000 after one", got, h.dep.deposits)
	}
}

// TestDepositAlreadyUsed: a second deposit with the same authorization
// salt (the same ERC-3009 nonce) is refused by the ledger's payment row,
// never sent again, and charges nothing.
func TestDepositAlreadyUsed(t *testing.T) {
	h := newHarness(t, 0)
	salt := newSalt(t)
	h.mustPay(t, h.deposit(t, 50000, 5000, h.validBefore(), salt))
	_, _, err := h.pay(h.deposit(t, 50000, 10000, h.validBefore(), salt))
	wantRefusal(t, err, channel.ReasonDepositSimulationFailed)
	if !strings.Contains(sandboxd.ErrorMessage(err), "already used") {
		t.Fatalf("refusal %q does not say the authorization was already used", sandboxd.ErrorMessage(err))
	}
	if row := h.store.get(t, h.idHex()); h.dep.deposits != 1 || row.Charged.Int64() != 5000 || row.Hold != nil {
		t.Fatalf("%d deposits sent, row %+v; want one, charged 5000, nothing held", h.dep.deposits, row)
	}
}

// TestDepositReopens: a closed (refunded) channel takes no voucher, but a
// deposit reopens it and is charged with its voucher.
func TestDepositReopens(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 10000, 10000)
	row := h.store.get(t, h.idHex())
	row.State = ledger.ChannelClosed
	h.store.put(row)
	h.dep.balance = row.Balance

	_, _, err := h.pay(h.voucher(t, 15000))
	wantRefusal(t, err, channel.ReasonExceedsBalance)

	h.mustPay(t, h.deposit(t, 20000, 15000, h.validBefore(), newSalt(t)))
	row = h.store.get(t, h.idHex())
	if row.State != ledger.ChannelOpen || row.Charged.Int64() != 15000 || row.Balance.Int64() != 30000 {
		t.Fatalf("row %+v after the deposit, want open, charged 15000, balance 30000", row)
	}
}

// TestDepositCheckRefused: a deposit the collector would not take is
// refused at Check, nothing recorded.
func TestDepositCheckRefused(t *testing.T) {
	h := newHarness(t, 0)
	h.dep.checkErr = x402.Reject("invalid_batch_settlement_evm_insufficient_balance", "the payer holds less than the deposit")
	_, _, err := h.pay(h.deposit(t, 50000, 5000, h.validBefore(), newSalt(t)))
	wantRefusal(t, err, "invalid_batch_settlement_evm_insufficient_balance")
	if h.dep.deposits != 0 || len(h.store.payments) != 0 {
		t.Fatalf("%d deposits sent, %d payment rows, want none", h.dep.deposits, len(h.store.payments))
	}
}
