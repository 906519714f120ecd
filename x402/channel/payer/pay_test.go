package payer_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/channel/channeltest"
	"sandboxd/x402/channel/payer"
	"sandboxd/x402/x402test"
)

// payerFixture is a payer's key, its state file and policy, paying one
// seller.
type payerFixture struct {
	tb     testing.TB
	key    *ecdsa.PrivateKey
	state  string
	policy payer.Policy
	seller *channeltest.Seller
}

// newPayer is a fresh payer with the default policy (auto, 10 prices of
// deposit at most) and a seller.
func newPayer(tb testing.TB) *payerFixture {
	tb.Helper()
	p := x402.DefaultPayPolicy()
	return &payerFixture{tb: tb, key: x402test.Key(tb), state: filepath.Join(tb.TempDir(), "payer.key.channels"),
		policy: payer.Policy{PayPolicy: p, Scheme: payer.SchemeAuto, MaxDeposit: payer.DefaultMaxDeposit(p.MaxAmount)},
		seller: channeltest.NewSeller(tb)}
}

// pay makes one call.
func (f *payerFixture) pay() (*payer.Paid, error) {
	return payer.Pay(context.Background(), f.seller.Client(), f.key, f.state, f.seller.URL+"/v1/code", []byte(`{"code":"print(1)"}`), f.policy)
}

// mustPay makes one call that must be paid through a channel.
func (f *payerFixture) mustPay() *payer.Receipt {
	f.tb.Helper()
	paid, err := f.pay()
	if err != nil {
		f.tb.Fatal(err)
	}
	if paid.StatusCode != 200 || paid.Channel == nil {
		f.tb.Fatalf("HTTP %d, channel receipt %+v", paid.StatusCode, paid.Channel)
	}
	return paid.Channel
}

// mustChannels reads the state file.
func (f *payerFixture) mustChannels() []*payer.Channel {
	f.tb.Helper()
	chs, err := payer.ReadState(f.state)
	if err != nil {
		f.tb.Fatal(err)
	}
	return chs
}

// mustOne is the state file's one channel.
func (f *payerFixture) mustOne() *payer.Channel {
	f.tb.Helper()
	chs := f.mustChannels()
	if len(chs) != 1 {
		f.tb.Fatalf("%d channels in the state file, want 1", len(chs))
	}
	return chs[0]
}

// wantAmounts fails unless got are the decimals want.
func wantAmounts(tb testing.TB, what string, got []*big.Int, want ...string) {
	tb.Helper()
	var g []string
	for _, n := range got {
		g = append(g, n.String())
	}
	if strings.Join(g, " ") != strings.Join(want, " ") {
		tb.Errorf("%s: %v, want %v", what, g, want)
	}
}

// TestPayChannelDepositThenVouchers: the first call deposits the seller's
// hint (10 prices, within --max-deposit) with a voucher of the price, the
// next ones send vouchers of the running total plus the price; the seller
// decodes and verifies each (channel.Decode, VerifyDeposit,
// VerifyVoucher against its terms), and the state file follows.
func TestPayChannelDepositThenVouchers(t *testing.T) {
	f := newPayer(t)
	first := f.mustPay()
	if first.Kind != channel.KindDeposit || first.Deposit.String() != "50000" || first.Total.String() != "5000" {
		t.Fatalf("first call: %+v, want a deposit of 50000 and a total of 5000", first)
	}
	f.mustPay()
	last := f.mustPay()
	if last.Kind != channel.KindVoucher || last.Total.String() != "15000" || last.Balance.String() != "50000" {
		t.Fatalf("third call: %+v", last)
	}
	var maxes []*big.Int
	for _, p := range f.seller.Payments() {
		maxes = append(maxes, p.Voucher.MaxClaimableAmount)
		if p.Config.Payer != crypto.PubkeyToAddress(f.key.PublicKey) || p.Config.PayerAuthorizer != p.Config.Payer {
			t.Errorf("config %+v is not the payer's own", p.Config)
		}
	}
	wantAmounts(t, "vouchers", maxes, "5000", "10000", "15000")
	ch := f.mustOne()
	if ch.Charged.String() != "15000" || ch.Balance.String() != "50000" || ch.VoucherMax.String() != "15000" ||
		ch.Server != f.seller.URL || ch.State != payer.StateOpen || ch.Unspent().String() != "35000" {
		t.Fatalf("state %+v", ch)
	}
	if fi, err := os.Stat(f.state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file %v, %v: want mode 600", fi.Mode(), err)
	}
}

