package channels

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Request is one channel payment to check.
type Request struct {
	// Payment is the decoded payment (Raw holds its payload); Check sets
	// its Requirements to Entry.
	Payment *x402.Payment
	// Entry is the batch-settlement entry quoted for the call.
	Entry x402.Requirements
	// Resource is the call's resource URL, recorded with each charge.
	Resource string
	// Terms answers refusals.
	Terms Terms
	// Operations is set on the route that answers refunds.
	Operations bool
	// Answer is what the request keeps with its answer when the seller
	// keeps answers (Options.Keeping).
	Answer answer.Spec
	// ReplayOnly asks only for a stored answer (sandboxd.PaymentRequest):
	// Check returns a Replay or (nil, nil), never reading the chain.
	ReplayOnly bool
}

// Check checks a channel payment in the design's order (§5): its payload,
// the entry it accepted, its config against the terms, the voucher's
// signature (before anything of the channel is disclosed), the channel's
// row, its state, the running total, the mirror's age; a deposit also its
// authorization and, under the gate's check slots, the collector's check.
// It holds nothing. Refusals are CodePayment with the terms, corrective
// ones with the channel's state; a ledger or chain outage is
// CodeUnavailable.
func (s *Seller) Check(ctx context.Context, r Request) (sandboxd.Authorization, error) {
	const op = "channels.check"
	pl, err := channel.Decode(r.Payment.Raw)
	if err != nil {
		var rj *x402.RejectError
		if errors.As(err, &rj) {
			return nil, s.refuse(r, op, err)
		}
		return nil, sandboxd.Wrap(sandboxd.CodeInvalid, op, err, fmt.Sprintf(
			"the batch-settlement payload does not decode: %v", err))
	}
	if err := acceptedEntry(r.Payment.Accepted, r.Entry); err != nil {
		return nil, s.refuse(r, op, err)
	}
	r.Payment.Requirements = r.Entry
	if err := channel.CheckConfig(pl.Config, r.Entry); err != nil {
		return nil, s.refuse(r, op, err)
	}
	if err := channel.CheckVoucherSignature(&pl.Voucher, pl.Config, s.chainID); err != nil {
		return nil, s.refuse(r, op, err)
	}
	a := &authorization{seller: s, req: r, pl: &pl, id: strings.ToLower(pl.Voucher.ChannelID.Hex())}
	a.amount, _ = new(big.Int).SetString(r.Entry.Amount, 10)
	a.log = s.log.With("channel", a.id[:10], "payer", a.Payer(), "kind", string(pl.Kind))
	if pl.Kind == channel.KindRefund && !r.Operations {
		return nil, s.refuse(r, op, x402.Reject(channel.ReasonPayloadType,
			"a refund buys no run: send it to GET /v1/channel"))
	}
	if r.ReplayOnly {
		return s.replayOnly(ctx, a)
	}
	row, err := s.row(ctx, a)
	if err != nil {
		return nil, err
	}
	if pl.Kind == channel.KindRefund {
		return s.checkRefund(r, a, row)
	}
	if rep, err := s.lookup(ctx, a, row); rep != nil || err != nil {
		return rep, err
	}
	if err := s.checkTotal(r, a, row); err != nil {
		return nil, err
	}
	if pl.Kind == channel.KindVoucher {
		if age := s.now().Sub(row.SyncedAt); age > s.cfg.MirrorMaxAge() {
			return nil, sandboxd.Errorf(sandboxd.CodeUnavailable, op,
				"this channel's escrow state was last read %s ago, longer than the %s allowed (the chain cannot be read); "+
					"nothing was charged, try again later", age.Round(1e9), s.cfg.MirrorMaxAge())
		}
		return a, nil
	}
	if err := s.checkDeposit(ctx, r, a); err != nil {
		return nil, err
	}
	return a, nil
}

// acceptedEntry requires the entry the payer accepted to be ours, but for
// the corrective state a corrective 402 added to its extra.
func acceptedEntry(got *x402.Requirements, want x402.Requirements) error {
	mismatch := x402.Reject(x402.ReasonRequirementsMismatch,
		"the accepted terms are not this call's batch-settlement terms (another price, payee, asset or channel terms); "+
			"pay with the entry of this call's 402")
	if got == nil || got.Scheme != want.Scheme || x402.CanonicalNetwork(got.Network) != want.Network || got.Amount != want.Amount ||
		!strings.EqualFold(got.Asset, want.Asset) || !strings.EqualFold(got.PayTo, want.PayTo) ||
		got.MaxTimeoutSeconds != want.MaxTimeoutSeconds {
		return mismatch
	}
	ge, err := channel.ParseExtra(*got)
	if err != nil {
		return mismatch
	}
	we, _ := channel.ParseExtra(want)
	if ge.Name != we.Name || ge.Version != we.Version || ge.ReceiverAuthorizer != we.ReceiverAuthorizer ||
		ge.WithdrawDelay != we.WithdrawDelay {
		return mismatch
	}
	return nil
}

