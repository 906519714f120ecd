package channel_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/x402"
	"sandboxd/x402/channel"
	"sandboxd/x402/x402test"
)

// vectors is testdata/vectors.json, written by testdata/vectors.mjs with
// the official client (see its header to regenerate).
type vectors struct {
	Escrow    string       `json:"escrow"`
	Collector string       `json:"collector"`
	Cases     []vectorCase `json:"cases"`
}

// vectorCase is one channel of the official client and what it signed.
type vectorCase struct {
	Name            string            `json:"name"`
	Network         string            `json:"network"`
	ChainID         int64             `json:"chainId"`
	Requirements    x402.Requirements `json:"requirements"`
	PayerAuthorizer string            `json:"payerAuthorizer"`
	Config          json.RawMessage   `json:"config"`
	ChannelID       string            `json:"channelId"`
	Deposit         struct {
		JSON          string `json:"json"`
		Nonce         string `json:"nonce"`
		ReceiveDigest string `json:"receiveDigest"`
		CollectorData string `json:"collectorData"`
	} `json:"deposit"`
	Voucher struct {
		Charged string `json:"charged"`
		JSON    string `json:"json"`
	} `json:"voucher"`
	Vouchers []struct {
		Max, Digest, Signature, Signer string
	} `json:"vouchers"`
	Refunds []struct {
		JSON string `json:"json"`
	} `json:"refunds"`
	RefundSignature struct {
		Nonce, Amount, Digest, Signature, Signer string
	} `json:"refundSignature"`
	ClaimBatch struct {
		Claims []struct {
			ChannelID          string `json:"channelId"`
			MaxClaimableAmount string `json:"maxClaimableAmount"`
			TotalClaimed       string `json:"totalClaimed"`
		} `json:"claims"`
		Digest string `json:"digest"`
	} `json:"claimBatch"`
	WrongType []struct {
		Name               string `json:"name"`
		MaxClaimableAmount string `json:"maxClaimableAmount"`
		Signature          string `json:"signature"`
	} `json:"wrongType"`
}

// mustVectors reads the official client's vectors.
func mustVectors(tb testing.TB) vectors {
	tb.Helper()
	var v vectors
	x402test.ReadJSON(tb, "testdata/vectors.json", &v)
	if len(v.Cases) == 0 {
		tb.Fatal("no vectors")
	}
	return v
}

// mustDecodePayment decodes a full v2 PaymentPayload JSON as sent by the
// official client: strictly (no duplicate key at any depth), then its
// payload member with channel.Decode.
func mustDecodePayment(tb testing.TB, raw string) channel.Payload {
	tb.Helper()
	var payment struct {
		X402Version int               `json:"x402Version"`
		Accepted    x402.Requirements `json:"accepted"`
		Payload     json.RawMessage   `json:"payload"`
	}
	if err := x402.DecodeStrict([]byte(raw), nil, &payment); err != nil {
		tb.Fatal(err)
	}
	if payment.X402Version != 2 || payment.Accepted.Scheme != channel.Scheme {
		tb.Fatalf("payment is v%d %q, want v2 %s", payment.X402Version, payment.Accepted.Scheme, channel.Scheme)
	}
	p, err := channel.Decode(payment.Payload)
	if err != nil {
		tb.Fatalf("Decode(official payload): %v", err)
	}
	return p
}

// mustBig parses a decimal.
func mustBig(tb testing.TB, s string) *big.Int {
	tb.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		tb.Fatalf("%q is not a number", s)
	}
	return n
}

// wantReason fails unless err is a *x402.RejectError with reason (nil
// reason: no error).
func wantReason(tb testing.TB, err error, reason string) {
	tb.Helper()
	var r *x402.RejectError
	switch {
	case reason == "" && err != nil:
		tb.Fatalf("unexpected refusal: %v", err)
	case reason != "" && !errors.As(err, &r):
		tb.Fatalf("got %v, want a refusal %s", err, reason)
	case reason != "" && r.Reason != reason:
		tb.Fatalf("refused %s (%v), want %s", r.Reason, err, reason)
	}
}

