package channel

import (
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/x402"
)

// validBeforeMargin is how long a deposit's authorization must stay valid
// after it is checked, the official facilitator's margin.
const validBeforeMargin = 6

// CheckConfig requires c to be a channel the batch-settlement entry req
// allows, in the official facilitator's order: c pays req's payTo
// (ReasonReceiverMismatch), names req's receiver authorizer
// (ReasonReceiverAuthorizerMismatch), req's asset (ReasonTokenMismatch)
// and req's withdraw delay (ReasonWithdrawDelayMismatch), which ParseExtra
// holds within the escrow's range. A refusal is a *x402.RejectError; an
// entry whose extra does not parse is the seller's fault, a plain error.
func CheckConfig(c Config, req x402.Requirements) error {
	e, err := ParseExtra(req)
	if err != nil {
		return fmt.Errorf("channel: the batch-settlement terms do not parse: %w", err)
	}
	if !common.IsHexAddress(req.PayTo) || c.Receiver != common.HexToAddress(req.PayTo) {
		return x402.Reject(ReasonReceiverMismatch, "channelConfig.receiver %s is not the payee %s", c.Receiver.Hex(), req.PayTo)
	}
	if c.ReceiverAuthorizer != e.ReceiverAuthorizer {
		return x402.Reject(ReasonReceiverAuthorizerMismatch, "channelConfig.receiverAuthorizer %s is not the terms' %s",
			c.ReceiverAuthorizer.Hex(), e.ReceiverAuthorizer.Hex())
	}
	if !common.IsHexAddress(req.Asset) || c.Token != common.HexToAddress(req.Asset) {
		return x402.Reject(ReasonTokenMismatch, "channelConfig.token %s is not the asset %s", c.Token.Hex(), req.Asset)
	}
	if c.WithdrawDelay != e.WithdrawDelay {
		return x402.Reject(ReasonWithdrawDelayMismatch, "channelConfig.withdrawDelay %d is not the terms' %d (send extra.withdrawDelay as given, a number)",
			c.WithdrawDelay, e.WithdrawDelay)
	}
	return nil
}

// State is what a seller knows of a channel when a voucher arrives: its
// own charged total and its mirror of the escrow.
type State struct {
	// Charged is what the seller has charged on the channel in all (0 for
	// a new channel).
	Charged *big.Int
	// Balance is the escrow's gross balance (claims never lower it), plus
	// the amount of a deposit being checked with its voucher.
	Balance *big.Int
	// TotalClaimed is what the receiver has claimed on chain.
	TotalClaimed *big.Int
	// WithdrawAmount is the payer's pending withdrawal, nil or 0 when none.
	WithdrawAmount *big.Int
}

// VerifyVoucher checks a voucher paying amount (the entry's price; 0 for a
// refund's zero-charge voucher) on channel c against s: first its
// signature (CheckVoucherSignature, which also normalizes v.Signature),
// then its running total (CheckRunningTotal), so that a voucher not signed
// by the channel's authorizer learns nothing of the channel's state.
func VerifyVoucher(v *Voucher, c Config, chainID, amount *big.Int, s State) error {
	if err := CheckVoucherSignature(v, c, chainID); err != nil {
		return err
	}
	return CheckRunningTotal(v.MaxClaimableAmount, amount, s)
}

// CheckVoucherSignature requires v to be for channel c on chainID
// (ReasonChannelIDMismatch) and signed by c's payer authorizer, which must
// be an EOA (non-zero; ERC-1271 would need the chain), with a 65-byte
// signature of v 27/28 or 0/1 and low s (ReasonVoucherSignature). On
// success v.Signature holds the signature with v 27 or 28, the form the
// escrow's claim verifies.
func CheckVoucherSignature(v *Voucher, c Config, chainID *big.Int) error {
	id, err := ID(c, chainID)
	if err != nil {
		return err
	}
	if v.ChannelID != id {
		return x402.Reject(ReasonChannelIDMismatch, "voucher.channelId %s is not the id of channelConfig on chain %s (%s)",
			v.ChannelID.Hex(), chainID, id.Hex())
	}
	if c.PayerAuthorizer == (common.Address{}) {
		return x402.Reject(ReasonVoucherSignature, "channelConfig.payerAuthorizer is zero (a smart-wallet payer); "+
			"this service needs an EOA authorizer that signs the vouchers")
	}
	digest, err := VoucherDigest(id, v.MaxClaimableAmount, chainID)
	if err != nil {
		return &x402.RejectError{Reason: ReasonVoucherSignature, Check: "voucher cannot be hashed", Err: err}
	}
	norm, err := checkSigner(ReasonVoucherSignature, "voucher", digest, v.Signature, c.PayerAuthorizer,
		"channelConfig.payerAuthorizer", "another channel, amount or chain")
	if err != nil {
		return err
	}
	v.Signature = norm
	return nil
}

