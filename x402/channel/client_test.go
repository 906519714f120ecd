package channel_test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// anvilKeys are anvil's default accounts 0..5, the public test keys
// testdata/vectors.mjs signs with.
var anvilKeys = []string{
	"ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
	"59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
	"5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
	"7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
	"47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
	"8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
}

// mustAnvilKey returns the anvil key of address a.
func mustAnvilKey(tb testing.TB, a string) *ecdsa.PrivateKey {
	tb.Helper()
	for _, h := range anvilKeys {
		k, err := crypto.HexToECDSA(h)
		if err != nil {
			tb.Fatal(err)
		}
		if crypto.PubkeyToAddress(k.PublicKey) == common.HexToAddress(a) {
			return k
		}
	}
	tb.Fatalf("no anvil key for %s", a)
	return nil
}

// officialPayment is a v2 payment of the official client, its payload
// kept as sent.
type officialPayment struct {
	Resource *x402.Resource    `json:"resource"`
	Accepted x402.Requirements `json:"accepted"`
	Payload  json.RawMessage   `json:"payload"`
}

// mustOfficial splits an official client's payment JSON.
func mustOfficial(tb testing.TB, raw string) officialPayment {
	tb.Helper()
	var p officialPayment
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// mustSameJSON fails unless got and want are the same JSON value (members
// in any order).
func mustSameJSON(tb testing.TB, what string, got []byte, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// checksummedReceiver is the official client's JSON with its config's
// receiver spelled as EIP-55. The client copies payTo's spelling into
// receiver (lower case in one vector); a Config keeps the address, not its
// spelling, and encodes it checksummed. Neither the channel id nor any
// signature depends on the spelling, and Decode takes both.
func checksummedReceiver(c vectorCase, official string) string {
	return strings.ReplaceAll(official, `"receiver":"`+c.Requirements.PayTo+`"`,
		`"receiver":"`+common.HexToAddress(c.Requirements.PayTo).Hex()+`"`)
}

// mustBuild builds p for c's terms and checks it against the official
// client's payment: the payload member byte for byte, the whole payment as
// the same JSON value (the official client orders the envelope of a refund
// otherwise than a payment's, and its accepted.extra as the server sent it).
func mustBuild(tb testing.TB, c vectorCase, p channel.Payload, official string) {
	tb.Helper()
	official = checksummedReceiver(c, official)
	want := mustOfficial(tb, official)
	built := channel.BuildPayload(want.Resource, c.Requirements, p)
	raw, err := json.Marshal(built)
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := json.Marshal(built.Payload)
	if err != nil {
		tb.Fatal(err)
	}
	if string(payload) != string(want.Payload) {
		tb.Errorf("%s payload:\n got %s\nwant %s", p.Kind, payload, want.Payload)
	}
	mustSameJSON(tb, string(p.Kind)+" payment", raw, official)
	decoded := mustDecodePayment(tb, string(raw))
	if decoded.Kind != p.Kind {
		tb.Errorf("decoded kind %q, want %q", decoded.Kind, p.Kind)
	}
}

// TestChannelClientMatchesOfficialClient signs, for every vector, what the
// official client signed: the config (NewConfig) and its id, the deposit's
// ERC-3009 authorization (SignDeposit, given the client's random salt and
// time), the vouchers (SignVoucher) and the deposit, voucher and refund
// payments (BuildPayload), each byte for byte.
func TestChannelClientMatchesOfficialClient(t *testing.T) {
	for _, c := range mustVectors(t).Cases {
		t.Run(c.Name, func(t *testing.T) {
			chainID := big.NewInt(c.ChainID)
			dep := mustDecodePayment(t, c.Deposit.JSON)
			payer := mustAnvilKey(t, dep.Config.Payer.Hex())
			signer := mustAnvilKey(t, c.PayerAuthorizer)
			extra, err := channel.ParseExtra(c.Requirements)
			if err != nil {
				t.Fatal(err)
			}
			cfg := channel.NewConfig(payer, c.Requirements, extra, dep.Config.Salt)
			// The delegated case signs vouchers with another key than the
			// payer's, which NewConfig never does; the rest is the same.
			cfg.PayerAuthorizer = crypto.PubkeyToAddress(signer.PublicKey)
			gotCfg, _ := json.Marshal(cfg)
			var want bytes.Buffer
			if err := json.Compact(&want, c.Config); err != nil {
				t.Fatal(err)
			}
			if string(gotCfg) != checksummedReceiver(c, want.String()) {
				t.Errorf("config %s, want %s", gotCfg, want.String())
			}
			id, err := channel.ID(cfg, chainID)
			if err != nil || id != common.HexToHash(c.ChannelID) {
				t.Fatalf("ID = %s, %v, want %s", id, err, c.ChannelID)
			}
			for _, v := range c.Vouchers {
				sig, err := channel.SignVoucher(signer, id, mustBig(t, v.Max), chainID)
				if err != nil || hexutil.Encode(sig) != v.Signature {
					t.Errorf("SignVoucher(%s) = %x, %v, want %s", v.Max, sig, err, v.Signature)
				}
			}
			mustPayments(t, c, payer, signer, cfg, id, dep)
		})
	}
}

// TestChannelNewConfigIsTheOfficialClients: with the payer signing its own
// vouchers (the client's default), NewConfig is the official config.
func TestChannelNewConfigIsTheOfficialClients(t *testing.T) {
	for _, c := range mustVectors(t).Cases {
		dep := mustDecodePayment(t, c.Deposit.JSON)
		if dep.Config.Payer != dep.Config.PayerAuthorizer {
			continue
		}
		extra, err := channel.ParseExtra(c.Requirements)
		if err != nil {
			t.Fatal(err)
		}
		cfg := channel.NewConfig(mustAnvilKey(t, dep.Config.Payer.Hex()), c.Requirements, extra, dep.Config.Salt)
		if cfg != dep.Config {
			t.Errorf("%s: NewConfig = %+v, want %+v", c.Name, cfg, dep.Config)
		}
		if err := channel.CheckConfig(cfg, c.Requirements); err != nil {
			t.Errorf("%s: CheckConfig(NewConfig) = %v", c.Name, err)
		}
	}
}

// mustPayments rebuilds the vector's deposit, voucher and refund payments
// and compares them with the official client's.
func mustPayments(tb testing.TB, c vectorCase, payer, signer *ecdsa.PrivateKey, cfg channel.Config, id common.Hash, dep channel.Payload) {
	tb.Helper()
	chainID := big.NewInt(c.ChainID)
	voucher := func(max *big.Int) channel.Voucher {
		sig, err := channel.SignVoucher(signer, id, max, chainID)
		if err != nil {
			tb.Fatal(err)
		}
		return channel.Voucher{ChannelID: id, MaxClaimableAmount: max, Signature: sig}
	}
	od := dep.Deposit
	d, err := channel.SignDeposit(payer, c.Requirements, cfg, od.Amount, time.Unix(od.ValidBefore.Int64(), 0), od.Salt)
	if err != nil {
		tb.Fatal(err)
	}
	if hexutil.Encode(d.Signature) != hexutil.Encode(od.Signature) {
		tb.Errorf("SignDeposit signature %x, want %x", d.Signature, od.Signature)
	}
	if err := channel.VerifyDeposit(d, cfg, c.Requirements, time.Unix(od.ValidBefore.Int64()-60, 0)); err != nil {
		tb.Errorf("VerifyDeposit(SignDeposit) = %v", err)
	}
	price := mustBig(tb, c.Requirements.Amount)
	mustBuild(tb, c, channel.Payload{Kind: channel.KindDeposit, Config: cfg, Voucher: voucher(price), Deposit: d}, c.Deposit.JSON)
	charged := mustBig(tb, c.Voucher.Charged)
	max := new(big.Int).Add(charged, price)
	mustBuild(tb, c, channel.Payload{Kind: channel.KindVoucher, Config: cfg, Voucher: voucher(max)}, c.Voucher.JSON)
	for i, r := range c.Refunds {
		p := channel.Payload{Kind: channel.KindRefund, Config: cfg, Voucher: voucher(charged)}
		if i == 1 {
			p.RefundAmount = price
		}
		mustBuild(tb, c, p, r.JSON)
	}
}

// TestChannelSignRefusesOutOfRange: no voucher over uint128 or below 0, no
// deposit of 0, and no deposit signed by another key than the payer's.
func TestChannelSignRefusesOutOfRange(t *testing.T) {
	c := mustVectors(t).Cases[0]
	dep := mustDecodePayment(t, c.Deposit.JSON)
	payer := mustAnvilKey(t, dep.Config.Payer.Hex())
	over := new(big.Int).Lsh(big.NewInt(1), 128)
	for _, max := range []*big.Int{over, big.NewInt(-1), nil} {
		if _, err := channel.SignVoucher(payer, common.HexToHash(c.ChannelID), max, big.NewInt(c.ChainID)); err == nil {
			t.Errorf("SignVoucher(%v) signed", max)
		}
	}
	for _, amount := range []*big.Int{big.NewInt(0), over} {
		if _, err := channel.SignDeposit(payer, c.Requirements, dep.Config, amount, time.Now(), common.Hash{}); err == nil {
			t.Errorf("SignDeposit(%v) signed", amount)
		}
	}
	other := mustAnvilKey(t, c.Requirements.PayTo)
	if _, err := channel.SignDeposit(other, c.Requirements, dep.Config, big.NewInt(1), time.Now(), common.Hash{}); err == nil {
		t.Error("SignDeposit signed with a key that is not the payer's")
	}
}
