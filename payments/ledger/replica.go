package ledger

import (
	"context"
	"time"
)

// Heartbeat records that this replica is alive now, by the database's
// clock. Another replica resolves this one's open rows only after it has
// been silent for longer than the lease, by the same clock: replicas'
// clocks differ (a replica 31 s ahead would otherwise find a live one's
// 30 s lease over and release its reservations in flight), the database's
// is one.
func (l *SQL) Heartbeat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	_, err := l.db.ExecContext(ctx, l.dialect.bind(`INSERT INTO replicas (id, seen_at) VALUES (?, `+l.dialect.dbNow+`)
ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`), l.replica)
	if err != nil {
		return ledgerError("payments.ledger.heartbeat", err)
	}
	return nil
}

// ClaimStale makes this replica the holder of the open rows of every
// replica silent for longer than the lease (by the database's clock, as
// Heartbeat stamps) (or with no heartbeat at all,
// as rows written before replicas existed), in one statement, and returns
// them. From then on only this replica can move them: the silent one, if
// it was only slow, finds its rows gone (ErrNotReserved) and sends no
// settlement. A live replica's rows are never taken.
func (l *SQL) ClaimStale(ctx context.Context) ([]Entry, error) {
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

// As returns a view of l that acts as the replica id, with the clock now
// (nil keeps l's): the same database and connections, closed with l. On
// SQLite, which one process owns, it stands for another host of a fleet.
func (l *SQL) As(id string, now func() time.Time) *SQL {
	v := *l
	v.replica = id
	if now != nil {
		v.now = now
	}
	return &v
}