// TestPayChannelTopUp: a deposit capped by --max-deposit below the
// seller's hint covers two calls; the third tops the channel up.
func TestPayChannelTopUp(t *testing.T) {
	f := newPayer(t)
	f.policy.MaxDeposit = big.NewInt(10000)
	var kinds []string
	for range 4 {
		kinds = append(kinds, string(f.mustPay().Kind))
	}
	if strings.Join(kinds, " ") != "deposit voucher deposit voucher" {
		t.Fatalf("kinds %v", kinds)
	}
	if ch := f.mustOne(); ch.Balance.String() != "20000" || ch.Charged.String() != "20000" {
		t.Fatalf("state %+v", ch)
	}
}

// TestPayChannelDepositCap: a price over --max-deposit is refused before
// anything is signed.
func TestPayChannelDepositCap(t *testing.T) {
	f := newPayer(t)
	f.policy.MaxDeposit = big.NewInt(4999)
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "nothing was signed") || !strings.Contains(err.Error(), "--max-deposit") {
		t.Fatalf("err %v, want the deposit cap's refusal", err)
	}
	if n := f.seller.Paid(); n != 0 {
		t.Fatalf("%d payments sent", n)
	}
	if chs := f.mustChannels(); len(chs) != 0 {
		t.Fatalf("state %+v after a refusal", chs)
	}
}

// TestPayChannelRefusesChangedTerms: a seller paid once that then names
// another payee (without --pay-to naming it), another asset or network
// than allowed, or a price over --max-amount, is refused before anything
// is signed; --pay-to naming the new payee accepts it.
func TestPayChannelRefusesChangedTerms(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*channeltest.Knobs)
		want   string
	}{
		"payee":   {func(k *channeltest.Knobs) { k.Exact.PayTo = "0x000000000000000000000000000000000000dEaD" }, "--pay-to"},
		"asset":   {func(k *channeltest.Knobs) { k.Exact.Asset = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" }, "--asset"},
		"network": {func(k *channeltest.Knobs) { k.Exact.Network = "eip155:8453" }, "--network"},
		"amount":  {func(k *channeltest.Knobs) { k.Exact.Amount = "5001" }, "--max-amount"},
		"authorizer": {func(k *channeltest.Knobs) {
			k.Extra.ReceiverAuthorizer = common.HexToAddress("0x000000000000000000000000000000000000bEEF")
		}, "--pay-to"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newPayer(t)
			f.mustPay()
			f.seller.Set(c.change)
			_, err := f.pay()
			if err == nil || !strings.Contains(err.Error(), "nothing was signed") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a refusal naming %s", err, c.want)
			}
			if n := f.seller.Paid(); n != 1 {
				t.Fatalf("%d payments sent, want the first only", n)
			}
		})
	}
	f := newPayer(t)
	f.mustPay()
	f.seller.Set(func(k *channeltest.Knobs) { k.Exact.PayTo = "0x000000000000000000000000000000000000dEaD" })
	f.policy.PayTo = "0x000000000000000000000000000000000000dEaD"
	if r := f.mustPay(); r.Kind != channel.KindDeposit {
		t.Fatalf("the named payee's new channel: %+v", r)
	}
	if n := len(f.mustChannels()); n != 2 {
		t.Fatalf("%d channels, want 2", n)
	}
}

