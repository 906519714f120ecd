package channels

import (
	"context"
	"math/big"
	"time"

	"sandboxd/payments/chain"
	"sandboxd/payments/ledger"
)

// ClaimReport is what one claim pass did.
type ClaimReport struct {
	// Channels and Amount are the rows claimed and what they added.
	Channels int
	Amount   *big.Int
	// Claims and Sweeps are the transactions sent.
	Claims []chain.OpReceipt
	Sweep  *chain.OpReceipt
}

// claimDue reports whether a claim pass is due now: claim_every passed, a
// claim was asked for (a withdrawal seen, `sandboxd ledger claim`), or the
// unclaimed charges reached claim_threshold.
func (b *Background) claimDue(ctx context.Context, now time.Time) (bool, error) {
	st, err := b.books.ClaimerState(ctx)
	if err != nil {
		return false, err
	}
	last := st.LastPassAt
	if last.IsZero() {
		last = st.Since // no pass yet: claim_every counts from when the lease was first taken
	}
	if now.Sub(last) >= b.cfg.ClaimEvery || st.RequestedAt.After(st.LastPassAt) {
		return true, nil
	}
	if now.Sub(b.summedAt) < leaseCheck {
		return false, nil // the unclaimed total is summed every leaseCheck, not every tick
	}
	b.summedAt = now
	rows, err := b.books.Claimable(ctx, mirrorLimit)
	if err != nil {
		return false, err
	}
	return len(rows) > 0 && unclaimed(rows).Cmp(b.threshold) >= 0, nil
}

// ClaimPass claims every channel's charged total under its latest charged
// voucher (never more than was charged: the service never claims a
// voucher it did not charge), in transactions of at most
// max_claims_per_tx channels, then sweeps what was claimed to payTo. Two
// claimers for a moment cost gas, never money: a claim of a total already
// claimed is a no-op on chain.
func (b *Background) ClaimPass(ctx context.Context) (ClaimReport, error) {
	rep := ClaimReport{Amount: new(big.Int)}
	started := b.now()
	for {
		rows, err := b.books.Claimable(ctx, b.cfg.MaxClaimsPerTx)
		if err != nil || len(rows) == 0 {
			return rep, b.finishPass(ctx, &rep, started, err)
		}
		rcpt, err := b.claimRows(ctx, rows)
		if err != nil {
			return rep, b.finishPass(ctx, &rep, started, err)
		}
		rep.Claims = append(rep.Claims, rcpt)
		rep.Channels += len(rows)
		rep.Amount.Add(rep.Amount, orZero(rcpt.Amount))
		if len(rows) < b.cfg.MaxClaimsPerTx {
			return rep, b.finishPass(ctx, &rep, started, nil)
		}
	}
}

// claimRows claims rows in one transaction, recorded in the ops table
// before it is sent, and raises each row's claimed total.
func (b *Background) claimRows(ctx context.Context, rows []ledger.Channel) (chain.OpReceipt, error) {
	claims := make([]chain.VoucherClaim, len(rows))
	total := new(big.Int)
	for i, r := range rows {
		claims[i] = chain.VoucherClaim{Config: r.Config, MaxClaimable: r.VoucherMax, Signature: r.VoucherSig, TotalClaimed: r.Charged}
		total.Add(total, new(big.Int).Sub(orZero(r.Charged), orZero(r.Claimed)))
	}
	op := ledger.Op{ID: holdID(), Kind: "claim", Status: "sending", Channels: len(rows), Amount: total}
	if err := b.books.RecordOp(ctx, op); err != nil {
		return chain.OpReceipt{}, err
	}
	sctx, cancel := sending(ctx)
	rcpt, err := b.claimer.Claim(sctx, claims)
	cancel()
	b.endOp(op, rcpt, err)
	b.observe("claim", rcpt, err)
	if err != nil {
		b.log.Error("claim failed", "channels", len(rows), "tx", rcpt.Tx, "err", err)
		return rcpt, err
	}
	for _, r := range rows {
		if err := b.books.MarkClaimed(ctx, r.ID, r.Charged); err != nil {
			return rcpt, err
		}
	}
	if rcpt.Amount == nil {
		rcpt.Amount = total
	}
	b.log.Info("claimed", "channels", len(rows), "amount", rcpt.Amount, "tx", rcpt.Tx, "gas", rcpt.GasUsed)
	return rcpt, nil
}

// finishPass sweeps what the pass claimed and records the pass.
func (b *Background) finishPass(ctx context.Context, rep *ClaimReport, started time.Time, err error) error {
	if rep.Channels > 0 {
		op := ledger.Op{ID: holdID(), Kind: "sweep", Status: "sending"}
		if rerr := b.books.RecordOp(ctx, op); rerr != nil {
			return rerr
		}
		sctx, cancel := sending(ctx)
		rcpt, serr := b.claimer.Sweep(sctx, b.receiver, b.token)
		cancel()
		b.endOp(op, rcpt, serr)
		b.observe("sweep", rcpt, serr)
		if serr != nil {
			b.log.Error("sweep failed; the claimed money stays in the escrow for the next pass", "tx", rcpt.Tx, "err", serr)
			if err == nil {
				err = serr
			}
		} else {
			rep.Sweep = &rcpt
			b.log.Info("swept to pay_to", "amount", rcpt.Amount, "tx", rcpt.Tx, "gas", rcpt.GasUsed)
		}
	}
	if err != nil {
		return err
	}
	return b.books.ClaimPassDone(ctx, started)
}

// sendBound bounds a claim or sweep once sent, past the pass's own end.
const sendBound = 20 * time.Second

// sending is the context of a claim or sweep: not cut off when the pass is
// (a service stopping would log as failed a transaction that is then
// mined), bounded by sendBound.
func sending(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), sendBound)
}

// endOp records how an op ended, on a fresh context.
func (b *Background) endOp(op ledger.Op, rcpt chain.OpReceipt, err error) {
	op.TxHash, op.GasUsed, op.Status = rcpt.Tx, rcpt.GasUsed, "mined"
	if rcpt.Amount != nil {
		op.Amount = rcpt.Amount
	}
	if err != nil {
		op.Status, op.Reason = "failed", err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if uerr := b.books.UpdateOp(ctx, op); uerr != nil {
		b.log.Error("cannot record the end of a channel operation", "op", op.Kind, "tx", op.TxHash, "err", uerr)
	}
}
