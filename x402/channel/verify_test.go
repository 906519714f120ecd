package channel_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// payerKey is anvil's public test key 1, the payer and voucher signer of
// the first vector channel.
const payerKey = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"

// mustBase returns the first vector channel and the official client's
// voucher payload on it.
func mustBase(tb testing.TB) (vectorCase, channel.Payload) {
	tb.Helper()
	c := mustVectors(tb).Cases[0]
	return c, mustDecodePayment(tb, c.Voucher.JSON)
}

// signVoucher signs a Voucher of max on id under the escrow domain, with
// verifying contract escrow on chainID, by anvil's key 1.
func signVoucher(tb testing.TB, id common.Hash, max, chainID *big.Int, escrow common.Address) []byte {
	tb.Helper()
	key, err := crypto.HexToECDSA(payerKey)
	if err != nil {
		tb.Fatal(err)
	}
	td := apitypes.TypedData{
		Types:       x402.TypedDataTypes("Voucher(bytes32 channelId,uint128 maxClaimableAmount)"),
		PrimaryType: "Voucher",
		Domain: apitypes.TypedDataDomain{Name: "x402 Batch Settlement", Version: "1",
			ChainId: (*math.HexOrDecimal256)(chainID), VerifyingContract: escrow.Hex()},
		Message: apitypes.TypedDataMessage{"channelId": id.Hex(), "maxClaimableAmount": max},
	}
	hash, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		tb.Fatal(err)
	}
	sig, err := crypto.Sign(hash, key)
	if err != nil {
		tb.Fatal(err)
	}
	sig[64] += 27
	return sig
}

// highS returns the malleable twin of a low-s signature: s' = n - s, v
// flipped, which recovers to the same key.
func highS(sig []byte) []byte {
	out := append([]byte(nil), sig...)
	s := new(big.Int).Sub(crypto.S256().Params().N, new(big.Int).SetBytes(sig[32:64]))
	s.FillBytes(out[32:64])
	out[64] ^= 1
	return out
}

// TestVoucherSignatureAttacks: a voucher altered in any signed part, signed
// by another key, under another chain or escrow, or with a malformed or
// malleable signature is refused before anything about the channel is
// compared; v of 0/1 is taken and normalized to 27/28.
func TestVoucherSignatureAttacks(t *testing.T) {
	c, base := mustBase(t)
	chainID := big.NewInt(c.ChainID)
	sig := base.Voucher.Signature
	flipped := append([]byte(nil), sig...)
	flipped[10] ^= 1
	lowV := append([]byte(nil), sig...)
	lowV[64] -= 27
	badV := append([]byte(nil), sig...)
	badV[64] = 29
	otherSalt := base.Config
	otherSalt.Salt[31] ^= 1
	otherAuth := base.Config
	otherAuth.PayerAuthorizer = common.HexToAddress("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC")
	zeroAuth := base.Config
	zeroAuth.PayerAuthorizer = common.Address{}
	max := base.Voucher.MaxClaimableAmount
	cases := []struct {
		name    string
		mutate  func(v *channel.Voucher)
		config  channel.Config
		chainID *big.Int
		reason  string
	}{
		{"official", func(*channel.Voucher) {}, base.Config, chainID, ""},
		{"v 0/1", func(v *channel.Voucher) { v.Signature = lowV }, base.Config, chainID, ""},
		{"amount raised", func(v *channel.Voucher) { v.MaxClaimableAmount = new(big.Int).Add(max, big.NewInt(1)) }, base.Config, chainID, channel.ReasonVoucherSignature},
		{"other channel id", func(v *channel.Voucher) { v.ChannelID[0] ^= 1 }, base.Config, chainID, channel.ReasonChannelIDMismatch},
		{"config salt changed", func(*channel.Voucher) {}, otherSalt, chainID, channel.ReasonChannelIDMismatch},
		{"config authorizer changed", func(*channel.Voucher) {}, otherAuth, chainID, channel.ReasonChannelIDMismatch},
		{"wrong chain id", func(*channel.Voucher) {}, base.Config, big.NewInt(8453), channel.ReasonChannelIDMismatch},
		{"flipped byte", func(v *channel.Voucher) { v.Signature = flipped }, base.Config, chainID, channel.ReasonVoucherSignature},
		{"high s twin", func(v *channel.Voucher) { v.Signature = highS(sig) }, base.Config, chainID, channel.ReasonVoucherSignature},
		{"v 29", func(v *channel.Voucher) { v.Signature = badV }, base.Config, chainID, channel.ReasonVoucherSignature},
		{"64 bytes", func(v *channel.Voucher) { v.Signature = sig[:64] }, base.Config, chainID, channel.ReasonVoucherSignature},
		{"66 bytes", func(v *channel.Voucher) { v.Signature = append(append([]byte(nil), sig...), 0) }, base.Config, chainID, channel.ReasonVoucherSignature},
		{"wrong escrow", func(v *channel.Voucher) {
			v.Signature = signVoucher(t, v.ChannelID, max, chainID, common.HexToAddress("0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10004"))
		}, base.Config, chainID, channel.ReasonVoucherSignature},
		{"zero payer authorizer", func(*channel.Voucher) {}, zeroAuth, chainID, channel.ReasonChannelIDMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := base.Voucher
			tc.mutate(&v)
			err := channel.CheckVoucherSignature(&v, tc.config, tc.chainID)
			wantReason(t, err, tc.reason)
			if err == nil && v.Signature[64] != 27 && v.Signature[64] != 28 {
				t.Fatalf("signature's v is %d after the check, want 27 or 28", v.Signature[64])
			}
		})
	}
	// A config whose payer authorizer is zero (an ERC-1271 payer), with a
	// channel id that matches it, is still refused: it needs the chain.
	id, err := channel.ID(zeroAuth, chainID)
	if err != nil {
		t.Fatal(err)
	}
	v := channel.Voucher{ChannelID: id, MaxClaimableAmount: max, Signature: signVoucher(t, id, max, chainID, channel.Escrow)}
	wantReason(t, channel.CheckVoucherSignature(&v, zeroAuth, chainID), channel.ReasonVoucherSignature)
	// The same key signing the same numbers under the right domain passes:
	// the Go signer and the official one agree.
	v = channel.Voucher{ChannelID: base.Voucher.ChannelID, MaxClaimableAmount: max, Signature: signVoucher(t, base.Voucher.ChannelID, max, chainID, channel.Escrow)}
	wantReason(t, channel.CheckVoucherSignature(&v, base.Config, chainID), "")
}

