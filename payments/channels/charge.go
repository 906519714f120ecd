package channels

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/ledger"
	"sandboxd/x402/channel"
)

// charge is one reserved increment (and the deposit collected with it),
// committed or released exactly once.
type charge struct {
	auth    *authorization
	hold    ledger.Hold
	deposit *chain.OpReceipt
	done    atomic.Bool
}

var _ sandboxd.Charge = (*charge)(nil)

// Settle counts the increment, durably, before the answer leaves: the
// voucher that bought it is then what the claimer claims. It returns the
// report the payer's client reads: chargedAmount and the channel's state
// (and a deposit's transaction and amount). A hold lost meanwhile (this
// replica's lease lapsed and another took the channel), or a commit the
// ledger could not make (the hold is then dropped), counts nothing and
// withholds the answer with CodeUnavailable.
func (c *charge) Settle(ctx context.Context, d sandboxd.Delivered) (*sandboxd.Settlement, error) {
	const op = "channels.settle"
	a, s := c.auth, c.auth.seller
	if !c.done.CompareAndSwap(false, true) {
		return nil, sandboxd.Errorf(sandboxd.CodeInternal, op, "this channel payment was already settled or released")
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	body := a.claim.Body(d)
	var ans *ledger.AnswerCommit
	if body != nil {
		ans = &ledger.AnswerCommit{Body: body, Report: func(row ledger.Channel) ([]byte, error) {
			return json.Marshal(c.settlement(row))
		}}
	}
	row, err := s.store.CommitIncrement(wctx, a.id, c.hold.ID, a.expected, a.req.Resource, ans)
	a.claim.Signal()
	if err != nil {
		s.observe(OpVoucher, OutcomeReleased, 0)
		a.log.Error("cannot count the channel increment; answer withheld, nothing charged", "err", err)
		if errors.Is(err, ledger.ErrHoldLost) {
			err = sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "this call's hold on the channel lapsed before its answer; "+
				"nothing was charged, send the same voucher again")
		} else {
			// Nothing was counted, so the hold goes: while it stayed live,
			// the same voucher (which the answer invites) would be answered
			// a corrective state counting it. A no-op if the commit landed.
			c.release(ctx)
		}
		if sandboxd.ErrorCode(err) != sandboxd.CodeUnavailable {
			err = sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "the payment ledger could not count this call; "+
				"nothing was charged, send the same voucher again")
		}
		return nil, err
	}
	s.observe(OpVoucher, OutcomeCharged, 0)
	a.claim.Kept(body)
	a.log.Info("channel charged", "charged", row.Charged, "run_status", d.Result.Status)
	return c.settlement(row), nil
}

// settlement is the report of the increment committed in row: the
// chargedAmount and the channel's state (and a deposit's transaction and
// amount), what the answer is sent with and kept with.
func (c *charge) settlement(row ledger.Channel) *sandboxd.Settlement {
	a, s := c.auth, c.auth.seller
	cs, _ := s.channelState(row, false)
	extra, _ := json.Marshal(struct {
		ChargedAmount string               `json:"chargedAmount"`
		ChannelState  channel.ChannelState `json:"channelState"`
	}{a.amount.String(), cs})
	st := &sandboxd.Settlement{Version: 2, Success: true, Network: s.network, Payer: a.pl.Config.Payer.Hex(), Extra: extra}
	if c.deposit != nil {
		st.Transaction = c.deposit.Tx
		if c.deposit.Amount != nil {
			st.Amount = c.deposit.Amount.String()
		}
	}
	return st
}

// Release drops the increment: the service failed to deliver, nothing is
// charged, and the same voucher may be sent again (a deposit collected
// stays the channel's balance).
func (c *charge) Release(ctx context.Context) {
	if c.done.CompareAndSwap(false, true) {
		c.auth.seller.observe(OpVoucher, OutcomeReleased, 0)
		c.release(ctx)
	}
}

// release drops the hold, on a fresh short context.
func (c *charge) release(ctx context.Context) {
	a, s := c.auth, c.auth.seller
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	err := s.store.ReleaseIncrement(wctx, a.id, c.hold.ID)
	a.claim.Signal()
	if err != nil {
		a.log.Error("cannot release the channel increment; it lapses by itself", "until", c.hold.Until, "err", err)
		return
	}
	a.log.Info("channel increment released; nothing charged")
}
