package channels

import (
	"bytes"
	"context"
	"math/big"

	"sandboxd"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/ledger"
)

// lookup is the channel's part of a retry (docs/design/retries.md §4.2):
// it sets a's claim when the seller keeps answers, and looks the voucher
// up when it carries an id or is not a new increment (max at or below
// the charged total plus a live hold's), so that a plain voucher costs no
// read. It returns the voucher's Replay, the id's conflict, the ledger's
// outage, or (nil, nil) to go on: a voucher already charged for another
// request then gets the corrective 402 as before.
func (s *Seller) lookup(ctx context.Context, a *authorization, row ledger.Channel) (sandboxd.Replay, error) {
	max := a.pl.Voucher.MaxClaimableAmount
	reached := new(big.Int).Set(orZero(row.Charged))
	if h := s.liveHold(row); h != nil {
		reached.Add(reached, h.Amount)
	}
	fresh := new(big.Int).Add(reached, a.amount).Cmp(max) == 0
	a.claim = s.keep.Claim(a.Payer(), ledger.VoucherKey(a.id, max), a.spec(), fresh)
	if a.claim == nil || (a.req.Answer.ID == "" && max.Cmp(reached) > 0) {
		return nil, nil
	}
	release, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return a.claim.Find(ctx)
}

// replayOnly is Check of a ReplayOnly request: the voucher's stored
// answer, or (nil, nil); nothing is read from the chain (a channel the
// ledger does not know has no answers).
func (s *Seller) replayOnly(ctx context.Context, a *authorization) (sandboxd.Authorization, error) {
	row, err := s.store.Channel(ctx, a.id)
	if err != nil {
		return nil, nil
	}
	rep, err := s.lookup(ctx, a, row)
	if rep == nil {
		if err != nil {
			a.log.Debug("replay probe refused", "err", err)
		}
		return nil, nil
	}
	return rep, nil
}

// spec is what a's request keeps with its answer (Request.Answer), at a
// channel payment's x402 version.
func (a *authorization) spec() answer.Spec {
	sp := a.req.Answer
	sp.Version = a.req.Payment.Version
	return sp
}

// ownVoucher reports whether row's live hold or its charged total rests on
// the voucher of h: a concurrent request with this very voucher holds the
// increment or was charged for it.
func (s *Seller) ownVoucher(row ledger.Channel, h ledger.Hold) bool {
	if live := s.liveHold(row); live != nil && orZero(live.Max).Cmp(h.Max) == 0 && bytes.Equal(live.Sig, h.Sig) {
		return true
	}
	return orZero(row.VoucherMax).Cmp(h.Max) == 0 && bytes.Equal(row.VoucherSig, h.Sig)
}

// raced answers a hold that lost to a concurrent request with the same
// voucher or id (see answer.Claim.Raced): nil refuses as without retries.
func (a *authorization) raced(ctx context.Context, lost error) error {
	err := a.claim.Raced(ctx, lost)
	if err != nil {
		a.log.Info("voucher raced a concurrent request", "code", sandboxd.ErrorCode(err))
	}
	return err
}
