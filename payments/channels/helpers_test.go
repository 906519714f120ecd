package channels

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// The seller's test terms: x402test's exact entry (5000 atomic units on
// Base Sepolia) quoted with channels.
var (
	// testAuthorizer is the receiver authorizer the seller quotes.
	testAuthorizer = common.HexToAddress("0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65")
	// price is x402test's price.
	price = big.NewInt(5000)
)

// testResource is the resource URL of the calls.
const testResource = "https://sandboxd.test/v1/code"

// harness is a seller over in-memory fakes, and one payer with a channel
// config for the seller's terms.
type harness struct {
	seller *Seller
	store  *fakeStore
	reader *fakeReader
	dep    *fakeDepositor
	entry  x402.Requirements
	// payer signs the vouchers and deposits of config, whose id is id.
	payer   *ecdsa.PrivateKey
	config  channel.Config
	id      common.Hash
	chainID *big.Int
}

// newHarness returns a seller over fresh fakes, on the real clock: a
// reservation is held for a minute, and a voucher on a concurrent call's
// projected total waits up to wait for that call's hold.
func newHarness(tb testing.TB, wait time.Duration) *harness {
	tb.Helper()
	store := newFakeStore(time.Now)
	h := &harness{store: store, reader: &fakeReader{}, dep: &fakeDepositor{outcome: depositOK}, payer: x402test.Key(tb)}
	s, err := New(Options{Store: store, Reader: h.reader, Depositor: h.dep, Config: Config{}.WithDefaults(),
		Authorizer: testAuthorizer, Network: "eip155:84532", HoldFor: time.Minute, Wait: wait})
	if err != nil {
		tb.Fatal(err)
	}
	h.seller, h.chainID = s, s.chainID
	h.entry = s.Entry(x402test.Requirements(tb))
	addr := crypto.PubkeyToAddress(h.payer.PublicKey)
	h.config = channel.Config{Payer: addr, PayerAuthorizer: addr, Receiver: common.HexToAddress(h.entry.PayTo),
		ReceiverAuthorizer: testAuthorizer, Token: common.HexToAddress(h.entry.Asset),
		WithdrawDelay: uint64(DefaultWithdrawDelay / time.Second)}
	h.id = mustID(tb, h.config, h.chainID)
	return h
}

// idHex is the channel's id as the ledger keys it.
func (h *harness) idHex() string { return strings.ToLower(h.id.Hex()) }

// open stores the channel's row: open, balance deposited, charged
// charged under the payer's voucher of that total, the mirror fresh.
func (h *harness) open(tb testing.TB, balance, charged int64) {
	tb.Helper()
	row := ledger.Channel{ID: h.idHex(), Network: h.entry.Network, Config: h.config, State: ledger.ChannelOpen,
		Charged: big.NewInt(charged), VoucherMax: big.NewInt(charged), Balance: big.NewInt(balance),
		Claimed: new(big.Int), WithdrawAmount: new(big.Int), RefundNonce: new(big.Int), SyncedAt: time.Now()}
	if charged > 0 {
		row.VoucherSig = signVoucher(tb, h.payer, h.id, big.NewInt(charged), h.chainID)
	}
	h.store.put(row)
}

// mustID is the id of c on chainID.
func mustID(tb testing.TB, c channel.Config, chainID *big.Int) common.Hash {
	tb.Helper()
	id, err := channel.ID(c, chainID)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// signVoucher signs the voucher of max on channel id with key, as the
// official client does (v 27/28).
func signVoucher(tb testing.TB, key *ecdsa.PrivateKey, id common.Hash, max, chainID *big.Int) []byte {
	tb.Helper()
	digest, err := channel.VoucherDigest(id, max, chainID)
	if err != nil {
		tb.Fatal(err)
	}
	return sign(tb, key, digest)
}

// sign signs digest with key, v 27/28.
func sign(tb testing.TB, key *ecdsa.PrivateKey, digest common.Hash) []byte {
	tb.Helper()
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		tb.Fatal(err)
	}
	sig[64] += 27
	return sig
}

