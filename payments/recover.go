package payments

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// RecoverReport counts what Recover did with the rows a crash left
// reserved or settling.
type RecoverReport struct {
	// Settled rows were settling and found used on chain: collected.
	Settled int
	// Released rows were reserved (no settlement was sent), or settling and
	// found unused on chain: nothing was collected.
	Released int
	// Failed rows were settling under a settler that cannot tell whether
	// they were collected: marked failed, reasonUnknownAfterRestart.
	Failed int
	// Left rows stay settling: the chain could not be asked, or the row's
	// key is malformed. The next start tries them again.
	Left int
}

// resolve settles the open rows given (this replica's own, left by a crash
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
//     facilitator): failed with reasonUnknownAfterRestart, logged at warn
//     with the payer and nonce for an operator to look up. The signed
//     authorization then never buys a second answer, whether or not it was
//     collected.
//
// A row another replica took over meanwhile (errNotReserved) is skipped.
// Only a ledger failure is returned as an error. A nil log discards the
// events.
func (l *SQLLedger) resolve(ctx context.Context, s Settler, open []Entry, log *slog.Logger) (RecoverReport, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep RecoverReport
	for _, e := range open {
		elog := log.With("payer", e.Payer, "nonce", e.Nonce, "status", e.Status, "reserved_at", e.Created)
		var err error
		if e.Status == StatusReserved {
			if err = l.MarkReleased(ctx, e.Payer, e.Nonce); err == nil {
				elog.Info("recovered payment: its settlement was never sent, released")
				rep.Released++
			}
		} else {
			err = l.recoverSettling(ctx, s, e, elog, &rep)
		}
		if errors.Is(err, errNotReserved) {
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
func (l *SQLLedger) recoverSettling(ctx context.Context, s Settler, e Entry, log *slog.Logger, rep *RecoverReport) error {
	nonce, err := hexutil.Decode(e.Nonce)
	if err != nil || len(nonce) != 32 || !common.IsHexAddress(e.Payer) {
		log.Error("ledger row has a malformed key; left settling")
		rep.Left++
		return nil
	}
	used, err := s.NonceUsed(ctx, common.HexToAddress(e.Payer), [32]byte(nonce))
	switch {
	case errors.Is(err, errNonceStateUnknown):
		if err := l.MarkFailed(ctx, e.Payer, e.Nonce, e.TxHash, reasonUnknownAfterRestart); err != nil {
			return err
		}
		log.Warn("a settlement's outcome is unknown (in flight at a stop, or pending) and the settler cannot tell "+
			"whether it was collected; marked failed, so this payment is never admitted again (look the payer and nonce up on chain)",
			"reason", reasonUnknownAfterRestart)
		rep.Failed++
	case err != nil:
		log.Warn("a settlement's outcome is unknown (in flight at a stop, or pending); asking the chain failed, "+
			"so it stays settling (refused) until it is asked again", "err", err)
		rep.Left++
	case used:
		if err := l.MarkSettled(ctx, e.Payer, e.Nonce, e.TxHash, ""); err != nil {
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