// checkSigner requires sig to be a well-formed signature over digest by
// want (named wantName), and returns it with v 27 or 28; a refusal has
// reason and names what was signed and what else it may have been over.
func checkSigner(reason, what string, digest common.Hash, sig []byte, want common.Address, wantName, over string) ([]byte, error) {
	signer, norm, err := x402.RecoverSigner(digest, sig)
	if err != nil {
		return nil, &x402.RejectError{Reason: reason, Check: what + " signature is malformed", Err: err}
	}
	if signer != want {
		return nil, x402.Reject(reason, "%s signature does not recover to %s %s: it was signed by another key or over %s",
			what, wantName, want.Hex(), over)
	}
	return norm, nil
}

// CheckRunningTotal requires a voucher's running total max to be what a
// payment of amount owes given s, in this order: above what was claimed on
// chain (ReasonBelowClaimed, for a paid voucher), exactly s.Charged +
// amount, never more as prepayment nor less (ReasonCumulativeMismatch),
// and within the spendable balance, balance less a pending withdrawal
// (ReasonExceedsBalance). The balance is gross, as the escrow keeps it:
// claims never lower it, so what was claimed is not subtracted, and
// bounding by balance - withdrawal keeps every charged voucher claimable
// even if the withdrawal is finalized first.
func CheckRunningTotal(max, amount *big.Int, s State) error {
	claimed := orZero(s.TotalClaimed)
	if amount.Sign() > 0 && max.Cmp(claimed) <= 0 {
		return x402.Reject(ReasonBelowClaimed, "voucher.maxClaimableAmount %s is not above what was already claimed on chain (%s)", max, claimed)
	}
	want := new(big.Int).Add(orZero(s.Charged), amount)
	if max.Cmp(want) != 0 {
		return x402.Reject(ReasonCumulativeMismatch, "voucher.maxClaimableAmount %s is not the charged total %s plus the price %s (%s)",
			max, orZero(s.Charged), amount, want)
	}
	spendable := new(big.Int).Sub(orZero(s.Balance), orZero(s.WithdrawAmount))
	if max.Cmp(spendable) > 0 {
		return x402.Reject(ReasonExceedsBalance, "voucher.maxClaimableAmount %s is above what the channel holds (%s, less any pending withdrawal); deposit more",
			max, spendable)
	}
	return nil
}

// VerifyDeposit checks deposit d to channel c under the entry req at now,
// in the official facilitator's order: the token's EIP-712 domain is known
// (ReasonMissingDomain), the authorization is valid for at least 6 s more
// (ReasonValidBefore) and already valid (ReasonValidAfter), and it is the
// payer's ReceiveWithAuthorization of d's amount to Collector with the
// channel's deposit nonce (ReasonReceiveSignature). c must have passed
// CheckConfig. On success d.Signature holds the signature with v 27 or 28.
// The deposit's voucher is checked apart, with the deposit in the balance.
func VerifyDeposit(d *Deposit, c Config, req x402.Requirements, now time.Time) error {
	if req.Extra.Name == "" || req.Extra.Version == "" {
		return x402.Reject(ReasonMissingDomain, "the asset's EIP-712 domain name and version are not configured")
	}
	unix := big.NewInt(now.Unix())
	if d.ValidBefore.Cmp(new(big.Int).Add(unix, big.NewInt(validBeforeMargin))) < 0 {
		return x402.Reject(ReasonValidBefore, "deposit authorization expires too soon (validBefore %s; it must be at least %d s after now, %s)",
			d.ValidBefore, validBeforeMargin, unix)
	}
	if d.ValidAfter.Cmp(unix) > 0 {
		return x402.Reject(ReasonValidAfter, "deposit authorization is not valid yet (validAfter %s is after now, %s)", d.ValidAfter, unix)
	}
	chainID, err := x402.ChainID(req.Network)
	if err != nil {
		return fmt.Errorf("channel: %w", err)
	}
	id, err := ID(c, chainID)
	if err != nil {
		return err
	}
	digest, err := ReceiveDigest(req, d, c.Payer, id)
	if err != nil {
		return &x402.RejectError{Reason: ReasonReceiveSignature, Check: "deposit authorization cannot be hashed", Err: err}
	}
	norm, err := checkSigner(ReasonReceiveSignature, "deposit", digest, d.Signature, c.Payer, "channelConfig.payer",
		fmt.Sprintf("another amount, channel or token domain (check the asset's EIP-712 name %q and version %q)", req.Extra.Name, req.Extra.Version))
	if err != nil {
		return err
	}
	d.Signature = norm
	return nil
}

// orZero is n, or 0 for nil.
func orZero(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return n
}
