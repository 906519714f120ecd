package channel

import (
	"encoding/json"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/x402"
)

// Scheme is the x402 scheme name of channels.
const Scheme = x402.SchemeBatchSettlement

// The contracts every chain has at the same (CREATE2) address.
var (
	// Escrow is the x402BatchSettlement escrow, the verifying contract of
	// the channel id, voucher, refund and claim-batch signatures.
	Escrow = common.HexToAddress("0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003")
	// Collector is the ERC-3009 deposit collector, the payee of a
	// deposit's ReceiveWithAuthorization.
	Collector = common.HexToAddress("0x4020806089470a89826cB9fB1f4059150b550004")
)

// The range of a channel's withdraw delay in seconds, the escrow's bounds.
const (
	// MinWithdrawDelay is 15 minutes.
	MinWithdrawDelay = 900
	// MaxWithdrawDelay is 30 days.
	MaxWithdrawDelay = 2592000
)

// Kind is a payload's type, the "type" member of the payload.
type Kind string

// The payload kinds a payer sends. The seller-authored kinds ("claim",
// "settle") are refused from a payer.
const (
	// KindDeposit funds the channel (an ERC-3009 authorization) and pays
	// with its first voucher.
	KindDeposit Kind = "deposit"
	// KindVoucher pays with a voucher raising the running total.
	KindVoucher Kind = "voucher"
	// KindRefund asks for what is left of the deposit, with a zero-charge
	// voucher.
	KindRefund Kind = "refund"
)

// Config is a channel's immutable configuration; its EIP-712 hash is the
// channel id (see ID).
type Config struct {
	// Payer funds the channel.
	Payer common.Address
	// PayerAuthorizer signs the vouchers; zero means ERC-1271 against
	// Payer, which this package refuses (it needs the chain).
	PayerAuthorizer common.Address
	// Receiver is paid the claimed vouchers: the terms' payTo.
	Receiver common.Address
	// ReceiverAuthorizer signs claims and refunds for the receiver.
	ReceiverAuthorizer common.Address
	// Token is the asset.
	Token common.Address
	// WithdrawDelay is how long, in seconds, a payer's withdrawal waits
	// (a uint40 on chain).
	WithdrawDelay uint64
	// Salt tells apart channels that share everything else.
	Salt common.Hash
}

// configJSON is Config on the wire.
type configJSON struct {
	Payer              string `json:"payer"`
	PayerAuthorizer    string `json:"payerAuthorizer"`
	Receiver           string `json:"receiver"`
	ReceiverAuthorizer string `json:"receiverAuthorizer"`
	Token              string `json:"token"`
	WithdrawDelay      uint64 `json:"withdrawDelay"`
	Salt               string `json:"salt"`
}

// MarshalJSON encodes c as the official client does: EIP-55 addresses,
// withdrawDelay a number, salt lower-case hex.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(configJSON{
		Payer: c.Payer.Hex(), PayerAuthorizer: c.PayerAuthorizer.Hex(), Receiver: c.Receiver.Hex(),
		ReceiverAuthorizer: c.ReceiverAuthorizer.Hex(), Token: c.Token.Hex(), WithdrawDelay: c.WithdrawDelay,
		Salt: c.Salt.Hex(),
	})
}

// Voucher is a payer's signed promise that the receiver may claim up to
// MaxClaimableAmount from the channel, in all.
type Voucher struct {
	// ChannelID is the id of the channel, as the payer sent it.
	ChannelID common.Hash
	// MaxClaimableAmount is the running total, a uint128.
	MaxClaimableAmount *big.Int
	// Signature is the payer authorizer's 65-byte signature as sent.
	Signature []byte
}

// MarshalJSON encodes v as the official client does.
func (v Voucher) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{
		"channelId": v.ChannelID.Hex(), "maxClaimableAmount": v.MaxClaimableAmount.String(),
		"signature": hexutil.Encode(v.Signature),
	})
}

// Deposit is a deposit's amount and its ERC-3009 ReceiveWithAuthorization
// from the payer to Collector, whose nonce is DepositNonce(channel id,
// Salt).
type Deposit struct {
	// Amount is what the deposit adds to the channel, a uint128.
	Amount *big.Int
	// ValidAfter and ValidBefore bound the authorization (Unix seconds).
	ValidAfter, ValidBefore *big.Int
	// Salt is the authorization's own random salt (a uint256 sent as 32
	// bytes of hex), not the config's.
	Salt common.Hash
	// Signature is the payer's 65-byte signature as sent.
	Signature []byte
}

// Payload is a decoded batch-settlement payload (PaymentPayload.payload).
type Payload struct {
	// Kind is the payload's type.
	Kind Kind
	// Config is the channel the payload is for.
	Config Config
	// Voucher is the payment (for a refund, the zero-charge voucher).
	Voucher Voucher
	// Deposit is set for KindDeposit only.
	Deposit *Deposit
	// RefundAmount is, for KindRefund, the part asked for; nil asks for
	// all that is left.
	RefundAmount *big.Int
}

// MarshalJSON encodes p as the official client does, from its parsed
// values (EIP-55 addresses, canonical decimals, lower-case hex): what a
// facilitator is sent, never the payer's spelling.
func (p Payload) MarshalJSON() ([]byte, error) {
	out := struct {
		Type          Kind            `json:"type"`
		ChannelConfig Config          `json:"channelConfig"`
		Voucher       Voucher         `json:"voucher"`
		Deposit       json.RawMessage `json:"deposit,omitempty"`
		Amount        string          `json:"amount,omitempty"`
	}{Type: p.Kind, ChannelConfig: p.Config, Voucher: p.Voucher}
	if p.Deposit != nil {
		d := p.Deposit
		var w depositJSON
		w.Amount = d.Amount.String()
		w.Authorization.ERC3009 = erc3009JSON{ValidAfter: d.ValidAfter.String(), ValidBefore: d.ValidBefore.String(),
			Salt: d.Salt.Hex(), Signature: hexutil.Encode(d.Signature)}
		b, err := json.Marshal(w)
		if err != nil {
			return nil, err
		}
		out.Deposit = b
	}
	if p.RefundAmount != nil {
		out.Amount = p.RefundAmount.String()
	}
	return json.Marshal(out)
}

// depositJSON is a deposit on the wire, its members in the official
// client's order, so that a payload this package builds is the official
// client's byte for byte.
type depositJSON struct {
	Amount        string `json:"amount"`
	Authorization struct {
		ERC3009 erc3009JSON `json:"erc3009Authorization"`
	} `json:"authorization"`
}

// erc3009JSON is a deposit's ERC-3009 authorization on the wire.
type erc3009JSON struct {
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Salt        string `json:"salt"`
	Signature   string `json:"signature"`
}