// TestRunningTotal: a voucher pays exactly the charged total plus the
// price (never less, nor more as prepayment), above what was claimed, and
// within the balance less a pending withdrawal; the balance is gross.
func TestRunningTotal(t *testing.T) {
	n := big.NewInt
	price := n(1000)
	cases := []struct {
		name   string
		max    int64
		amount *big.Int
		s      channel.State
		reason string
	}{
		{"equal", 4000, price, channel.State{Charged: n(3000), Balance: n(10000)}, ""},
		{"below", 3999, price, channel.State{Charged: n(3000), Balance: n(10000)}, channel.ReasonCumulativeMismatch},
		{"replayed", 3000, price, channel.State{Charged: n(3000), Balance: n(10000)}, channel.ReasonCumulativeMismatch},
		{"one above", 4001, price, channel.State{Charged: n(3000), Balance: n(10000)}, channel.ReasonCumulativeMismatch},
		{"far above", 9000, price, channel.State{Charged: n(3000), Balance: n(10000)}, channel.ReasonCumulativeMismatch},
		{"new channel", 1000, price, channel.State{Balance: n(10000)}, ""},
		{"at claimed", 3000, price, channel.State{Charged: n(2000), Balance: n(10000), TotalClaimed: n(3000)}, channel.ReasonBelowClaimed},
		{"claimed is not subtracted", 4000, price, channel.State{Charged: n(3000), Balance: n(4000), TotalClaimed: n(3000)}, ""},
		{"over the balance", 4000, price, channel.State{Charged: n(3000), Balance: n(3999)}, channel.ReasonExceedsBalance},
		{"at the balance", 4000, price, channel.State{Charged: n(3000), Balance: n(4000)}, ""},
		{"over balance less withdrawal", 4000, price, channel.State{Charged: n(3000), Balance: n(5000), WithdrawAmount: n(1001)}, channel.ReasonExceedsBalance},
		{"at balance less withdrawal", 4000, price, channel.State{Charged: n(3000), Balance: n(5000), WithdrawAmount: n(1000)}, ""},
		{"refund at charged", 3000, n(0), channel.State{Charged: n(3000), Balance: n(5000), TotalClaimed: n(3000)}, ""},
		{"refund above charged", 3001, n(0), channel.State{Charged: n(3000), Balance: n(5000)}, channel.ReasonCumulativeMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantReason(t, channel.CheckRunningTotal(n(tc.max), tc.amount, tc.s), tc.reason)
		})
	}
}

// TestVerifyVoucherOrder: a voucher over the balance is refused for the
// balance once signed, and a forged one for its signature whatever the
// state, so a stranger learns nothing of the channel.
func TestVerifyVoucherOrder(t *testing.T) {
	c, base := mustBase(t)
	chainID, price := big.NewInt(c.ChainID), mustBig(t, c.Requirements.Amount)
	charged := mustBig(t, c.Voucher.Charged)
	v := base.Voucher
	wantReason(t, channel.VerifyVoucher(&v, base.Config, chainID, price, channel.State{Charged: charged, Balance: charged}),
		channel.ReasonExceedsBalance)
	v = base.Voucher
	v.Signature = highS(v.Signature)
	wantReason(t, channel.VerifyVoucher(&v, base.Config, chainID, price, channel.State{Charged: new(big.Int), Balance: charged}),
		channel.ReasonVoucherSignature)
}

