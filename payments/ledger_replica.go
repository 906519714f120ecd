package payments

import (
	"context"
	"log/slog"
	"time"
)

// Heartbeat records that this replica is alive now, by the database's
// clock. Another replica resolves this one's open rows only after it has
// been silent for longer than the lease, by the same clock: replicas'
// clocks differ (a replica 31 s ahead would otherwise find a live one's
// 30 s lease over and release its reservations in flight), the database's
// is one.
func (l *SQLLedger) Heartbeat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	_, err := l.db.ExecContext(ctx, l.dialect.bind(`INSERT INTO replicas (id, seen_at) VALUES (?, `+l.dialect.dbNow+`)
ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`), l.replica)
	if err != nil {
		return ledgerError("payments.ledger.heartbeat", err)
	}
	return nil
}

// claimStale makes this replica the holder of the open rows of every
// replica silent for longer than the lease (by the database's clock, as
// Heartbeat stamps) (or with no heartbeat at all,
// as rows written before replicas existed), in one statement, and returns
// them. From then on only this replica can move them: the silent one, if
// it was only slow, finds its rows gone (errNotReserved) and sends no
// settlement. A live replica's rows are never taken.
func (l *SQLLedger) claimStale(ctx context.Context) ([]Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`UPDATE payments SET replica = ?, updated_at = ?
WHERE status IN ('reserved', 'settling') AND replica <> ?
	AND replica NOT IN (SELECT id FROM replicas WHERE seen_at >= `+l.dialect.dbAgo+`)
RETURNING `+entryColumns), l.replica, l.stamp(), l.replica, l.lease.Seconds())
	if err != nil {
		return nil, ledgerError("payments.ledger.claim", err)
	}
	return scanEntries(rows)
}

// Recover resolves the rows this replica's previous run left open and
// those of replicas silent for longer than the lease (see resolve).
func (l *SQLLedger) Recover(ctx context.Context, s Settler, log *slog.Logger) (RecoverReport, error) {
	if _, err := l.claimStale(ctx); err != nil {
		return RecoverReport{}, err
	}
	open, err := l.Pending(ctx)
	if err != nil {
		return RecoverReport{}, err
	}
	return l.resolve(ctx, s, open, log)
}

// RecoverStale resolves the open rows of replicas silent for longer than
// the lease, never this replica's own (they may be in flight).
func (l *SQLLedger) RecoverStale(ctx context.Context, s Settler, log *slog.Logger) (RecoverReport, error) {
	claimed, err := l.claimStale(ctx)
	if err != nil {
		return RecoverReport{}, err
	}
	return l.resolve(ctx, s, claimed, log)
}

// keepAlive beats l's heartbeat and resolves the rows of silent replicas
// once: one pass of the loop startKeepAlive runs.
func keepAlive(ctx context.Context, l Ledger, s Settler, log *slog.Logger) {
	if err := l.Heartbeat(ctx); err != nil {
		log.Error("cannot record this replica's heartbeat; after the lease others resolve its open payments", "err", err)
		return
	}
	rep, err := l.RecoverStale(ctx, s, log)
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
func startKeepAlive(l Ledger, lease time.Duration, s Settler, log *slog.Logger) *loop {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return startLoop(lease/3, func(ctx context.Context) { keepAlive(ctx, l, s, log) })
}
