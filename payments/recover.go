package payments

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"sandboxd/internal/every"
	"sandboxd/payments/ledger"
)

// resolveEvery is how often the gate NewGate builds looks the pending
// settlements up on chain.
const resolveEvery = 30 * time.Second

// RecoverReport counts what Recover did with the rows a crash left
// reserved or settling.
type RecoverReport struct {
	// Settled rows were settling and found used on chain: collected.
	Settled int
	// Released rows were reserved (no settlement was sent), or settling and
	// found unused on chain: nothing was collected.
	Released int
	// Failed rows were settling under a settler that cannot tell whether
	// they were collected: marked failed, ledger.ReasonUnknownAfterRestart.
	Failed int
	// Left rows stay settling: the chain could not be asked, or the row's
	// key is malformed. The next start tries them again.
	Left int
}

// resolve settles the open rows given of l (this replica's own, left by a crash
// or a stop mid-request, or taken over from a silent replica), so that no
// payment stays reserved:
//   - reserved: the settlement was never sent (settling is written, durably,
//     before it is), so nobody was charged: released in every mode, and the
//     same payment may be offered again;
//   - settling, and the settler can ask the chain (onchain): settled when
//     the nonce is used (keeping the transaction hash when a pending row
//     has one), released when it is not; when the chain cannot be asked the
//     row stays settling, which refuses the payment, until the next start;
//   - settling, and the settler cannot tell (errNonceStateUnknown, a
//     facilitator): failed with ledger.ReasonUnknownAfterRestart, logged at warn
//     with the payer and nonce for an operator to look up. The signed
//     authorization then never buys a second answer, whether or not it was
//     collected.
//
// A row another replica took over meanwhile (ledger.ErrNotReserved) is skipped.
// Only a ledger failure is returned as an error. A nil log discards the
// events.
func resolve(ctx context.Context, l Ledger, s Settler, open []ledger.Entry, log *slog.Logger) (RecoverReport, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep RecoverReport
	for _, e := range open {
		elog := log.With("payer", e.Payer, "nonce", e.Nonce, "status", e.Status, "reserved_at", e.Created)
		var err error
		if e.Status == ledger.StatusReserved {
			if err = l.MarkReleased(ctx, e.Payer, e.Nonce); err == nil {
				elog.Info("recovered payment: its settlement was never sent, released")
				rep.Released++
			}
		} else {
			err = recoverSettling(ctx, l, s, e, elog, &rep)
		}
		if errors.Is(err, ledger.ErrNotReserved) {
			elog.Info("open payment resolved by another replica meanwhile")
			continue
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// recoverSettling resolves one settling row e, counting it in rep.
func recoverSettling(ctx context.Context, l Ledger, s Settler, e ledger.Entry, log *slog.Logger, rep *RecoverReport) error {
	nonce, err := hexutil.Decode(e.Nonce)
	if err != nil || len(nonce) != 32 || !common.IsHexAddress(e.Payer) {
		log.Error("ledger row has a malformed key; left settling")
		rep.Left++
		return nil
	}
	used, err := s.NonceUsed(ctx, common.HexToAddress(e.Payer), [32]byte(nonce))
	switch {
	case errors.Is(err, errNonceStateUnknown):
		if err := l.MarkFailed(ctx, e.Payer, e.Nonce, e.TxHash, ledger.ReasonUnknownAfterRestart); err != nil {
			return err
		}
		log.Warn("a settlement's outcome is unknown (in flight at a stop, or pending) and the settler cannot tell "+
			"whether it was collected; marked failed, so this payment is never admitted again (look the payer and nonce up on chain)",
			"reason", ledger.ReasonUnknownAfterRestart)
		rep.Failed++
	case err != nil:
		log.Warn("a settlement's outcome is unknown (in flight at a stop, or pending); asking the chain failed, "+
			"so it stays settling (refused) until it is asked again", "err", err)
		rep.Left++
	case used:
		if err := l.MarkSettled(ctx, e.Payer, e.Nonce, e.TxHash, "", nil); err != nil {
			return err
		}
		log.Info("recovered payment: used on chain, marked settled")
		rep.Settled++
	default:
		if err := l.MarkReleased(ctx, e.Payer, e.Nonce); err != nil {
			return err
		}
		log.Info("recovered payment: not used on chain, released")
		rep.Released++
	}
	return nil
}

// Recover resolves the rows this replica's previous run left open in l and
// those of replicas silent for longer than the lease (see resolve). NewGate
// runs it at start.
func Recover(ctx context.Context, l Ledger, s Settler, log *slog.Logger) (RecoverReport, error) {
	if _, err := l.ClaimStale(ctx); err != nil {
		return RecoverReport{}, err
	}
	open, err := l.Pending(ctx)
	if err != nil {
		return RecoverReport{}, err
	}
	return resolve(ctx, l, s, open, log)
}

// RecoverStale resolves the open rows of replicas silent for longer than
// the lease, never this replica's own (they may be in flight); a live
// replica runs it periodically.
func RecoverStale(ctx context.Context, l Ledger, s Settler, log *slog.Logger) (RecoverReport, error) {
	claimed, err := l.ClaimStale(ctx)
	if err != nil {
		return RecoverReport{}, err
	}
	return resolve(ctx, l, s, claimed, log)
}

// ResolvePending resolves this replica's settlements marked pending in l
// (see Ledger.PendingSettlements) as Recover does for the rows a crash left
// settling: settled when its nonce is used on chain, released when it is
// not, failed when the settler cannot tell (a facilitator), left when the
// chain cannot be asked. Only a ledger failure is an error.
func ResolvePending(ctx context.Context, l Ledger, s Settler, log *slog.Logger) (RecoverReport, error) {
	rows, err := l.PendingSettlements(ctx)
	if err != nil {
		return RecoverReport{}, err
	}
	return resolve(ctx, l, s, rows, log)
}

// ResolvePending resolves the gate's pending settlements (see the
// function ResolvePending).
func (g *Gate) ResolvePending(ctx context.Context) (RecoverReport, error) {
	return ResolvePending(ctx, g.ledger, g.settler, g.log)
}

// startResolver runs ResolvePending every interval until the returned
// loop is closed.
func (g *Gate) startResolver(interval time.Duration) *every.Loop {
	return every.Start(interval, func(ctx context.Context) {
		if rep, err := g.ResolvePending(ctx); err != nil {
			g.log.Warn("resolving pending settlements failed; trying again later", "err", err)
		} else if rep != (RecoverReport{}) {
			g.log.Info("pending settlements resolved", "settled", rep.Settled, "released", rep.Released,
				"failed", rep.Failed, "left", rep.Left)
		}
	})
}

// keepAlive beats l's heartbeat and resolves the rows of silent replicas
// once: one pass of the loop startKeepAlive runs.
func keepAlive(ctx context.Context, l Ledger, s Settler, log *slog.Logger) {
	if err := l.Heartbeat(ctx); err != nil {
		log.Error("cannot record this replica's heartbeat; after the lease others resolve its open payments", "err", err)
		return
	}
	rep, err := RecoverStale(ctx, l, s, log)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Error("cannot resolve the payments of silent replicas", "err", err)
	case rep != RecoverReport{}:
		log.Info("resolved the payments of silent replicas", "settled", rep.Settled,
			"released", rep.Released, "failed", rep.Failed, "left_settling", rep.Left)
	}
}

// startKeepAlive runs keepAlive every lease/3 in the background until the
// returned loop is closed. A nil log discards the events.
func startKeepAlive(l Ledger, lease time.Duration, s Settler, log *slog.Logger) *every.Loop {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return every.Start(lease/3, func(ctx context.Context) { keepAlive(ctx, l, s, log) })
}
