package payments

import (
	"context"
	"crypto/ecdsa"
	"math/big"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/payments/chain"
	"sandboxd/payments/channels"
	"sandboxd/x402/channel"
)

// chainRefunder refunds with the relayer, the channels' receiver
// authorizer (settlement: onchain): one multicall of the claim and the
// refund.
type chainRefunder struct{ s *chain.Settler }

var _ channels.Refunder = chainRefunder{}

// Refund sends the claim and the refund.
func (r chainRefunder) Refund(ctx context.Context, o channels.RefundOrder) (chain.OpReceipt, error) {
	return r.s.Refund(ctx, o.Config, o.Amount, o.Claims)
}

// facilitatorRefunder refunds through the facilitator's /settle with the
// refund payload the official seller sends (its claims and refund signed
// with the operator's authorizer key when it holds one, else by the
// facilitator, whose authorizer the channels then name).
type facilitatorRefunder struct {
	c facilitatorClaimer
}

var _ channels.Refunder = facilitatorRefunder{}

// Refund asks /settle for the claim and the refund in one transaction.
func (r facilitatorRefunder) Refund(ctx context.Context, o channels.RefundOrder) (chain.OpReceipt, error) {
	cfg, amount, nonce, claims := o.Config, o.Amount, o.Nonce, o.Claims
	id, err := channel.ID(cfg, r.c.chainID)
	if err != nil {
		return chain.OpReceipt{}, err
	}
	rows := make([]claimRow, len(claims))
	for i, c := range claims {
		rows[i].Voucher.Channel, rows[i].Voucher.MaxClaimableAmount = c.Config, c.MaxClaimable.String()
		rows[i].Signature, rows[i].TotalClaimed = hexutil.Encode(c.Signature), c.TotalClaimed.String()
	}
	payload := map[string]any{"type": "refund", "channelConfig": cfg, "voucher": o.Voucher, "amount": amount.String(),
		"refundNonce": nonce.String(), "claims": rows}
	if key := r.c.key; key != nil {
		if err := signRefund(payload, key, id, nonce, amount, claims, r.c.chainID); err != nil {
			return chain.OpReceipt{}, err
		}
	}
	tx, err := r.c.f.settle(ctx, operation{X402Version: 2, Accepted: r.c.terms(), Payload: payload}, r.c.terms())
	rcpt := chain.OpReceipt{Tx: tx}
	if err == nil {
		rcpt.Amount = amount
	}
	return rcpt, err
}

// signRefund adds the operator's authorizer signatures to a refund payload.
func signRefund(payload map[string]any, key *ecdsa.PrivateKey, id [32]byte, nonce, amount *big.Int, claims []chain.VoucherClaim, chainID *big.Int) error {
	sig, err := chain.RefundSignature(key, id, nonce, amount, chainID)
	if err != nil {
		return err
	}
	payload["refundAuthorizerSignature"] = hexutil.Encode(sig)
	if len(claims) > 0 {
		if sig, err = chain.ClaimSignature(key, claims, chainID); err != nil {
			return err
		}
		payload["claimAuthorizerSignature"] = hexutil.Encode(sig)
	}
	return nil
}