// TestCheckConfig: a config naming another receiver, receiver authorizer,
// token or withdraw delay than the terms is refused with its own code;
// addresses compare in any letter case.
func TestCheckConfig(t *testing.T) {
	c, base := mustBase(t)
	other := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	cases := []struct {
		name   string
		mutate func(cfg *channel.Config)
		reason string
	}{
		{"official", func(*channel.Config) {}, ""},
		{"receiver", func(cfg *channel.Config) { cfg.Receiver = other }, channel.ReasonReceiverMismatch},
		{"receiver authorizer", func(cfg *channel.Config) { cfg.ReceiverAuthorizer = other }, channel.ReasonReceiverAuthorizerMismatch},
		{"token", func(cfg *channel.Config) { cfg.Token = other }, channel.ReasonTokenMismatch},
		{"withdraw delay", func(cfg *channel.Config) { cfg.WithdrawDelay++ }, channel.ReasonWithdrawDelayMismatch},
		{"client default delay", func(cfg *channel.Config) { cfg.WithdrawDelay = 3600 }, channel.ReasonWithdrawDelayMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base.Config
			tc.mutate(&cfg)
			wantReason(t, channel.CheckConfig(cfg, c.Requirements), tc.reason)
		})
	}
	lower := c.Requirements
	lower.PayTo = "0x90f79bf6eb2c4f870365e785982e1f101e93b906"
	wantReason(t, channel.CheckConfig(base.Config, lower), "")
	broken := c.Requirements
	broken.Extra = x402.Extra{Name: "USDC", Version: "2"}
	if err := channel.CheckConfig(base.Config, broken); err == nil || x402.RejectReason(err, "") != "" {
		t.Fatalf("terms without receiverAuthorizer: %v, want a plain error (the seller's fault)", err)
	}
}

// TestDepositAttacks: a deposit's authorization out of its window, for
// another amount, token domain or channel, or by another key is refused.
func TestDepositAttacks(t *testing.T) {
	c := mustVectors(t).Cases[0]
	base := mustDecodePayment(t, c.Deposit.JSON)
	valid := time.Unix(base.Deposit.ValidBefore.Int64()-60, 0)
	renamed := c.Requirements
	renamed.Extra.Name = "USD Coin"
	noDomain := c.Requirements
	noDomain.Extra.Version = ""
	otherSalt := base.Config
	otherSalt.Salt[0] ^= 1
	otherPayer := base.Config
	otherPayer.Payer = otherPayer.Receiver
	cases := []struct {
		name   string
		mutate func(d *channel.Deposit)
		config channel.Config
		req    x402.Requirements
		now    time.Time
		reason string
	}{
		{"official", func(*channel.Deposit) {}, base.Config, c.Requirements, valid, ""},
		{"expires in 5 s", func(*channel.Deposit) {}, base.Config, c.Requirements, time.Unix(base.Deposit.ValidBefore.Int64()-5, 0), channel.ReasonValidBefore},
		{"not yet valid", func(d *channel.Deposit) { d.ValidAfter = big.NewInt(valid.Unix() + 1) }, base.Config, c.Requirements, valid, channel.ReasonValidAfter},
		{"amount raised", func(d *channel.Deposit) { d.Amount = new(big.Int).Add(d.Amount, big.NewInt(1)) }, base.Config, c.Requirements, valid, channel.ReasonReceiveSignature},
		{"other auth salt", func(d *channel.Deposit) { d.Salt[5] ^= 1 }, base.Config, c.Requirements, valid, channel.ReasonReceiveSignature},
		{"other channel", func(*channel.Deposit) {}, otherSalt, c.Requirements, valid, channel.ReasonReceiveSignature},
		{"other payer", func(*channel.Deposit) {}, otherPayer, c.Requirements, valid, channel.ReasonReceiveSignature},
		{"other token domain", func(*channel.Deposit) {}, base.Config, renamed, valid, channel.ReasonReceiveSignature},
		{"no token domain", func(*channel.Deposit) {}, base.Config, noDomain, valid, channel.ReasonMissingDomain},
		{"high s", func(d *channel.Deposit) { d.Signature = highS(d.Signature) }, base.Config, c.Requirements, valid, channel.ReasonReceiveSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := *base.Deposit
			tc.mutate(&d)
			wantReason(t, channel.VerifyDeposit(&d, tc.config, tc.req, tc.now), tc.reason)
		})
	}
}
