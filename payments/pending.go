package payments

import (
	"context"
	"log/slog"
	"time"
)

// ReasonSettlementPending is the errorReason of a settlement that may have
// been sent but whose outcome is not known yet. It is this service's own
// code: a payer that reads it must wait, not pay again.
const ReasonSettlementPending = "settlement_pending"

// resolveEvery is how often the gate NewGate builds looks the pending
// settlements up on chain.
const resolveEvery = 30 * time.Second

// pendingBody is the JSON answer of a pending settlement (202).
type pendingBody struct {
	// Status is always ReasonSettlementPending.
	Status string `json:"status"`
	// Transaction is the settlement's hash, when one was sent.
	Transaction string `json:"transaction"`
	// Error says what happened and what the payer should do.
	Error string `json:"error"`
}

// MarkPending records that a settling payment's settlement may have been
// sent by tx ("" when no hash is known) and its outcome is unknown: the row
// stays settling (the payment is refused if offered again) with reason
// ReasonSettlementPending, for ResolvePending.
func (l *SQLLedger) MarkPending(ctx context.Context, payer, nonce, tx string) error {
	return l.move(ctx, "payments.ledger.pending", payer, nonce, []string{StatusSettling},
		`tx_hash = ?, reason = ?`, tx, ReasonSettlementPending)
}

// ResolvePending looks up each of this replica's settling rows marked
// pending (the settlements whose outcome it did not learn; rows settling
// without that mark are in flight in some request and are left alone), as
// Recover does for the rows a crash left settling: settled when its nonce
// is used on chain, released when it is not, failed when the settler
// cannot tell (a facilitator), left when the chain cannot be asked. Only a
// ledger failure is an error.
func (l *SQLLedger) ResolvePending(ctx context.Context, s Settler, log *slog.Logger) (RecoverReport, error) {
	rows, err := l.query(ctx, `WHERE status = 'settling' AND reason = ? AND replica = ? ORDER BY created_at`,
		ReasonSettlementPending, l.replica)
	if err != nil {
		return RecoverReport{}, err
	}
	return l.resolve(ctx, s, rows, log)
}

// ResolvePending resolves the gate's pending settlements (see
// Ledger.ResolvePending).
func (g *Gate) ResolvePending(ctx context.Context) (RecoverReport, error) {
	return g.ledger.ResolvePending(ctx, g.settler, g.log)
}

// startResolver runs ResolvePending every interval until the returned
// loop is closed.
func (g *Gate) startResolver(every time.Duration) *loop {
	return startLoop(every, func(ctx context.Context) {
		if rep, err := g.ResolvePending(ctx); err != nil {
			g.log.Warn("resolving pending settlements failed; trying again later", "err", err)
		} else if rep != (RecoverReport{}) {
			g.log.Info("pending settlements resolved", "settled", rep.Settled, "released", rep.Released,
				"failed", rep.Failed, "left", rep.Left)
		}
	})
}
