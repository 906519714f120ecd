package ledger

import (
	"context"
	"database/sql"
	"errors"
	"math/big"
)

// Mirror is the escrow's state of a channel, as the chain was last read:
// channels() (Balance, Claimed), pendingWithdrawals() (WithdrawAmount,
// WithdrawAt in unix seconds, 0 for none) and refundNonce().
type Mirror struct {
	Balance, Claimed, WithdrawAmount *big.Int
	WithdrawAt                       int64
	RefundNonce                      *big.Int
}

// UpdateMirror writes m as channel id's mirror, read now, and returns the
// row. It leaves the charged total and the hold alone, but for one case:
// when the escrow says more was claimed than the ledger charged (the
// ledger lost state), the total is raised to the claimed amount, and a
// hold on the old total, which could never be committed, is dropped; the
// caller compares the row's Charged with m.Claimed to log it. A withdrawal
// that appears (WithdrawAt was 0, or another: the last one was finalized
// and a new one asked for between two reads) asks the claimer to claim now.
// ErrNoChannel when there is no row.
func (l *SQL) UpdateMirror(ctx context.Context, id string, m Mirror) (Channel, error) {
	return l.mirrorMove(ctx, "channel_mirror", id, m, "", "")
}

// EndRefund ends the refund of channel id: the channel goes from refunding
// to closed (closed set: nothing is left of the deposit) or open, with m
// as its mirror, written as UpdateMirror does. ErrChannelMoved when it is
// not refunding.
func (l *SQL) EndRefund(ctx context.Context, id string, m Mirror, closed bool) error {
	to := ChannelOpen
	if closed {
		to = ChannelClosed
	}
	_, err := l.mirrorMove(ctx, "channel_refund_end", id, m, ChannelRefunding, to)
	return err
}

// mirrorMove writes m as channel id's mirror and, when to is set, moves it
// from state from to state to, in one transaction (see UpdateMirror).
func (l *SQL) mirrorMove(ctx context.Context, name, id string, m Mirror, from, to string) (Channel, error) {
	op := "payments.ledger." + name
	if err := l.checkWrite(); err != nil {
		return Channel{}, ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed(name)()
	id = key(id)
	var out Channel
	err := l.inTx(ctx, func(tx *sql.Tx) error {
		c, err := l.channel(ctx, tx, id, true)
		if err != nil {
			return err
		}
		state := to
		if state == "" {
			state = c.State
		} else if c.State != from {
			return ErrChannelMoved
		}
		charged, hold := c.Charged, ""
		if claimed := orZero(m.Claimed); claimed.Cmp(charged) > 0 {
			charged, hold = claimed, ", "+clearHold
		}
		now := l.stamp()
		out, err = scanChannel(tx.QueryRowContext(ctx, l.dialect.bind(`UPDATE channels SET balance = ?, claimed = ?,
	withdraw_amount = ?, withdraw_at = ?, refund_nonce = ?, synced_at = ?, updated_at = ?, charged = ?, state = ?`+hold+`
WHERE channel_id = ? RETURNING `+channelColumns),
			amountText(m.Balance), amountText(m.Claimed), amountText(m.WithdrawAmount), m.WithdrawAt,
			amountText(m.RefundNonce), now, now, charged.String(), state, id))
		if err != nil || m.WithdrawAt == 0 || m.WithdrawAt == c.WithdrawAt {
			return err
		}
		return l.requestClaim(ctx, tx)
	})
	if err != nil {
		return Channel{}, channelError(op, id, err)
	}
	return out, nil
}

// MarkClaimed records that the escrow paid channel id's receiver claimed
// in all: the row's claimed total becomes the larger of its own and
// claimed, never smaller. ErrNoChannel when there is no row.
func (l *SQL) MarkClaimed(ctx context.Context, id string, claimed *big.Int) error {
	const op = "payments.ledger.channel_claimed"
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_claimed")()
	id = key(id)
	err := l.inTx(ctx, func(tx *sql.Tx) error {
		c, err := l.channel(ctx, tx, id, true)
		if err != nil || orZero(claimed).Cmp(c.Claimed) <= 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, l.dialect.bind(`UPDATE channels SET claimed = ?, updated_at = ? WHERE channel_id = ?`),
			claimed.String(), l.stamp(), id)
		return err
	})
	return channelError(op, id, err)
}

// BeginRefund moves channel id from open to refunding, when no live
// request holds it, and returns the row; a lapsed hold, or one of a silent
// replica, is dropped with the move, so that its request can no longer
// charge. ErrChannelMoved (with the row as it is) when the channel is not
// open or a live request holds it; ErrNoChannel when there is no row.
func (l *SQL) BeginRefund(ctx context.Context, id string) (Channel, error) {
	const op = "payments.ledger.channel_refund_begin"
	if err := l.checkWrite(); err != nil {
		return Channel{}, ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_refund_begin")()
	c, err := scanChannel(l.db.QueryRowContext(ctx, l.dialect.bind(`UPDATE channels
SET state = 'refunding', `+clearHold+`, updated_at = ?
WHERE channel_id = ? AND state = 'open' AND `+l.holdFree()+` RETURNING `+channelColumns),
		l.stamp(), key(id), l.lease.Seconds()))
	if errors.Is(err, sql.ErrNoRows) {
		return l.movedOrMissing(ctx, op, id)
	}
	return c, channelError(op, id, err)
}

// ReopenChannel moves channel id from closed to open: a new deposit funds
// it again. ErrChannelMoved when it is not closed; ErrNoChannel when there
// is no row.
func (l *SQL) ReopenChannel(ctx context.Context, id string) error {
	const op = "payments.ledger.channel_reopen"
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_reopen")()
	res, err := l.db.ExecContext(ctx, l.dialect.bind(`UPDATE channels SET state = 'open', updated_at = ?
WHERE channel_id = ? AND state = 'closed'`), l.stamp(), key(id))
	if err := affected(res, err, ErrChannelMoved); !errors.Is(err, ErrChannelMoved) {
		return channelError(op, id, err)
	}
	_, err = l.movedOrMissing(ctx, op, id)
	return err
}

// movedOrMissing is the answer to a move that matched no row of channel
// id: the row as it is with ErrChannelMoved, or ErrNoChannel.
func (l *SQL) movedOrMissing(ctx context.Context, op, id string) (Channel, error) {
	c, err := l.channel(ctx, l.db, key(id), false)
	if err == nil {
		err = ErrChannelMoved
	}
	return c, channelError(op, id, err)
}

// orZero is n, or 0 for nil.
func orZero(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return n
}
