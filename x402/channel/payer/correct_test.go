package payer_test

import (
	"os"
	"strings"
	"testing"

	"sandboxd/x402/channel/channeltest"
	"sandboxd/x402/x402test"
)

// mustLoseState pays twice but keeps the state file as it was after the
// first call: the payer's running total is behind the seller's by one
// price, as after a crash between a payment and its answer.
func (f *payerFixture) mustLoseState() {
	f.tb.Helper()
	f.mustPay()
	old, err := os.ReadFile(f.state)
	if err != nil {
		f.tb.Fatal(err)
	}
	f.mustPay()
	if err := os.WriteFile(f.state, old, 0o600); err != nil {
		f.tb.Fatal(err)
	}
}

// TestPayChannelAdoptsOwnCorrection: a seller ahead of the payer answers
// the corrective 402 with the payer's own last voucher; the payer checks
// it is its key's, for its channel and total, adopts the total and pays
// again once, successfully.
func TestPayChannelAdoptsOwnCorrection(t *testing.T) {
	f := newPayer(t)
	f.mustLoseState()
	rec := f.mustPay()
	if rec.Total.String() != "15000" || f.seller.Correctives() != 1 || f.seller.Paid() != 4 {
		t.Fatalf("receipt %+v, %d correctives, %d payments: want a total of 15000 after one correction",
			rec, f.seller.Correctives(), f.seller.Paid())
	}
	if ch := f.mustOne(); ch.Charged.String() != "15000" {
		t.Fatalf("state %+v", ch)
	}
}

// TestPayChannelRefusesForgedCorrection: a corrective 402 whose
// voucherState is signed by another key is not adopted: no retry, the
// state unchanged, and the error says why.
func TestPayChannelRefusesForgedCorrection(t *testing.T) {
	f := newPayer(t)
	f.mustLoseState()
	f.seller.Set(func(k *channeltest.Knobs) { k.Forger = x402test.Key(t) })
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "not proved by a voucher this key signed") ||
		!strings.Contains(err.Error(), "nothing was adopted") {
		t.Fatalf("err %v, want the forged correction refused", err)
	}
	if n := f.seller.Paid(); n != 3 {
		t.Fatalf("%d payments, want no retry after the forged correction", n)
	}
	if ch := f.mustOne(); ch.Charged.String() != "5000" {
		t.Fatalf("state %+v: the forged total was adopted", ch)
	}
}

// TestPayChannelAdoptsOwnCorrectionAfterLosingTheFile: with its state
// file lost, the payer deposits and pays the price as on a new channel;
// the seller corrects with the payer's voucher and balance, and the retry
// is a voucher on the old channel.
func TestPayChannelAdoptsOwnCorrectionAfterLosingTheFile(t *testing.T) {
	f := newPayer(t)
	f.mustPay()
	if err := os.Remove(f.state); err != nil {
		t.Fatal(err)
	}
	rec := f.mustPay()
	if rec.Kind != "voucher" || rec.Total.String() != "10000" || rec.Balance.String() != "50000" || f.seller.Correctives() != 1 {
		t.Fatalf("receipt %+v after %d correctives", rec, f.seller.Correctives())
	}
}

// TestPayChannelRefusesUnprovedCorrection: a correction to a total below
// what the payer knows was charged, or with no voucher to show (the seller
// never took one), is not adopted and not retried: this payer reads no
// chain.
func TestPayChannelRefusesUnprovedCorrection(t *testing.T) {
	f := newPayer(t)
	f.mustPay()
	chs := f.mustChannels()
	chs[0].Charged.SetInt64(20000)
	f.mustWrite(chs)
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "below") || f.seller.Paid() != 2 {
		t.Fatalf("err %v after %d payments, want the lower total refused without a retry", err, f.seller.Paid())
	}

	// Another seller with the same terms never took a voucher of the
	// channel: it has none to show.
	g := channeltest.NewSeller(t)
	g.Set(func(k *channeltest.Knobs) { k.Extra = f.seller.Knobs().Extra })
	f.seller = g
	_, err = f.pay()
	if err == nil || !strings.Contains(err.Error(), "no voucherState") || g.Paid() != 1 {
		t.Fatalf("err %v after %d payments, want the unproved correction refused without a retry", err, g.Paid())
	}
}
