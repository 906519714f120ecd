package payments

import (
	"context"
	"crypto/ecdsa"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// facilitatorClaimer claims and sweeps through a facilitator's /settle
// (settlement: facilitator): claims signed with the operator's authorizer
// key when it holds one (payments.channels.authorizer_key_file), else
// left for the facilitator, whose authorizer the channels name, to sign.
type facilitatorClaimer struct {
	f       *facilitatorSettler
	network string
	asset   common.Address
	payTo   common.Address
	key     *ecdsa.PrivateKey
	chainID *big.Int
}

var _ channels.Claimer = facilitatorClaimer{}

// claimRow is one row of a claim payload, as the official seller sends it.
type claimRow struct {
	Voucher struct {
		Channel            channel.Config `json:"channel"`
		MaxClaimableAmount string         `json:"maxClaimableAmount"`
	} `json:"voucher"`
	Signature    string `json:"signature"`
	TotalClaimed string `json:"totalClaimed"`
}

// operation is a seller-authored payment payload (claim, settle) for the
// facilitator's /settle.
type operation struct {
	X402Version int               `json:"x402Version"`
	Accepted    x402.Requirements `json:"accepted"`
	Payload     any               `json:"payload"`
}

// terms are the minimal requirements of an operation, as the official
// channel manager sends them.
func (c facilitatorClaimer) terms() x402.Requirements {
	return x402.Requirements{Scheme: channel.Scheme, Network: c.network, Asset: c.asset.Hex(), Amount: "0", PayTo: c.payTo.Hex()}
}

// Claim sends the rows as one claim.
func (c facilitatorClaimer) Claim(ctx context.Context, rows []chain.VoucherClaim) (chain.OpReceipt, error) {
	out := make([]claimRow, len(rows))
	for i, r := range rows {
		out[i].Voucher.Channel, out[i].Voucher.MaxClaimableAmount = r.Config, r.MaxClaimable.String()
		out[i].Signature, out[i].TotalClaimed = hexutil.Encode(r.Signature), r.TotalClaimed.String()
	}
	payload := map[string]any{"type": "claim", "claims": out}
	if c.key != nil {
		sig, err := chain.ClaimSignature(c.key, rows, c.chainID)
		if err != nil {
			return chain.OpReceipt{}, err
		}
		payload["claimAuthorizerSignature"] = hexutil.Encode(sig)
	}
	tx, err := c.f.settle(ctx, operation{X402Version: 2, Accepted: c.terms(), Payload: payload}, c.terms())
	return chain.OpReceipt{Tx: tx}, err
}

// Sweep sends settle(receiver, token).
func (c facilitatorClaimer) Sweep(ctx context.Context, receiver, token common.Address) (chain.OpReceipt, error) {
	payload := map[string]any{"type": "settle", "receiver": receiver.Hex(), "token": token.Hex()}
	tx, err := c.f.settle(ctx, operation{X402Version: 2, Accepted: c.terms(), Payload: payload}, c.terms())
	return chain.OpReceipt{Tx: tx}, err
}
