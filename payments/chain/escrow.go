package chain

import (
	"context"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402/channel"
)

// VoucherClaim is one row of a claim: the channel, the payer's voucher,
// and the total the receiver claims.
type VoucherClaim struct {
	// Config is the channel's configuration.
	Config channel.Config
	// MaxClaimable is the voucher's running total.
	MaxClaimable *big.Int
	// Signature is the payer authorizer's voucher signature.
	Signature []byte
	// TotalClaimed is what the receiver will have claimed from the channel
	// in all; at or below what it already claimed, the row is a no-op.
	TotalClaimed *big.Int
}

// OpReceipt is a mined escrow transaction the seller sent (or, for
// DepositReceipt, one it was told of).
type OpReceipt struct {
	// Tx is the transaction's hash; set with an error too when a
	// transaction was sent.
	Tx string
	// GasUsed is the receipt's.
	GasUsed uint64
	// Amount is, for a deposit, what it deposited; for a sweep, what the
	// Settled event paid (0 when nothing was owed); for a refund, what the
	// Refunded event paid (0 when nothing was left); for a claim, the sum
	// of the Claimed events' claimAmount.
	Amount *big.Int
	// NewBalance is, for a deposit, the Deposited event's newBalance.
	NewBalance *big.Int
	// Claimed is, for a claim or a refund with claims, the newTotalClaimed
	// of each channel a Claimed event names (rows that were no-ops have
	// none).
	Claimed map[common.Hash]*big.Int
}

// SimulateDeposit simulates deposit d to cfg's channel with an eth_call of
// the escrow's deposit(cfg, amount, collector, collectorData) from the
// relayer (the zero address without a key). It returns nil when the
// deposit would succeed now; a *x402.RejectError when the escrow refuses
// it: an authorization already used (channel.ReasonDepositSimulationFailed,
// "this deposit authorization was already used"), the payer's balance short
// (channel.ReasonInsufficientBalance), the authorization expired, not yet
// valid or badly signed (channel.ReasonValidBefore, ReasonValidAfter,
// ReasonReceiveSignature), or anything else (ReasonDepositSimulationFailed,
// naming the escrow's error); a CodeUnavailable *sandboxd.Error when the
// chain cannot be reached.
func (s *Settler) SimulateDeposit(ctx context.Context, cfg channel.Config, d *channel.Deposit) error {
	ctx, cancel := context.WithTimeout(ctx, s.checkTimeout)
	defer cancel()
	id, err := channel.ID(cfg, s.chainID)
	if err != nil {
		return unencodable(opDeposit, err)
	}
	data, err := packDeposit(cfg, d)
	if err != nil {
		return unencodable(opDeposit, err)
	}
	cctx, ccancel := s.call(ctx)
	to := channel.Escrow
	_, err = s.backend.CallContract(cctx, ethereum.CallMsg{From: s.relayer, To: &to, Data: data}, nil)
	ccancel()
	switch {
	case err == nil:
		return nil
	case !isRevert(err):
		return s.unavailable("simulate the deposit (eth_call)", err)
	}
	return s.depositRefusal(ctx, cfg, id, d, err, channel.ReasonDepositSimulationFailed)
}

// Deposit sends deposit d to cfg's channel from the relayer and waits for
// it: deposit(cfg, amount, channel.Collector, channel.CollectorData(d)).
// Amount and NewBalance come from the receipt's Deposited event. Errors
// are as for Settle (see transact), with SimulateDeposit's refusals; a
// mined deposit without a Deposited event of this channel and amount is
// refused with channel.ReasonDepositTransactionFailed.
func (s *Settler) Deposit(ctx context.Context, cfg channel.Config, d *channel.Deposit) (OpReceipt, error) {
	id, err := channel.ID(cfg, s.chainID)
	if err != nil {
		return OpReceipt{}, unencodable(opDeposit, err)
	}
	data, err := packDeposit(cfg, d)
	if err != nil {
		return OpReceipt{}, unencodable(opDeposit, err)
	}
	log := s.log.With("op", opDeposit.name, "channel", id.Hex(), "payer", cfg.Payer.Hex(), "amount", d.Amount)
	r, receipt, err := s.transact(ctx, opDeposit, log, data, func(ctx context.Context, cause error) error {
		return s.depositRefusal(ctx, cfg, id, d, cause, channel.ReasonDepositSimulationFailed)
	})
	if err != nil {
		return r, err
	}
	return depositIn(r, receipt, id, d.Amount)
}

// Claim sends the escrow's claim(rows) from the relayer, which must be
// each row's receiver or receiver authorizer, and waits for it. Amount is
// the sum claimed, Claimed each channel's new total. Errors are as for
// Settle (see transact): a refusal names the escrow's error (as
// ClaimExceedsBalance) with channel.ReasonClaimSimulationFailed.
func (s *Settler) Claim(ctx context.Context, rows []VoucherClaim) (OpReceipt, error) {
	claims, err := toABIClaims(rows)
	if err != nil {
		return OpReceipt{}, unencodable(opClaim, err)
	}
	data, err := escrowABI.Pack("claim", claims)
	if err != nil {
		return OpReceipt{}, unencodable(opClaim, err)
	}
	return s.claim(ctx, data, len(rows))
}