// TestPayChannelOverchargeRefused: a report of more charged than the price
// is refused and the state file is not advanced.
func TestPayChannelOverchargeRefused(t *testing.T) {
	f := newPayer(t)
	f.mustPay()
	f.seller.Set(func(k *channeltest.Knobs) { k.Report = big.NewInt(10000) })
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "over the price") || !strings.Contains(err.Error(), "not advanced") {
		t.Fatalf("err %v, want the report refused", err)
	}
	if ch := f.mustOne(); ch.Charged.String() != "5000" || ch.VoucherMax.String() != "5000" {
		t.Fatalf("state advanced: %+v", ch)
	}
}

// TestPayChannelStateFileMode: a state file group or others may read is
// refused, as a key file is, before anything is signed.
func TestPayChannelStateFileMode(t *testing.T) {
	f := newPayer(t)
	if err := os.WriteFile(f.state, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.state, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("err %v, want the mode refused", err)
	}
	if n := f.seller.Paid(); n != 0 {
		t.Fatalf("%d payments sent", n)
	}
}

// TestPayChannelSchemes: --scheme exact pays exact though a channel is
// offered; auto pays exact when none is; batch-settlement refuses a seller
// offering none, saying so, and signs nothing.
func TestPayChannelSchemes(t *testing.T) {
	f := newPayer(t)
	f.policy.Scheme = payer.SchemeExact
	if paid, err := f.pay(); err != nil || paid.Channel != nil || paid.Requirements.Scheme != x402.SchemeExact {
		t.Fatalf("exact: %+v, %v", paid, err)
	}
	f.seller.Set(func(k *channeltest.Knobs) { k.NoBatch = true })
	f.policy.Scheme = payer.SchemeAuto
	if paid, err := f.pay(); err != nil || paid.Channel != nil || paid.Requirements.Scheme != x402.SchemeExact {
		t.Fatalf("auto without a channel: %+v, %v", paid, err)
	}
	f.policy.Scheme = payer.SchemeChannel
	_, err := f.pay()
	if err == nil || !strings.Contains(err.Error(), "offers no batch-settlement channel") || !strings.Contains(err.Error(), "nothing was signed") {
		t.Fatalf("batch-settlement without a channel: %v", err)
	}
	if n := f.seller.Paid(); n != 2 {
		t.Fatalf("%d payments, want the two exact ones", n)
	}
	if _, err := payer.ParseScheme("channel"); err == nil {
		t.Error(`ParseScheme("channel") took it`)
	}
}

// TestPayChannelRefund: a refund sends the zero-charge voucher of the
// running total on GET /v1/channel, gets back balance less charged, and
// marks the channel refunded; the next call deposits again.
func TestPayChannelRefund(t *testing.T) {
	f := newPayer(t)
	f.mustPay()
	f.mustPay()
	r, err := payer.Refund(context.Background(), f.seller.Client(), f.key, f.state, f.seller.URL+"/v1/code")
	if err != nil {
		t.Fatal(err)
	}
	if r.Amount.String() != "40000" || r.Asset != x402.DefaultClientAsset {
		t.Fatalf("refunded %+v, want 40000", r)
	}
	ps := f.seller.Payments()
	if last := ps[len(ps)-1]; last.Kind != channel.KindRefund || last.Voucher.MaxClaimableAmount.String() != "10000" || last.RefundAmount != nil {
		t.Fatalf("refund payload %+v", last)
	}
	if ch := f.mustOne(); ch.State != payer.StateRefunded || ch.Unspent().Sign() != 0 {
		t.Fatalf("state %+v", ch)
	}
	if rec := f.mustPay(); rec.Kind != channel.KindDeposit || rec.Total.String() != "15000" {
		t.Fatalf("after the refund: %+v", rec)
	}
	other := x402test.Key(t)
	_, err = payer.Refund(context.Background(), f.seller.Client(), other, f.state, f.seller.URL)
	var qe *x402.QuoteRefusedError
	if err == nil || errors.As(err, &qe) || !strings.Contains(err.Error(), "nothing to refund") {
		t.Fatalf("another key's refund: %v", err)
	}
}