// voucher returns the payer's voucher payload of running total max.
func (h *harness) voucher(tb testing.TB, max int64) *x402.Payment {
	tb.Helper()
	return h.payment(tb, h.voucherPayload(tb, channel.KindVoucher, h.config, h.payer, max), h.entry)
}

// voucherPayload is a payload of kind on channel c whose voucher of max is
// signed by key.
func (h *harness) voucherPayload(tb testing.TB, kind channel.Kind, c channel.Config, key *ecdsa.PrivateKey, max int64) channel.Payload {
	tb.Helper()
	id := mustID(tb, c, h.chainID)
	m := big.NewInt(max)
	return channel.Payload{Kind: kind, Config: c,
		Voucher: channel.Voucher{ChannelID: id, MaxClaimableAmount: m, Signature: signVoucher(tb, key, id, m, h.chainID)}}
}

// deposit returns the payer's deposit of amount with its voucher of max,
// its authorization valid until validBefore (Unix s) and salted by salt.
func (h *harness) deposit(tb testing.TB, amount, max, validBefore int64, salt common.Hash) *x402.Payment {
	tb.Helper()
	return h.depositBy(tb, h.payer, &channel.Deposit{Amount: big.NewInt(amount), ValidAfter: new(big.Int),
		ValidBefore: big.NewInt(validBefore), Salt: salt}, max)
}

// depositBy returns the deposit d, its authorization signed by key, with
// the payer's voucher of max.
func (h *harness) depositBy(tb testing.TB, key *ecdsa.PrivateKey, d *channel.Deposit, max int64) *x402.Payment {
	tb.Helper()
	pl := h.voucherPayload(tb, channel.KindDeposit, h.config, h.payer, max)
	digest, err := channel.ReceiveDigest(h.entry, d, h.config.Payer, h.id)
	if err != nil {
		tb.Fatal(err)
	}
	d.Signature = sign(tb, key, digest)
	pl.Deposit = d
	return h.payment(tb, pl, h.entry)
}

// newSalt is 32 random bytes, a deposit authorization's own salt.
func newSalt(tb testing.TB) common.Hash {
	tb.Helper()
	var s common.Hash
	if _, err := rand.Read(s[:]); err != nil {
		tb.Fatal(err)
	}
	return s
}

// validBefore is the official client's validBefore: now plus the entry's
// timeout.
func (h *harness) validBefore() int64 {
	return time.Now().Unix() + int64(h.entry.MaxTimeoutSeconds)
}

// payment is pl as x402.DecodePayment yields it from the PAYMENT-SIGNATURE
// header of a v2 payment that accepted accepted.
func (h *harness) payment(tb testing.TB, pl channel.Payload, accepted x402.Requirements) *x402.Payment {
	tb.Helper()
	raw, err := json.Marshal(pl)
	if err != nil {
		tb.Fatal(err)
	}
	res := x402.NewResource(testResource, "Run a short Python program")
	body, err := json.Marshal(struct {
		X402Version int               `json:"x402Version"`
		Resource    *x402.Resource    `json:"resource"`
		Accepted    x402.Requirements `json:"accepted"`
		Payload     json.RawMessage   `json:"payload"`
	}{2, &res, accepted, raw})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := x402.DecodePayment(base64.StdEncoding.EncodeToString(body), "")
	if err != nil {
		tb.Fatal(err)
	}
	if p.Version != 2 || p.Scheme != x402.SchemeBatchSettlement || len(p.Raw) == 0 {
		tb.Fatalf("decoded payment %+v, want a v2 batch-settlement payment with its payload raw", p)
	}
	return p
}

// check checks p against the seller's entry; it returns the terms that
// answered.
func (h *harness) check(p *x402.Payment) (sandboxd.Authorization, *fakeTerms, error) {
	t := &fakeTerms{entry: h.entry}
	a, err := h.seller.Check(context.Background(), Request{Payment: p, Entry: h.entry, Resource: testResource, Terms: t})
	return a, t, err
}