// ClaimWithSignature is Claim by claimWithSignature(rows, sig): sig is the
// rows' one receiver authorizer's ClaimBatch signature (ClaimSignature),
// so the relayer may be anyone.
func (s *Settler) ClaimWithSignature(ctx context.Context, rows []VoucherClaim, sig []byte) (OpReceipt, error) {
	claims, err := toABIClaims(rows)
	if err != nil {
		return OpReceipt{}, unencodable(opClaim, err)
	}
	data, err := escrowABI.Pack("claimWithSignature", claims, sig)
	if err != nil {
		return OpReceipt{}, unencodable(opClaim, err)
	}
	return s.claim(ctx, data, len(rows))
}

// claim sends an encoded claim of n rows.
func (s *Settler) claim(ctx context.Context, data []byte, n int) (OpReceipt, error) {
	r, receipt, err := s.transact(ctx, opClaim, s.log.With("op", opClaim.name, "rows", n), data, opClaim.refusal)
	if err != nil {
		return r, err
	}
	r.Amount, r.Claimed = claimedIn(receipt)
	return r, nil
}

// Sweep sends the escrow's settle(receiver, token), which pays receiver
// what was claimed for it in token and not yet paid, and waits for it.
// Amount is what the Settled event paid: 0 when nothing was owed (the
// escrow then does nothing; ReceiverTotals tells beforehand). Errors are
// as for Settle (see transact).
func (s *Settler) Sweep(ctx context.Context, receiver, token common.Address) (OpReceipt, error) {
	data, err := escrowABI.Pack("settle", receiver, token)
	if err != nil {
		return OpReceipt{}, unencodable(opSweep, err)
	}
	log := s.log.With("op", opSweep.name, "receiver", receiver.Hex(), "token", token.Hex())
	r, receipt, err := s.transact(ctx, opSweep, log, data, opSweep.refusal)
	if err != nil {
		return r, err
	}
	r.Amount = settledIn(receipt, receiver, token)
	return r, nil
}

// Refund sends, from the relayer (cfg's receiver or receiver authorizer),
// the escrow's multicall of claim(claims), when there are claims, and
// refund(cfg, amount), in one transaction, and waits for it. The escrow
// refunds at most the channel's balance less what was claimed (after the
// claims); Amount is what the Refunded event paid, 0 when nothing was
// left; Claimed is as for Claim. Errors are as for Settle (see transact).
func (s *Settler) Refund(ctx context.Context, cfg channel.Config, amount *big.Int, claims []VoucherClaim) (OpReceipt, error) {
	var calls [][]byte
	if len(claims) > 0 {
		rows, err := toABIClaims(claims)
		if err != nil {
			return OpReceipt{}, unencodable(opRefund, err)
		}
		call, err := escrowABI.Pack("claim", rows)
		if err != nil {
			return OpReceipt{}, unencodable(opRefund, err)
		}
		calls = append(calls, call)
	}
	if err := checkAmounts(amount); err != nil {
		return OpReceipt{}, unencodable(opRefund, err)
	}
	call, err := escrowABI.Pack("refund", toABIConfig(cfg), amount)
	if err != nil {
		return OpReceipt{}, unencodable(opRefund, err)
	}
	return s.refund(ctx, cfg, append(calls, call), len(claims))
}

// RefundWithSignature is Refund by signatures, so the relayer may be
// anyone: the escrow's multicall of claimWithSignature(claims, claimSig),
// when there are claims, and refundWithSignature(cfg, amount, nonce, sig),
// sig being the receiver authorizer's Refund signature at the channel's
// refund nonce (RefundSignature).
func (s *Settler) RefundWithSignature(ctx context.Context, cfg channel.Config, amount, nonce *big.Int, sig []byte,
	claims []VoucherClaim, claimSig []byte) (OpReceipt, error) {
	var calls [][]byte
	if len(claims) > 0 {
		rows, err := toABIClaims(claims)
		if err != nil {
			return OpReceipt{}, unencodable(opRefund, err)
		}
		call, err := escrowABI.Pack("claimWithSignature", rows, claimSig)
		if err != nil {
			return OpReceipt{}, unencodable(opRefund, err)
		}
		calls = append(calls, call)
	}
	if err := checkAmounts(amount); err != nil || nonce == nil || nonce.Sign() < 0 {
		return OpReceipt{}, unencodable(opRefund, errAmount)
	}
	call, err := escrowABI.Pack("refundWithSignature", toABIConfig(cfg), amount, nonce, sig)
	if err != nil {
		return OpReceipt{}, unencodable(opRefund, err)
	}
	return s.refund(ctx, cfg, append(calls, call), len(claims))
}

// refund sends the escrow's multicall of calls, a refund of cfg's channel
// after n claim rows.
func (s *Settler) refund(ctx context.Context, cfg channel.Config, calls [][]byte, n int) (OpReceipt, error) {
	id, err := channel.ID(cfg, s.chainID)
	if err != nil {
		return OpReceipt{}, unencodable(opRefund, err)
	}
	data, err := escrowABI.Pack("multicall", calls)
	if err != nil {
		return OpReceipt{}, unencodable(opRefund, err)
	}
	log := s.log.With("op", opRefund.name, "channel", id.Hex(), "claim_rows", n)
	r, receipt, err := s.transact(ctx, opRefund, log, data, opRefund.refusal)
	if err != nil {
		return r, err
	}
	_, r.Claimed = claimedIn(receipt)
	r.Amount = refundedIn(receipt, id)
	return r, nil
}
