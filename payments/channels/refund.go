package channels

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/remote"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// ReasonRefundNoBalance: nothing is left to refund.
const ReasonRefundNoBalance = "invalid_batch_settlement_evm_refund_no_balance"

// refund is a checked refund request: a payment operation, never a run.
type refund struct{ *authorization }

var _ sandboxd.PaymentOperation = refund{}

// Reserve refuses: a refund buys no run (httpapi answers it by Operate).
func (r refund) Reserve(context.Context) (sandboxd.Charge, error) {
	return nil, sandboxd.Errorf(sandboxd.CodeInvalid, "channels.refund", "a refund buys no run: send it to GET /v1/channel")
}

// checkRefund checks a refund's zero-charge voucher: its running total
// must be the charged total (a corrective 402 says it otherwise), and no
// call may hold the channel.
func (s *Seller) checkRefund(r Request, a *authorization, row ledger.Channel) (sandboxd.Authorization, error) {
	const op = "channels.check"
	if !r.Operations {
		return nil, s.refuse(r, op, x402.Reject(channel.ReasonPayloadType, "a refund buys no run: send it to GET /v1/channel"))
	}
	if s.liveHold(row) != nil || row.State == ledger.ChannelRefunding {
		return nil, s.busy(r, op, "a call or a refund holds this channel")
	}
	if a.pl.Voucher.MaxClaimableAmount.Cmp(orZero(row.Charged)) != 0 {
		return nil, s.corrective(r, channel.ReasonCumulativeMismatch, row, x402.Reject(channel.ReasonCumulativeMismatch,
			"a refund's voucher must carry the charged total %s", orZero(row.Charged)))
	}
	return refund{a}, nil
}

// Operate refunds what the channel holds beyond what was charged (or the
// part asked for, capped there), claiming what was charged and not yet
// claimed in the same transaction, so a refund never takes money a charged
// voucher is owed. While it runs the channel takes no voucher.
func (r refund) Operate(ctx context.Context) (*sandboxd.Settlement, error) {
	const op = "channels.refund"
	s, a := r.seller, r.authorization
	row, err := s.refunds.BeginRefund(ctx, a.id)
	if errors.Is(err, ledger.ErrChannelMoved) {
		return nil, s.busy(a.req, op, "a call or a refund holds this channel")
	}
	if err != nil {
		return nil, err
	}
	charged := orZero(row.Charged)
	avail := new(big.Int).Sub(orZero(row.Balance), charged)
	amount := avail
	if want := a.pl.RefundAmount; want != nil && want.Cmp(avail) < 0 {
		amount = want
	}
	if amount.Sign() <= 0 {
		r.end(row, mirrorOf(row), false)
		return nil, s.refuse(a.req, op, x402.Reject(ReasonRefundNoBalance, "nothing is left to refund: the channel holds %s and %s was charged",
			orZero(row.Balance), charged))
	}
	var claims []chain.VoucherClaim
	if charged.Cmp(orZero(row.Claimed)) > 0 {
		claims = []chain.VoucherClaim{{Config: row.Config, MaxClaimable: row.VoucherMax, Signature: row.VoucherSig, TotalClaimed: charged}}
	}
	rcpt, err := s.refunder.Refund(context.WithoutCancel(ctx), RefundOrder{Config: row.Config, Voucher: a.pl.Voucher,
		Amount: amount, Nonce: orZero(row.RefundNonce), Claims: claims})
	s.observe(ledger.OpRefund, txOutcome(err), rcpt.GasUsed)
	if err != nil {
		return nil, r.failed(row, rcpt, err)
	}
	if len(claims) > 0 {
		_ = s.refunds.MarkClaimed(context.WithoutCancel(ctx), a.id, charged)
	}
	m := r.reread(ctx, row)
	closed := new(big.Int).Sub(orZero(m.Balance), charged).Sign() <= 0
	r.end(row, m, closed)
	if rcpt.Amount == nil {
		rcpt.Amount = amount
	}
	a.log.Info("channel refunded", "amount", rcpt.Amount, "tx", rcpt.Tx, "closed", closed)
	row.Balance, row.Claimed, row.RefundNonce = m.Balance, m.Claimed, m.RefundNonce
	cs, _ := s.channelState(row, false)
	extra, _ := json.Marshal(map[string]any{"channelState": cs})
	return &sandboxd.Settlement{Version: 2, Success: true, Transaction: rcpt.Tx, Network: s.network,
		Payer: a.pl.Config.Payer.Hex(), Amount: rcpt.Amount.String(), Extra: extra}, nil
}

// failed ends a refund that did not go through: refused or never sent,
// the channel is open again; of unknown outcome, it stays refunding until
// the mirror sees the escrow's refund nonce move (or the refund lapse).
func (r refund) failed(row ledger.Channel, rcpt chain.OpReceipt, err error) error {
	const op = "channels.refund"
	s, a := r.seller, r.authorization
	var rj *x402.RejectError
	if !errors.As(err, &rj) && !errors.Is(err, remote.ErrNotSent) {
		a.log.Warn("refund outcome unknown; the channel takes no voucher until the chain says", "tx", rcpt.Tx, "err", err)
		return &sandboxd.Error{Code: sandboxd.CodePending, Op: op, Err: err, Message: "the refund was sent but its outcome " +
			"is not known yet; do not ask again: the channel's state follows the chain"}
	}
	r.end(row, mirrorOf(row), false)
	a.log.Warn("refund failed", "reason", x402.RejectReason(err, ""), "tx", rcpt.Tx, "err", err)
	perr := a.req.Terms.Refuse(op, "the refund could not be made: "+failure(err), err)
	perr.Payment.Settlement = &sandboxd.Settlement{Version: 2, ErrorReason: x402.RejectReason(err, x402.ReasonUnexpectedSettle),
		Transaction: rcpt.Tx, Network: s.network, Payer: a.pl.Config.Payer.Hex()}
	return perr
}

// reread is the escrow's state of the channel after the refund, or row's
// own when the chain cannot be read (the mirror corrects it).
func (r refund) reread(ctx context.Context, row ledger.Channel) ledger.Mirror {
	states, err := r.seller.reader.ReadChannels(context.WithoutCancel(ctx), []common.Hash{common.HexToHash(row.ID)})
	if err != nil || len(states) != 1 {
		return mirrorOf(row)
	}
	st := states[0]
	return ledger.Mirror{Balance: st.Balance, Claimed: st.TotalClaimed, WithdrawAmount: orZero(st.WithdrawAmount),
		WithdrawAt: int64(st.WithdrawInitiatedAt), RefundNonce: orZero(st.RefundNonce)}
}

// end moves the row out of refunding.
func (r refund) end(row ledger.Channel, m ledger.Mirror, closed bool) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.seller.refunds.EndRefund(ctx, row.ID, m, closed); err != nil {
		r.log.Error("cannot end the refund in the ledger; the mirror reopens the channel", "err", err)
	}
}

// mirrorOf is row's mirrored escrow state.
func mirrorOf(row ledger.Channel) ledger.Mirror {
	return ledger.Mirror{Balance: orZero(row.Balance), Claimed: orZero(row.Claimed), WithdrawAmount: orZero(row.WithdrawAmount),
		WithdrawAt: row.WithdrawAt, RefundNonce: orZero(row.RefundNonce)}
}
