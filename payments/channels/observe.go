package channels

import (
	"context"
	"errors"
	"math/big"
	"time"

	"sandboxd/payments/internal/remote"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// Observer is told what the channels did, for the metrics: op is what
// happened to (OpVoucher, OpDeposit, or the transactions ledger.OpRefund,
// ledger.OpClaim and ledger.OpSweep), outcome how it ended, gas the gas
// its receipt shows (0 without one). It must not block.
//
// A voucher (any payment that charges: a voucher or a deposit's) ends
// OutcomeCharged, OutcomeReleased (nothing charged), OutcomeCorrective (a
// corrective 402) or OutcomeRefused (any channel payment refused, a
// refund's included); a transaction ends ledger.OpMined, ledger.OpFailed,
// ledger.OpPending (outcome unknown) or OutcomeUnsent (never sent).
type Observer func(op, outcome string, gas uint64)

// The ops an Observer is told of, besides the ledger's transaction kinds.
const (
	OpVoucher = "voucher"
	OpDeposit = "deposit"
)

// The outcomes an Observer is told of, besides the ledger's op states.
const (
	OutcomeCharged    = "charged"
	OutcomeReleased   = "released"
	OutcomeCorrective = "corrective"
	OutcomeRefused    = "refused"
	OutcomeUnsent     = "unsent"
)

// noObserver is the Observer of a seller or background given none.
func noObserver(string, string, uint64) {}

// Gauges is told, after each mirror and claim pass, what every replica
// reads alike from the ledger: the charges not claimed yet (charged -
// claimed over the claimable rows, in atomic units) and how long ago the
// least recently mirrored open row was read from the escrow (since it was
// made, when never). It must not block.
type Gauges func(unclaimed *big.Int, mirrorAge time.Duration)

// gauge tells the gauges the unclaimed total and the mirror's age; a
// ledger that cannot be read leaves them as they were.
func (b *Background) gauge(ctx context.Context) {
	if b.gauges == nil {
		return
	}
	claimable, err := b.books.Claimable(ctx, mirrorLimit)
	if err != nil {
		return
	}
	oldest, err := b.books.MirrorDue(ctx, 1)
	if err != nil {
		return
	}
	var age time.Duration
	if len(oldest) > 0 {
		at := oldest[0].SyncedAt
		if at.IsZero() {
			at = oldest[0].CreatedAt
		}
		age = max(b.now().Sub(at), 0)
	}
	b.gauges(unclaimed(claimable), age)
}

// txOutcome is the Observer's outcome of a deposit or refund that ended
// with err (as Depositor.Deposit and Refunder.Refund report it): mined,
// failed (refused or reverted), unsent, or pending (outcome unknown).
func txOutcome(err error) string {
	var rj *x402.RejectError
	switch {
	case err == nil:
		return ledger.OpMined
	case errors.As(err, &rj):
		return ledger.OpFailed
	case errors.Is(err, remote.ErrNotSent):
		return OutcomeUnsent
	}
	return ledger.OpPending
}
