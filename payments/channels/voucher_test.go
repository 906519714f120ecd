package channels

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// TestVoucherReplay: the same voucher, after it bought an answer, is
// answered the corrective 402 with the channel's state and the voucher the
// charge rests on (the official client adopts it), and charges nothing.
func TestVoucherReplay(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	v := h.voucher(t, 5000)
	st := h.mustPay(t, v)
	var extra struct {
		ChargedAmount string               `json:"chargedAmount"`
		ChannelState  channel.ChannelState `json:"channelState"`
	}
	if err := json.Unmarshal(st.Extra, &extra); err != nil || extra.ChargedAmount != "5000" ||
		extra.ChannelState.ChargedCumulativeAmount != "5000" || extra.ChannelState.ChannelID != h.idHex() {
		t.Fatalf("settlement extra %s (%v), want chargedAmount 5000 and the channel's state charged 5000", st.Extra, err)
	}

	reserves := h.store.reserveCalls()
	_, terms, err := h.pay(v)
	c := mustCorrective(t, err)
	if c.code != channel.ReasonCumulativeMismatch || c.state.ChargedCumulativeAmount != "5000" || c.state.Balance != "50000" ||
		c.voucher == nil || c.voucher.SignedMaxClaimable != "5000" {
		t.Fatalf("replay answered %+v, want %s with charged 5000 and the voucher of 5000", c, channel.ReasonCumulativeMismatch)
	}
	if got := signer(t, h.id, c.voucher, h.chainID); got != h.config.PayerAuthorizer {
		t.Fatalf("voucherState is signed by %s, want the payer's authorizer %s", got.Hex(), h.config.PayerAuthorizer.Hex())
	}
	if _, n := terms.asked(); n != 1 || h.store.reserveCalls() != reserves {
		t.Fatalf("%d correctives asked for, %d reservations tried; want 1 and none (refused at Check)", n, h.store.reserveCalls()-reserves)
	}
	if got := h.charged(t); got != 5000 || len(h.store.chargeRows(h.idHex())) != 1 {
		t.Fatalf("after the replay charged %d with %d charge rows, want 5000 and 1", got, len(h.store.chargeRows(h.idHex())))
	}
}

// TestRunningTotal: a voucher's running total must be the charged total
// plus the price. Equal to, below or above it is the corrective 402 (never
// taken as prepayment), not above what was claimed on chain is the
// corrective below_claimed, both carrying the row's voucher; above the
// balance less a pending withdrawal is a plain refusal.
func TestRunningTotal(t *testing.T) {
	cases := []struct {
		name                                string
		balance, charged, claimed, withdraw int64
		max                                 int64
		code                                string
		corrective                          bool
	}{
		{"the next total", 50000, 10000, 0, 0, 15000, "", false},
		{"equal to charged", 50000, 10000, 0, 0, 10000, channel.ReasonCumulativeMismatch, true},
		{"below the next total", 50000, 10000, 0, 0, 12000, channel.ReasonCumulativeMismatch, true},
		{"far above", 50000, 10000, 0, 0, 45000, channel.ReasonCumulativeMismatch, true},
		{"far above the balance too", 50000, 10000, 0, 0, 1_000_000_000, channel.ReasonCumulativeMismatch, true},
		{"not above claimed", 50000, 10000, 8000, 0, 8000, channel.ReasonBelowClaimed, true},
		{"exceeds the balance", 12000, 10000, 0, 0, 15000, channel.ReasonExceedsBalance, false},
		{"a withdrawal bounds it", 50000, 10000, 0, 38000, 15000, channel.ReasonExceedsBalance, false},
		{"within balance less the withdrawal", 50000, 10000, 0, 35000, 15000, "", false},
		{"claims do not lower the balance", 15000, 10000, 10000, 0, 15000, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			h.open(t, tc.balance, tc.charged)
			row := h.store.get(t, h.idHex())
			row.Claimed, row.WithdrawAmount = big.NewInt(tc.claimed), big.NewInt(tc.withdraw)
			if tc.withdraw > 0 {
				row.WithdrawAt = time.Now().Unix()
			}
			h.store.put(row)

			_, terms, err := h.pay(h.voucher(t, tc.max))
			switch {
			case tc.code == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := h.charged(t); got != tc.charged+price.Int64() {
					t.Fatalf("charged %d, want %d", got, tc.charged+price.Int64())
				}
				return
			case tc.corrective:
				c := mustCorrective(t, err)
				want := big.NewInt(tc.charged).String()
				if c.code != tc.code || c.state.ChargedCumulativeAmount != want || c.state.TotalClaimed != big.NewInt(tc.claimed).String() ||
					c.voucher == nil || c.voucher.SignedMaxClaimable != want {
					t.Fatalf("answered %+v, want %s with charged %s and the row's voucher", c, tc.code, want)
				}
				if got := signer(t, h.id, c.voucher, h.chainID); got != h.config.PayerAuthorizer {
					t.Fatalf("voucherState signed by %s, want the payer's authorizer", got.Hex())
				}
			default:
				wantRefusal(t, err, tc.code)
				if _, n := terms.asked(); n != 0 {
					t.Fatalf("%d correctives asked for, want none", n)
				}
			}
			if row := h.store.get(t, h.idHex()); row.Charged.Int64() != tc.charged || row.Hold != nil || h.store.reserveCalls() != 0 {
				t.Fatalf("after the refusal charged %s, hold %+v, %d reservations tried; want %d, none, none (refused at Check)",
					row.Charged, row.Hold, h.store.reserveCalls(), tc.charged)
			}
		})
	}
}