// TestVectorsAddresses: the contracts are where the official client puts them.
func TestVectorsAddresses(t *testing.T) {
	v := mustVectors(t)
	if common.HexToAddress(v.Escrow) != channel.Escrow || common.HexToAddress(v.Collector) != channel.Collector {
		t.Fatalf("escrow %s collector %s, the client's %s %s", channel.Escrow, channel.Collector, v.Escrow, v.Collector)
	}
}

// TestVectors checks every vector of the official client: channel ids,
// voucher, refund, claim-batch and deposit digests, deposit nonces and
// collector data, the recovered signers, and the decoding and
// verification of its deposit, voucher and refund payloads.
func TestVectors(t *testing.T) {
	for _, c := range mustVectors(t).Cases {
		t.Run(c.Name, func(t *testing.T) {
			chainID := big.NewInt(c.ChainID)
			id := common.HexToHash(c.ChannelID)
			dep := mustDecodePayment(t, c.Deposit.JSON)
			if dep.Kind != channel.KindDeposit {
				t.Fatalf("kind %q, want deposit", dep.Kind)
			}
			checkConfig(t, c, dep.Config)
			got, err := channel.ID(dep.Config, chainID)
			if err != nil || got != id || dep.Voucher.ChannelID != id {
				t.Fatalf("ID = %s, %v; voucher says %s; the client's %s", got, err, dep.Voucher.ChannelID, id)
			}
			wantReason(t, channel.CheckConfig(dep.Config, c.Requirements), "")
			checkDeposit(t, c, dep, id)

			price := mustBig(t, c.Requirements.Amount)
			vp := mustDecodePayment(t, c.Voucher.JSON)
			charged := mustBig(t, c.Voucher.Charged)
			state := channel.State{Charged: charged, Balance: new(big.Int).Mul(price, big.NewInt(100))}
			if vp.Kind != channel.KindVoucher {
				t.Fatalf("kind %q, want voucher", vp.Kind)
			}
			wantReason(t, channel.VerifyVoucher(&vp.Voucher, vp.Config, chainID, price, state), "")

			for i, r := range c.Refunds {
				rp := mustDecodePayment(t, r.JSON)
				if rp.Kind != channel.KindRefund || (i == 0) != (rp.RefundAmount == nil) {
					t.Fatalf("refund %d: kind %q amount %v", i, rp.Kind, rp.RefundAmount)
				}
				if i == 1 && rp.RefundAmount.Cmp(price) != 0 {
					t.Fatalf("refund amount %s, want %s", rp.RefundAmount, price)
				}
				wantReason(t, channel.VerifyVoucher(&rp.Voucher, rp.Config, chainID, new(big.Int), state), "")
			}
			checkSigned(t, c, chainID, id)
		})
	}
}

// checkConfig compares a decoded config with the client's.
func checkConfig(tb testing.TB, c vectorCase, got channel.Config) {
	tb.Helper()
	var want map[string]any
	if err := json.Unmarshal(c.Config, &want); err != nil {
		tb.Fatal(err)
	}
	addrs := map[string]common.Address{"payer": got.Payer, "payerAuthorizer": got.PayerAuthorizer, "receiver": got.Receiver,
		"receiverAuthorizer": got.ReceiverAuthorizer, "token": got.Token}
	for k, a := range addrs {
		if common.HexToAddress(want[k].(string)) != a {
			tb.Errorf("config.%s = %s, want %s", k, a, want[k])
		}
	}
	if got.PayerAuthorizer != common.HexToAddress(c.PayerAuthorizer) {
		tb.Errorf("payerAuthorizer %s, want the voucher signer %s", got.PayerAuthorizer, c.PayerAuthorizer)
	}
	if float64(got.WithdrawDelay) != want["withdrawDelay"].(float64) || got.Salt != common.HexToHash(want["salt"].(string)) {
		tb.Errorf("withdrawDelay %d salt %s, want %v %v", got.WithdrawDelay, got.Salt, want["withdrawDelay"], want["salt"])
	}
}

