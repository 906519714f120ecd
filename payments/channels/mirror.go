package channels

import (
	"context"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/ledger"
)

// mirrorBatch is how many channels one escrow read covers.
const mirrorBatch = 100

// mirrorLimit bounds the rows one mirror pass rereads; the least recently
// mirrored go first, so every row is reached in turn.
const mirrorLimit = 20 * mirrorBatch

// mirrorPass rereads the escrow's state of the channels due and writes it
// to their rows. It returns how many rows it refreshed.
func (b *Background) mirrorPass(ctx context.Context) (int, error) {
	rows, err := b.books.MirrorDue(ctx, mirrorLimit)
	if err != nil {
		return 0, err
	}
	done := 0
	for start := 0; start < len(rows); start += mirrorBatch {
		chunk := rows[start:min(start+mirrorBatch, len(rows))]
		ids := make([]common.Hash, len(chunk))
		for i, r := range chunk {
			ids[i] = common.HexToHash(r.ID)
		}
		states, err := b.reader.ReadChannels(ctx, ids)
		if err != nil {
			return done, err
		}
		for i, st := range states {
			row := chunk[i]
			m := ledger.Mirror{Balance: st.Balance, Claimed: st.TotalClaimed, WithdrawAmount: orZero(st.WithdrawAmount),
				WithdrawAt: int64(st.WithdrawInitiatedAt), RefundNonce: orZero(st.RefundNonce)}
			got, err := b.books.UpdateMirror(ctx, row.ID, m)
			if err != nil {
				return done, err
			}
			done++
			b.noticeMirror(row, got, m)
			b.endLostRefund(ctx, row, m)
		}
	}
	return done, nil
}

// noticeMirror logs what a mirror update changed that an operator must
// know: a withdrawal begun (the claimer claims at once), or the chain
// claimed more than the ledger charged (lost ledger state: charged was
// raised to it).
func (b *Background) noticeMirror(before, after ledger.Channel, m ledger.Mirror) {
	log := b.log.With("channel", before.ID[:min(10, len(before.ID))])
	if m.WithdrawAt != 0 && m.WithdrawAt != before.WithdrawAt {
		log.Warn("payer asked to withdraw; claiming what was charged at once", "amount", m.WithdrawAmount,
			"initiated_at", m.WithdrawAt)
	}
	if orZero(before.Charged).Cmp(orZero(m.Claimed)) < 0 {
		log.Error("the escrow shows more claimed than this ledger charged; charged raised to it (was the ledger restored?)",
			"charged", before.Charged, "claimed", m.Claimed, "now", after.Charged)
	}
}

// refundLapse is how long a refund of unknown outcome keeps its channel
// refunding when the escrow's refund nonce does not move.
const refundLapse = 5 * time.Minute

// endLostRefund ends a refund whose outcome its request never learned:
// once the escrow's refund nonce moved (it was mined), or after
// refundLapse (it never was), the channel opens again with the chain's
// state, or closes when nothing is left beyond what was charged.
func (b *Background) endLostRefund(ctx context.Context, row ledger.Channel, m ledger.Mirror) {
	if row.State != ledger.ChannelRefunding {
		return
	}
	moved := orZero(m.RefundNonce).Cmp(orZero(row.RefundNonce)) > 0
	if !moved && b.now().Sub(row.UpdatedAt) < refundLapse {
		return
	}
	closed := new(big.Int).Sub(orZero(m.Balance), orZero(row.Charged)).Sign() <= 0
	if err := b.books.EndRefund(ctx, row.ID, m, closed); err != nil {
		b.log.Error("cannot end a lost refund", "channel", row.ID, "err", err)
		return
	}
	b.log.Info("a refund of unknown outcome ended by the chain's state", "channel", row.ID, "mined", moved, "closed", closed)
}

// unclaimed is the sum of charged - claimed over rows.
func unclaimed(rows []ledger.Channel) *big.Int {
	sum := new(big.Int)
	for _, r := range rows {
		if d := new(big.Int).Sub(orZero(r.Charged), orZero(r.Claimed)); d.Sign() > 0 {
			sum.Add(sum, d)
		}
	}
	return sum
}
