package payments

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// RecoverReport counts what Recover did with the rows it found reserved.
type RecoverReport struct {
	// Settled rows were found used on chain: the payment was collected.
	Settled int
	// Released rows were not used on chain: nothing was collected.
	Released int
	// Left rows stay reserved: the settler could not tell, or failed.
	Left int
}

// Recover resolves the rows a crash left reserved. For each, it asks the
// settler whether the nonce was used on chain: if so the row becomes
// settled (with no transaction hash, which is not known), if not released,
// so the payer may offer the payment again. When the settler cannot tell
// (ErrNonceStateUnknown, e.g. a facilitator) or fails, the row stays
// reserved and is logged: that refuses a retry of the payment rather than
// risk running twice for one collected payment, and the payer's
// authorization simply expires if it was never settled. Only a ledger
// failure is returned as an error. A nil log discards the events.
func (l *Ledger) Recover(ctx context.Context, s Settler, log *slog.Logger) (RecoverReport, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep RecoverReport
	pending, err := l.Pending(ctx)
	if err != nil {
		return rep, err
	}
	for _, e := range pending {
		elog := log.With("payer", e.Payer, "nonce", e.Nonce, "reserved_at", e.Created)
		nonce, err := hexutil.Decode(e.Nonce)
		if err != nil || len(nonce) != 32 || !common.IsHexAddress(e.Payer) {
			elog.Error("payments: ledger row has a malformed key; left reserved")
			rep.Left++
			continue
		}
		used, err := s.NonceUsed(ctx, common.HexToAddress(e.Payer), [32]byte(nonce))
		switch {
		case errors.Is(err, ErrNonceStateUnknown):
			elog.Warn("payments: payment left reserved by a crash; the settler cannot tell whether it was collected, so it stays reserved")
			rep.Left++
		case err != nil:
			elog.Warn("payments: payment left reserved by a crash; checking it on chain failed, it stays reserved", "err", err)
			rep.Left++
		case used:
			if err := l.MarkSettled(ctx, e.Payer, e.Nonce, "", ""); err != nil {
				return rep, err
			}
			elog.Info("payments: recovered payment: used on chain, marked settled")
			rep.Settled++
		default:
			if err := l.MarkReleased(ctx, e.Payer, e.Nonce); err != nil {
				return rep, err
			}
			elog.Info("payments: recovered payment: not used on chain, released")
			rep.Released++
		}
	}
	return rep, nil
}
