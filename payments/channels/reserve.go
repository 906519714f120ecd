package channels

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// authorization is a checked channel payment, not yet reserved.
type authorization struct {
	seller *Seller
	req    Request
	pl     *channel.Payload
	id     string
	// amount is the price this payment pays; expected is the charged
	// total its voucher rests on (maxClaimableAmount - amount).
	amount, expected *big.Int
	log              *slog.Logger
	// claim is the answer the payment keeps, nil when none (set by
	// Check's lookup).
	claim *answer.Claim
}

var _ sandboxd.Authorization = (*authorization)(nil)

// Payer is the channel's payer, lower-case: a session opened through a
// channel belongs to it.
func (a *authorization) Payer() string { return strings.ToLower(a.pl.Config.Payer.Hex()) }

// holdWait is how often a voucher waiting for a concurrent call's hold
// rereads the row.
const holdWait = 10 * time.Millisecond

// Reserve holds the channel's next increment for this payment, collecting
// a deposit first (nothing runs for a deposit that failed). A voucher
// built on a concurrent call's projected total waits for that call's
// commit, up to the seller's wait; past it, or when the charged total
// moved, it is answered the channel_busy refusal or the corrective 402.
func (a *authorization) Reserve(ctx context.Context) (sandboxd.Charge, error) {
	s := a.seller
	var dep *depositRow
	if a.pl.Kind == channel.KindDeposit {
		var err error
		if dep, err = a.recordDeposit(ctx); err != nil {
			return nil, err
		}
	}
	h := ledger.Hold{ID: holdID(), Amount: a.amount, Max: a.pl.Voucher.MaxClaimableAmount, Sig: a.pl.Voucher.Signature,
		Until: s.now().Add(s.holdFor), Answer: a.claim.Row()}
	if err := a.hold(ctx, h); err != nil {
		if dep != nil {
			dep.release()
		}
		return nil, err
	}
	c := &charge{auth: a, hold: h}
	if dep != nil {
		rcpt, err := dep.collect(ctx)
		if err != nil {
			c.Release(ctx)
			return nil, err
		}
		c.deposit = &rcpt
	}
	a.log.Info("channel increment reserved", "max", h.Max, "amount", a.amount)
	return c, nil
}

// hold reserves the increment, waiting behind a concurrent call's hold
// when this voucher was built on its projected total.
func (a *authorization) hold(ctx context.Context, h ledger.Hold) error {
	const op = "channels.reserve"
	s := a.seller
	deadline := s.now().Add(s.wait)
	for {
		err := s.store.ReserveIncrement(ctx, a.id, a.expected, h)
		if errors.Is(err, ledger.ErrAnswerTaken) {
			if rerr := a.raced(ctx, err); rerr != nil {
				return rerr
			}
			return err
		}
		if !errors.Is(err, ledger.ErrChannelMoved) {
			return err
		}
		row, rerr := s.store.Channel(ctx, a.id)
		if rerr != nil {
			return rerr
		}
		if s.ownVoucher(row, h) {
			if err := a.raced(ctx, err); err != nil {
				return err
			}
		}
		live := s.liveHold(row)
		lapsed := live == nil && row.State == ledger.ChannelOpen && orZero(row.Charged).Cmp(a.expected) == 0
		if lapsed || live != nil && new(big.Int).Add(row.Charged, live.Amount).Cmp(a.expected) == 0 {
			if s.now().After(deadline) {
				return s.busy(a.req, op, "another call on this channel is still being answered")
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(holdWait):
			}
			continue
		}
		if row.State != ledger.ChannelOpen {
			return s.busy(a.req, op, "a refund of this channel is under way")
		}
		a.log.Info("voucher raced, corrective 402", "charged", row.Charged, "expected", a.expected)
		return s.corrective(a.req, channel.ReasonCumulativeMismatch, row,
			x402.Reject(channel.ReasonCumulativeMismatch, "the charged total moved to %s", row.Charged))
	}
}

// holdID is a fresh random id of one reservation.
func holdID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
