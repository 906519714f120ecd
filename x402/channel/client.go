package channel

import (
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"sandboxd/x402"
)

// SignVoucher signs, with the payer authorizer's key, a voucher of
// maxClaimable on channel id on chainID: the 65-byte signature r || s || v
// with v 27 or 28. Signatures are deterministic (RFC 6979), so the same key
// signs the same bytes as the official client.
func SignVoucher(key *ecdsa.PrivateKey, id common.Hash, maxClaimable, chainID *big.Int) ([]byte, error) {
	if maxClaimable == nil || maxClaimable.Sign() < 0 || maxClaimable.Cmp(maxUint128) > 0 {
		return nil, fmt.Errorf("channel: a voucher of %v is not a uint128", maxClaimable)
	}
	digest, err := VoucherDigest(id, maxClaimable, chainID)
	if err != nil {
		return nil, err
	}
	return sign(key, digest)
}

// NewConfig returns the channel a payer holding key opens under the
// batch-settlement entry (extra is ParseExtra's of it), as the official
// client builds it: the payer and its voucher signer (payerAuthorizer) are
// the key's address, the receiver is payTo, the token the asset, the
// receiver authorizer and withdraw delay the terms'. A config whose payTo
// or asset is not an address fails CheckConfig.
func NewConfig(key *ecdsa.PrivateKey, entry x402.Requirements, extra Extra, salt common.Hash) Config {
	payer := crypto.PubkeyToAddress(key.PublicKey)
	return Config{
		Payer: payer, PayerAuthorizer: payer, Receiver: common.HexToAddress(entry.PayTo),
		ReceiverAuthorizer: extra.ReceiverAuthorizer, Token: common.HexToAddress(entry.Asset),
		WithdrawDelay: extra.WithdrawDelay, Salt: salt,
	}
}

// SignDeposit signs a deposit of amount into channel cfg under the
// batch-settlement entry req: the payer's ERC-3009 ReceiveWithAuthorization
// of amount to Collector under the asset's EIP-712 domain, valid from 0
// until validBefore, nonce DepositNonce(channel id, authSalt). key must be
// cfg.Payer's; authSalt must be random (it makes the authorization
// single-use).
func SignDeposit(key *ecdsa.PrivateKey, req x402.Requirements, cfg Config, amount *big.Int, validBefore time.Time, authSalt common.Hash) (*Deposit, error) {
	if crypto.PubkeyToAddress(key.PublicKey) != cfg.Payer {
		return nil, errors.New("channel: the key signing a deposit is not the channel's payer")
	}
	if amount == nil || amount.Sign() <= 0 || amount.Cmp(maxUint128) > 0 {
		return nil, fmt.Errorf("channel: a deposit of %v is not a positive uint128", amount)
	}
	chainID, err := x402.ChainID(req.Network)
	if err != nil {
		return nil, fmt.Errorf("channel: %w", err)
	}
	id, err := ID(cfg, chainID)
	if err != nil {
		return nil, err
	}
	d := &Deposit{Amount: new(big.Int).Set(amount), ValidAfter: new(big.Int), ValidBefore: big.NewInt(validBefore.Unix()), Salt: authSalt}
	digest, err := ReceiveDigest(req, d, cfg.Payer, id)
	if err != nil {
		return nil, fmt.Errorf("channel: hashing the deposit: %w", err)
	}
	if d.Signature, err = sign(key, digest); err != nil {
		return nil, err
	}
	return d, nil
}

// PaymentPayload is a v2 payment whose payload is a channel's, its members
// in the order the official client sends them.
type PaymentPayload struct {
	// X402Version is 2.
	X402Version int `json:"x402Version"`
	// Payload is the channel's deposit, voucher or refund.
	Payload Payload `json:"payload"`
	// Extensions is empty, as the official client sends it.
	Extensions map[string]json.RawMessage `json:"extensions"`
	// Resource echoes the terms' resource.
	Resource *x402.Resource `json:"resource,omitempty"`
	// Accepted echoes the batch-settlement entry paid, as quoted.
	Accepted x402.Requirements `json:"accepted"`
}

// BuildPayload returns the v2 payment of p for the batch-settlement entry
// accepted of terms whose resource is resource, what goes base64-encoded
// into PAYMENT-SIGNATURE: the official client's, member for member.
func BuildPayload(resource *x402.Resource, accepted x402.Requirements, p Payload) PaymentPayload {
	return PaymentPayload{X402Version: 2, Payload: p, Extensions: map[string]json.RawMessage{}, Resource: resource, Accepted: accepted}
}

// sign signs digest with key: r || s || v with v 27 or 28, the form
// wallets produce and the escrow and tokens verify.
func sign(key *ecdsa.PrivateKey, digest common.Hash) ([]byte, error) {
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		return nil, fmt.Errorf("channel: signing: %w", err)
	}
	sig[64] += 27
	return sig, nil
}

// ParseCorrective reads what Corrective puts into a batch-settlement
// entry: its channelState and its voucherState, each nil when absent (a
// seller that charged nothing yet has no voucher to show).
func ParseCorrective(entry x402.Requirements) (*ChannelState, *VoucherState, error) {
	var cs *ChannelState
	if raw, ok := entry.Extra.Member(memberChannelState); ok {
		cs = &ChannelState{}
		if err := json.Unmarshal(raw, cs); err != nil {
			return nil, nil, fmt.Errorf("extra.%s does not decode: %w", memberChannelState, err)
		}
	}
	var vs *VoucherState
	if raw, ok := entry.Extra.Member(memberVoucherState); ok {
		vs = &VoucherState{}
		if err := json.Unmarshal(raw, vs); err != nil {
			return nil, nil, fmt.Errorf("extra.%s does not decode: %w", memberVoucherState, err)
		}
	}
	return cs, vs, nil
}

// ParseAmount parses an amount of the channel wire as Decode does: a
// canonical decimal string ("0" or digits without a leading zero) of a
// uint128; field names it in the error.
func ParseAmount(field, s string) (*big.Int, error) {
	return parseAmount(field, s, maxUint128)
}