// row returns the channel's row: the ledger's, or for a voucher on a
// channel the ledger does not know (a lost ledger, another seller's
// deposit to our receiver) one adopted from the chain under a check slot,
// or for a deposit on a new channel a row of zeros (created at Reserve).
func (s *Seller) row(ctx context.Context, a *authorization) (ledger.Channel, error) {
	row, err := s.store.Channel(ctx, a.id)
	if err == nil {
		return row, nil
	}
	if !errors.Is(err, ledger.ErrNoChannel) {
		return row, err
	}
	fresh := ledger.Channel{ID: a.id, Network: s.network, Config: a.pl.Config, State: ledger.ChannelOpen,
		Charged: new(big.Int), VoucherMax: new(big.Int), Balance: new(big.Int), Claimed: new(big.Int),
		WithdrawAmount: new(big.Int), RefundNonce: new(big.Int)}
	if a.pl.Kind == channel.KindDeposit {
		return fresh, nil
	}
	release, err := s.admit(ctx)
	if err != nil {
		return row, err
	}
	states, err := s.reader.ReadChannels(ctx, []common.Hash{a.pl.Voucher.ChannelID})
	release()
	if err != nil {
		return row, err
	}
	st := states[0]
	if st.Balance.Sign() == 0 {
		return row, s.refuse(a.req, "channels.check", x402.Reject(channel.ReasonExceedsBalance,
			"this channel holds no deposit; send a deposit payload first"))
	}
	fresh.Balance, fresh.Claimed, fresh.Charged = st.Balance, st.TotalClaimed, st.TotalClaimed
	fresh.WithdrawAmount, fresh.WithdrawAt, fresh.RefundNonce = st.WithdrawAmount, int64(st.WithdrawInitiatedAt), st.RefundNonce
	fresh.SyncedAt = s.now()
	a.log.Info("channel adopted from the chain", "balance", st.Balance, "claimed", st.TotalClaimed)
	return s.store.AdoptChannel(ctx, fresh)
}

// checkTotal checks the channel's state and the voucher's running total
// against row: a total built on a concurrent call's hold (the projected
// total of its corrective 402) passes, Reserve waits for that hold.
func (s *Seller) checkTotal(r Request, a *authorization, row ledger.Channel) error {
	const op = "channels.check"
	switch row.State {
	case ledger.ChannelRefunding:
		return s.busy(r, op, "a refund of this channel is under way")
	case ledger.ChannelClosed:
		if a.pl.Kind != channel.KindDeposit {
			return s.refuse(r, op, x402.Reject(channel.ReasonExceedsBalance,
				"this channel was refunded and is closed; deposit again to reopen it"))
		}
	}
	st := channel.State{Charged: row.Charged, Balance: new(big.Int).Set(orZero(row.Balance)), TotalClaimed: row.Claimed,
		WithdrawAmount: row.WithdrawAmount}
	if a.pl.Kind == channel.KindDeposit {
		st.Balance.Add(st.Balance, a.pl.Deposit.Amount)
	}
	if h := s.liveHold(row); h != nil {
		projected := new(big.Int).Add(row.Charged, h.Amount)
		if new(big.Int).Add(projected, a.amount).Cmp(a.pl.Voucher.MaxClaimableAmount) == 0 {
			st.Charged = projected
		}
	}
	err := channel.CheckRunningTotal(a.pl.Voucher.MaxClaimableAmount, a.amount, st)
	if err == nil {
		a.expected = new(big.Int).Sub(a.pl.Voucher.MaxClaimableAmount, a.amount)
		return nil
	}
	switch x402.RejectReason(err, "") {
	case channel.ReasonCumulativeMismatch, channel.ReasonBelowClaimed:
		a.log.Info("voucher refused, corrective 402", "reason", x402.RejectReason(err, ""), "err", err)
		return s.corrective(r, x402.RejectReason(err, ""), row, err)
	}
	return s.refuse(r, op, err)
}

// liveHold is row's hold when a request still holds it, else nil.
func (s *Seller) liveHold(row ledger.Channel) *ledger.Hold {
	if row.Hold == nil || row.Hold.ID == "" || !row.Hold.Until.After(s.now()) {
		return nil
	}
	return row.Hold
}

// refuse is the CodePayment refusal of err, with the terms.
func (s *Seller) refuse(r Request, op string, err error) error {
	var rj *x402.RejectError
	if errors.As(err, &rj) {
		s.observe(OpVoucher, OutcomeRefused, 0)
		return r.Terms.Refuse(op, "payment refused: "+rj.Check+" ("+rj.Reason+")", err)
	}
	var se *sandboxd.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "the channel payment could not be checked; try again later")
}

// orZero is n, or 0 for nil.
func orZero(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return n
}