// TestForgedVoucher: a voucher signed by another key is refused with
// voucher_signature before the running total is looked at, so nothing of
// the channel (no corrective state) is disclosed to its sender.
func TestForgedVoucher(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 10000)
	// A replayed total: signed by the payer it would earn the corrective.
	forged := h.payment(t, h.voucherPayload(t, channel.KindVoucher, h.config, x402test.Key(t), 10000), h.entry)
	_, terms, err := h.pay(forged)
	wantRefusal(t, err, channel.ReasonVoucherSignature)
	if _, n := terms.asked(); n != 0 || h.store.reserveCalls() != 0 {
		t.Fatalf("Terms.Corrective asked %d times, %d reservations tried for a forged voucher; want none", n, h.store.reserveCalls())
	}
	if strings.Contains(sandboxd.ErrorMessage(err), "10000") {
		t.Fatalf("the refusal %q discloses the charged total", sandboxd.ErrorMessage(err))
	}
	if got := h.charged(t); got != 10000 {
		t.Fatalf("charged %d, want 10000", got)
	}
}

// TestVoucherConfig: a channel config that is not one the terms allow is
// refused with the code naming what differs, and so is a channel id that
// is not the config's or a zero payer authorizer.
func TestVoucherConfig(t *testing.T) {
	other := common.HexToAddress("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC")
	cases := []struct {
		name   string
		mutate func(c *channel.Config)
		reason string
	}{
		{"another receiver", func(c *channel.Config) { c.Receiver = other }, channel.ReasonReceiverMismatch},
		{"another token", func(c *channel.Config) { c.Token = other }, channel.ReasonTokenMismatch},
		{"another receiver authorizer", func(c *channel.Config) { c.ReceiverAuthorizer = other }, channel.ReasonReceiverAuthorizerMismatch},
		{"another withdraw delay", func(c *channel.Config) { c.WithdrawDelay = 900 }, channel.ReasonWithdrawDelayMismatch},
		{"zero payer authorizer", func(c *channel.Config) { c.PayerAuthorizer = common.Address{} }, channel.ReasonVoucherSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			c := h.config
			tc.mutate(&c)
			_, terms, err := h.check(h.payment(t, h.voucherPayload(t, channel.KindVoucher, c, h.payer, 5000), h.entry))
			wantRefusal(t, err, tc.reason)
			if _, n := terms.asked(); n != 0 {
				t.Fatalf("%d correctives asked for, want none", n)
			}
		})
	}
	t.Run("channel id of another config", func(t *testing.T) {
		h := newHarness(t, 0)
		pl := h.voucherPayload(t, channel.KindVoucher, h.config, h.payer, 5000)
		pl.Config.Salt[31] = 1
		_, _, err := h.check(h.payment(t, pl, h.entry))
		wantRefusal(t, err, channel.ReasonChannelIDMismatch)
	})
}

// TestAcceptedEntry: the entry the payer accepted must be this call's
// batch entry (another price, payee or channel terms is
// invalid_payment_requirements), but for the state a corrective 402 added
// to its extra, which the official client echoes.
func TestAcceptedEntry(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	exact := x402test.Requirements(t)
	otherPrice := exact
	otherPrice.Amount = "10000"
	otherPayee := exact
	otherPayee.PayTo = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
	slow := h.seller.cfg
	slow.WithdrawDelay = 2 * time.Hour
	otherDelay, err := New(Options{Store: h.store, Config: slow, Authorizer: testAuthorizer, Network: "eip155:84532"})
	if err != nil {
		t.Fatal(err)
	}
	for name, accepted := range map[string]x402.Requirements{
		"another price":          h.seller.Entry(otherPrice),
		"another payee":          h.seller.Entry(otherPayee),
		"another withdraw delay": otherDelay.Entry(exact),
	} {
		t.Run(name, func(t *testing.T) {
			p := h.payment(t, h.voucherPayload(t, channel.KindVoucher, h.config, h.payer, 5000), accepted)
			_, _, err := h.check(p)
			wantRefusal(t, err, x402.ReasonRequirementsMismatch)
		})
	}

	t.Run("a corrective's state in extra", func(t *testing.T) {
		cs := channel.ChannelState{ChannelID: h.idHex(), Balance: "50000", TotalClaimed: "0", RefundNonce: "0",
			ChargedCumulativeAmount: "0"}
		accepted, err := channel.Corrective(h.entry, cs, &channel.VoucherState{SignedMaxClaimable: "0", Signature: "0x"})
		if err != nil {
			t.Fatal(err)
		}
		h.mustPay(t, h.payment(t, h.voucherPayload(t, channel.KindVoucher, h.config, h.payer, 5000), accepted))
		if got := h.charged(t); got != 5000 {
			t.Fatalf("charged %d, want 5000", got)
		}
	})
}