// pay checks, reserves and settles p, as the gate and httpapi do for a
// delivered answer.
func (h *harness) pay(p *x402.Payment) (*sandboxd.Settlement, *fakeTerms, error) {
	a, t, err := h.check(p)
	if err != nil {
		return nil, t, err
	}
	c, err := a.Reserve(context.Background())
	if err != nil {
		return nil, t, err
	}
	st, err := c.Settle(context.Background(), sandboxd.Delivered{Result: sandboxd.Result{Status: sandboxd.StatusOK}})
	return st, t, err
}

// mustPay pays p, failing the test unless it is charged.
func (h *harness) mustPay(tb testing.TB, p *x402.Payment) *sandboxd.Settlement {
	tb.Helper()
	st, _, err := h.pay(p)
	if err != nil {
		tb.Fatalf("payment refused: %v", err)
	}
	return st
}

// charged is the channel's charged total.
func (h *harness) charged(tb testing.TB) int64 {
	tb.Helper()
	return h.store.get(tb, h.idHex()).Charged.Int64()
}

// corrective is what a corrective 402 tells the official client.
type corrective struct {
	code    string
	state   channel.ChannelState
	voucher *channel.VoucherState
}

// mustCorrective reads the corrective 402 err, failing the test unless it
// is one: CodePayment whose terms carry the bare code as error and the
// batch entry with channelState (and voucherState when present).
func mustCorrective(tb testing.TB, err error) corrective {
	tb.Helper()
	c, ok := correctiveOf(err)
	if !ok {
		tb.Fatalf("got %v, want a corrective 402", err)
	}
	return c
}

// correctiveOf reads err as a corrective 402.
func correctiveOf(err error) (corrective, bool) {
	var se *sandboxd.Error
	if !errors.As(err, &se) || se.Code != sandboxd.CodePayment || se.Payment == nil || se.Payment.Terms == nil {
		return corrective{}, false
	}
	var pr x402.PaymentRequired
	if json.Unmarshal(se.Payment.Terms.V2, &pr) != nil || len(pr.Accepts) != 1 {
		return corrective{}, false
	}
	raw, ok := pr.Accepts[0].Extra.Member("channelState")
	if !ok {
		return corrective{}, false
	}
	c := corrective{code: pr.Error}
	if json.Unmarshal(raw, &c.state) != nil {
		return corrective{}, false
	}
	if raw, ok := pr.Accepts[0].Extra.Member("voucherState"); ok {
		c.voucher = new(channel.VoucherState)
		if json.Unmarshal(raw, c.voucher) != nil {
			return corrective{}, false
		}
	}
	return c, true
}

// signer recovers who signed the voucher of vs on channel id.
func signer(tb testing.TB, id common.Hash, vs *channel.VoucherState, chainID *big.Int) common.Address {
	tb.Helper()
	max, ok := new(big.Int).SetString(vs.SignedMaxClaimable, 10)
	if !ok {
		tb.Fatalf("voucherState.signedMaxClaimable %q", vs.SignedMaxClaimable)
	}
	digest, err := channel.VoucherDigest(id, max, chainID)
	if err != nil {
		tb.Fatal(err)
	}
	sig, err := hexutil.Decode(vs.Signature)
	if err != nil {
		tb.Fatal(err)
	}
	got, _, err := x402.RecoverSigner(digest, sig)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// wantRefusal requires err to be a plain refusal (CodePayment, not
// corrective) whose message names reason.
func wantRefusal(tb testing.TB, err error, reason string) {
	tb.Helper()
	if sandboxd.ErrorCode(err) != sandboxd.CodePayment {
		tb.Fatalf("got %v (code %s), want a 402 refusal %s", err, sandboxd.ErrorCode(err), reason)
	}
	if c, ok := correctiveOf(err); ok {
		tb.Fatalf("got the corrective 402 %+v, want the refusal %s", c, reason)
	}
	if !strings.Contains(sandboxd.ErrorMessage(err), reason) {
		tb.Fatalf("refusal %q does not name %s", sandboxd.ErrorMessage(err), reason)
	}
}