// checkDeposit checks a deposit's nonce, digest, collector data, signature
// and first voucher.
func checkDeposit(tb testing.TB, c vectorCase, p channel.Payload, id common.Hash) {
	tb.Helper()
	d := p.Deposit
	if n := channel.DepositNonce(id, d.Salt); n != common.HexToHash(c.Deposit.Nonce) {
		tb.Errorf("DepositNonce = %s, want %s", n, c.Deposit.Nonce)
	}
	digest, err := channel.ReceiveDigest(c.Requirements, d, p.Config.Payer, id)
	if err != nil || digest != common.HexToHash(c.Deposit.ReceiveDigest) {
		tb.Errorf("ReceiveDigest = %s, %v, want %s", digest, err, c.Deposit.ReceiveDigest)
	}
	data, err := channel.CollectorData(d)
	if err != nil || !bytes.Equal(data, hexutil.MustDecode(c.Deposit.CollectorData)) {
		tb.Errorf("CollectorData = %x, %v, want %s", data, err, c.Deposit.CollectorData)
	}
	now := time.Unix(d.ValidBefore.Int64()-60, 0)
	wantReason(tb, channel.VerifyDeposit(d, p.Config, c.Requirements, now), "")
	state := channel.State{Balance: d.Amount}
	wantReason(tb, channel.VerifyVoucher(&p.Voucher, p.Config, big.NewInt(c.ChainID), mustBig(tb, c.Requirements.Amount), state), "")
}

// checkSigned checks the vouchers, the refund signature, the claim batch
// and the wrongly typed signatures of a vector.
func checkSigned(tb testing.TB, c vectorCase, chainID *big.Int, id common.Hash) {
	tb.Helper()
	for _, v := range c.Vouchers {
		digest, err := channel.VoucherDigest(id, mustBig(tb, v.Max), chainID)
		if err != nil || digest != common.HexToHash(v.Digest) {
			tb.Errorf("VoucherDigest(%s) = %s, %v, want %s", v.Max, digest, err, v.Digest)
		}
		if signer, _, err := x402.RecoverSigner(digest, hexutil.MustDecode(v.Signature)); err != nil || signer != common.HexToAddress(v.Signer) {
			tb.Errorf("voucher %s recovers to %s, %v, want %s", v.Max, signer, err, v.Signer)
		}
	}
	rs := c.RefundSignature
	digest, err := channel.RefundDigest(id, mustBig(tb, rs.Nonce), mustBig(tb, rs.Amount), chainID)
	if err != nil || digest != common.HexToHash(rs.Digest) {
		tb.Errorf("RefundDigest = %s, %v, want %s", digest, err, rs.Digest)
	}
	if signer, _, err := x402.RecoverSigner(digest, hexutil.MustDecode(rs.Signature)); err != nil || signer != common.HexToAddress(rs.Signer) {
		tb.Errorf("refund signature recovers to %s, %v, want %s", signer, err, rs.Signer)
	}
	var entries []channel.ClaimEntry
	for _, e := range c.ClaimBatch.Claims {
		entries = append(entries, channel.ClaimEntry{ChannelID: common.HexToHash(e.ChannelID),
			MaxClaimableAmount: mustBig(tb, e.MaxClaimableAmount), TotalClaimed: mustBig(tb, e.TotalClaimed)})
	}
	if digest, err := channel.ClaimBatchDigest(entries, chainID); err != nil || digest != common.HexToHash(c.ClaimBatch.Digest) {
		tb.Errorf("ClaimBatchDigest = %s, %v, want %s", digest, err, c.ClaimBatch.Digest)
	}
	var cfg channel.Config
	p := mustDecodePayment(tb, c.Voucher.JSON)
	cfg = p.Config
	for _, w := range c.WrongType {
		v := channel.Voucher{ChannelID: id, MaxClaimableAmount: mustBig(tb, w.MaxClaimableAmount), Signature: hexutil.MustDecode(w.Signature)}
		if err := channel.CheckVoucherSignature(&v, cfg, chainID); err == nil {
			tb.Errorf("%s: a wrongly typed signature passed", w.Name)
		} else {
			wantReason(tb, err, channel.ReasonVoucherSignature)
		}
	}
}
