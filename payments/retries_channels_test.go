package payments

import (
	"context"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/channels"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/internal/ledgertest"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// keptChannels is a kept gate offering channels over its SQLite ledger,
// with one adopted channel of a payer, and how to sign its vouchers.
type keptChannels struct {
	*kept
	cfg   channel.Config
	entry x402.Requirements
	id    common.Hash
	sign  func(max int64) []byte
}

func newKeptChannels(t *testing.T) *keptChannels {
	t.Helper()
	cfg := testConfig(t)
	k := newKept(t, &cfg, func(l *ledger.SQL, keep answer.Keeping) *channels.Seller {
		seller, err := channels.New(channels.Options{Store: l, Config: channels.Config{}.WithDefaults(),
			Authorizer: common.HexToAddress("0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"), Network: cfg.Network,
			HoldFor: time.Minute, Wait: time.Second, Keeping: keep})
		if err != nil {
			t.Fatal(err)
		}
		return seller
	})
	l := k.l
	kc := &keptChannels{kept: k, entry: *k.g.batch}
	extra, err := channel.ParseExtra(kc.entry)
	if err != nil {
		t.Fatal(err)
	}
	key := x402test.Key(t)
	kc.cfg = channel.NewConfig(key, kc.entry, extra, common.Hash{1})
	if kc.id, err = channel.ID(kc.cfg, big.NewInt(84532)); err != nil {
		t.Fatal(err)
	}
	mustAdopt(t, l, ledger.Channel{ID: kc.id.Hex(), Network: cfg.Network, Config: kc.cfg, Balance: big.NewInt(1_000_000),
		SyncedAt: time.Now()})
	kc.sign = func(max int64) []byte {
		sig, err := channel.SignVoucher(key, kc.id, big.NewInt(max), big.NewInt(84532))
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	return kc
}

// voucher is the PAYMENT-SIGNATURE of the voucher of max.
func (kc *keptChannels) voucher(t *testing.T, max int64) sandboxd.PaymentRequest {
	t.Helper()
	pl := channel.Payload{Kind: channel.KindVoucher, Config: kc.cfg,
		Voucher: channel.Voucher{ChannelID: kc.id, MaxClaimableAmount: big.NewInt(max), Signature: kc.sign(max)}}
	res := x402.NewResource(testResource, description)
	return keptRequest(x402test.Header(t, x402.HeaderPaymentSignature, channel.BuildPayload(&res, kc.entry, pl)), "a")
}

func TestKeptVoucherResend(t *testing.T) {
	ctx := context.Background()
	kc := newKeptChannels(t)
	r := kc.voucher(t, 5000)
	st := kc.mustDeliver(t, r, `{"out":11}`)
	a, err := kc.g.Check(ctx, r)
	wantReplayed(t, wantReplay(t, a, err, sandboxd.ReplayByPayment), `{"out":11}`, st)
	wantCharged(t, kc.l, strings.ToLower(kc.id.Hex()), 5000, 1)
	// The same voucher with another request: the corrective 402.
	r.Request = "b"
	_, err = kc.g.Check(ctx, r)
	wantPaymentError(t, err)
	wantCharged(t, kc.l, strings.ToLower(kc.id.Hex()), 5000, 1)
}

func TestKeptVoucherWhileHeld(t *testing.T) {
	ctx := context.Background()
	kc := newKeptChannels(t)
	r := kc.voucher(t, 5000)
	c, err := begin(kc.g, ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	a, err := kc.g.Check(ctx, r)
	rep := wantReplay(t, a, err, sandboxd.ReplayByPayment)
	go func() {
		time.Sleep(50 * time.Millisecond)
		c.Settle(ctx, delivered(`{"out":12}`))
	}()
	ans, err := rep.Answer(ctx)
	if err != nil || string(ans.Body) != `{"out":12}` || ans.Settlement == nil || len(ans.Settlement.Extra) == 0 {
		t.Fatalf("held voucher's retry answered %+v, %v", ans, err)
	}
	wantCharged(t, kc.l, strings.ToLower(kc.id.Hex()), 5000, 1)
}

func TestRetriesStoreRecoveredReport(t *testing.T) {
	ctx := context.Background()
	l := ledgertest.OpenFile(t, testConfig(t).Ledger)
	e := ledgertest.Entry(1)
	e.Answer = &ledger.AnswerRow{Request: "a", Kind: "run", Transport: "http", X402Version: 1, Keep: time.Minute}
	if err := l.Reserve(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettling(ctx, e.Payer, e.Nonce, ledger.NewBody(200, []byte(`{}`), 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "0xabc", "ok", nil); err != nil { // as Recover does
		t.Fatal(err)
	}
	m, body, err := RetriesStore(l).AnswerBody(ctx, e.Payer, e.Nonce)
	if err != nil || string(body) != `{}` {
		t.Fatalf("answer %q, %v", body, err)
	}
	want := sandboxd.Settlement{Version: 1, Success: true, Transaction: "0xabc", Network: e.Network,
		Payer: common.HexToAddress(e.Payer).Hex()}
	if m.Settlement == nil || !reflect.DeepEqual(*m.Settlement, want) {
		t.Fatalf("recovered report %+v, want %+v", m.Settlement, want)
	}
}

func TestWithRetriesOption(t *testing.T) {
	cfg := testConfig(t)
	l := ledgertest.OpenFile(t, cfg.Ledger)
	var o gateOptions
	if k, err := o.keeping(cfg, RunBounds{}, l, nil); err != nil || k.On() {
		t.Fatalf("no option: %+v, %v; want nothing kept", k, err)
	}
	off := false
	WithRetries(retries.Config{Enabled: &off}, retries.Options{})(&o)
	if k, err := o.keeping(cfg, RunBounds{}, l, nil); err != nil || k.On() {
		t.Fatalf("disabled: %+v, %v; want nothing kept", k, err)
	}
	WithRetries(retries.Config{Keep: time.Second}, retries.Options{})(&o)
	if _, err := o.keeping(cfg, RunBounds{}, l, nil); err == nil || !strings.Contains(err.Error(), "payments.retries.keep") {
		t.Fatalf("keep shorter than the validity: %v", err)
	}
	WithRetries(retries.Config{}, retries.Options{})(&o)
	k, err := o.keeping(cfg, RunBounds{}, l, nil)
	if err != nil || !k.On() || k.Keeper.Config().Keep != retries.DefaultKeep {
		t.Fatalf("defaults: %+v, %v", k, err)
	}
}