// TestMirrorTooOld: a voucher on a channel whose escrow state was read
// longer ago than the mirror's max age (a withdrawal could go unseen) is
// answered 503, nothing held.
func TestMirrorTooOld(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	row := h.store.get(t, h.idHex())
	row.SyncedAt = time.Now().Add(-h.seller.cfg.MirrorMaxAge() - time.Second)
	h.store.put(row)
	_, _, err := h.pay(h.voucher(t, 5000))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
		t.Fatalf("got %v, want CodeUnavailable", err)
	}
	if row := h.store.get(t, h.idHex()); row.Hold != nil || row.Charged.Sign() != 0 {
		t.Fatalf("row %+v after the refusal, want nothing held or charged", row)
	}
}

// TestLedgerDown: a ledger that cannot be read is 503 before anything is
// held or run.
func TestLedgerDown(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	h.store.down = sandboxd.Errorf(sandboxd.CodeUnavailable, "fake.channel", "the ledger cannot be reached")
	_, _, err := h.pay(h.voucher(t, 5000))
	if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable || h.store.reserveCalls() != 0 {
		t.Fatalf("got %v after %d reservations, want CodeUnavailable, none", err, h.store.reserveCalls())
	}
}

// TestAdoptFromChain: a voucher on a channel the ledger does not know is
// checked against one read of the escrow, and the channel adopted with
// charged = totalClaimed; a channel the escrow holds nothing for is
// refused and not adopted.
func TestAdoptFromChain(t *testing.T) {
	h := newHarness(t, 0)
	h.reader.states = map[common.Hash]chain.ChannelState{h.id: {ID: h.id, Balance: big.NewInt(50000),
		TotalClaimed: big.NewInt(20000), WithdrawAmount: new(big.Int), RefundNonce: big.NewInt(1)}}
	h.mustPay(t, h.voucher(t, 25000))
	row := h.store.get(t, h.idHex())
	if row.Charged.Int64() != 25000 || row.Claimed.Int64() != 20000 || row.Balance.Int64() != 50000 || row.State != ledger.ChannelOpen ||
		h.reader.reads != 1 {
		t.Fatalf("adopted row %+v after %d reads, want charged 25000, claimed 20000, balance 50000 after one read", row, h.reader.reads)
	}

	empty := newHarness(t, 0)
	_, terms, err := empty.pay(empty.voucher(t, 5000))
	wantRefusal(t, err, channel.ReasonExceedsBalance)
	if _, n := terms.asked(); n != 0 {
		t.Fatalf("%d correctives for an empty channel, want none", n)
	}
	if _, err := empty.store.Channel(t.Context(), empty.idHex()); err != ledger.ErrNoChannel {
		t.Fatalf("an empty channel was adopted (%v)", err)
	}
}

// TestAdoptUnderCheckSlots: the escrow read of an unknown channel takes
// one of the gate's check slots; none free, the voucher is answered the
// gate's busy error and the chain is not read.
func TestAdoptUnderCheckSlots(t *testing.T) {
	h := newHarness(t, 0)
	busy := &sandboxd.Error{Code: sandboxd.CodeBusy, Op: "payments.checks", Message: "too many payment checks", RetryAfter: time.Second}
	h.seller.admit = func(context.Context) (func(), error) { return nil, busy }
	_, _, err := h.pay(h.voucher(t, 5000))
	if err != busy || h.reader.reads != 0 {
		t.Fatalf("got %v after %d chain reads, want the check slots' busy error and none", err, h.reader.reads)
	}
}

// TestRefundPayload: a refund buys no run; sent to a paid route it is
// refused with payload_type.
func TestRefundPayload(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 10000)
	_, _, err := h.check(h.payment(t, h.voucherPayload(t, channel.KindRefund, h.config, h.payer, 10000), h.entry))
	wantRefusal(t, err, channel.ReasonPayloadType)
	if row := h.store.get(t, h.idHex()); row.Hold != nil || row.State != ledger.ChannelOpen {
		t.Fatalf("row %+v after a refund payload, want it untouched", row)
	}
}

// TestPayer: a channel payment's payer is its config's payer in lower
// case, so a session it opens belongs to that wallet.
func TestPayer(t *testing.T) {
	h := newHarness(t, 0)
	h.open(t, 50000, 0)
	a, _, err := h.check(h.voucher(t, 5000))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ToLower(h.config.Payer.Hex()); a.Payer() != want {
		t.Fatalf("Payer() = %q, want %q", a.Payer(), want)
	}
}
