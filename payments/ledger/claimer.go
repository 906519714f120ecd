package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimerState is the fleet's claimer lease (one row) and the claim
// passes asked for and run.
type ClaimerState struct {
	// Replica holds the lease since Since; empty when nobody took it yet.
	Replica string
	Since   time.Time
	// Live reports that Replica's heartbeat is within the lease, by the
	// database's clock: its lease holds.
	Live bool
	// RequestedAt is when a pass was last asked for (a withdrawal seen, a
	// refund, `sandboxd ledger claim`), LastPassAt when the last one ran;
	// zero for never.
	RequestedAt, LastPassAt time.Time
}

// execer is a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// TakeClaimer takes or renews the claimer lease, one per fleet, and
// reports whether this replica holds it: it takes a lease nobody holds
// or one of a replica whose heartbeat is older than the lease (by the
// database's clock, as ClaimStale), and keeps its own. Two replicas never
// both get true from the same state of the row: the insert and the
// compare-and-set each decide in one statement.
func (l *SQL) TakeClaimer(ctx context.Context) (bool, error) {
	const op = "payments.ledger.claimer_take"
	if err := l.checkWrite(); err != nil {
		return false, ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("claimer_take")()
	now, d := l.stamp(), l.dialect
	res, err := l.db.ExecContext(ctx, d.bind(`INSERT INTO channel_claimer (id, replica, since) VALUES (1, ?, ?)
ON CONFLICT (id) DO NOTHING`), l.replica, now)
	if err = affected(res, err, errNoRow); err == nil {
		return true, nil
	}
	if !errors.Is(err, errNoRow) {
		return false, ledgerError(op, err)
	}
	res, err = l.db.ExecContext(ctx, d.bind(`UPDATE channel_claimer
SET since = CASE WHEN replica = ? THEN since ELSE ? END, replica = ?
WHERE id = 1 AND (replica = ? OR replica NOT IN (SELECT id FROM replicas WHERE seen_at >= `+d.dbAgo+`))`),
		l.replica, now, l.replica, l.replica, l.lease.Seconds())
	switch err = affected(res, err, errNoRow); {
	case err == nil:
		return true, nil
	case errors.Is(err, errNoRow):
		return false, nil
	}
	return false, ledgerError(op, err)
}

// errNoRow is the cause when a write matched no row, where that is an
// answer rather than an error.
var errNoRow = errors.New("no row")

// RequestClaim asks the claimer for a pass now: its requested_at becomes
// now, later than its last pass.
func (l *SQL) RequestClaim(ctx context.Context) error {
	const op = "payments.ledger.claimer_request"
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("claimer_request")()
	if err := l.requestClaim(ctx, l.db); err != nil {
		return ledgerError(op, err)
	}
	return nil
}

// requestClaim stamps the claimer's requested_at through e, making the
// row if the lease was never taken.
func (l *SQL) requestClaim(ctx context.Context, e execer) error {
	_, err := e.ExecContext(ctx, l.dialect.bind(`INSERT INTO channel_claimer (id, replica, since, requested_at)
VALUES (1, '', '', ?) ON CONFLICT (id) DO UPDATE SET requested_at = excluded.requested_at`), l.stamp())
	return err
}

// ClaimerState returns the claimer lease and its requests; the zero state
// when nobody ever took or asked for it.
func (l *SQL) ClaimerState(ctx context.Context) (ClaimerState, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	var s ClaimerState
	var since, requested, last string
	err := l.db.QueryRowContext(ctx, l.dialect.bind(`SELECT c.replica, c.since, c.requested_at, c.last_pass_at,
	EXISTS (SELECT 1 FROM replicas WHERE id = c.replica AND seen_at >= `+l.dialect.dbAgo+`)
FROM channel_claimer c WHERE c.id = 1`), l.lease.Seconds()).Scan(&s.Replica, &since, &requested, &last, &s.Live)
	if errors.Is(err, sql.ErrNoRows) {
		return ClaimerState{}, nil
	}
	if err != nil {
		return ClaimerState{}, ledgerError("payments.ledger.claimer_state", err)
	}
	s.Since, s.RequestedAt, s.LastPassAt = parseStamp(since), parseStamp(requested), parseStamp(last)
	return s, nil
}

// ClaimPassDone records that a claim pass that began at at is done:
// requests made before at are served.
func (l *SQL) ClaimPassDone(ctx context.Context, at time.Time) error {
	const op = "payments.ledger.claimer_pass"
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("claimer_pass")()
	_, err := l.db.ExecContext(ctx, l.dialect.bind(`INSERT INTO channel_claimer (id, replica, since, last_pass_at)
VALUES (1, '', '', ?) ON CONFLICT (id) DO UPDATE SET last_pass_at = excluded.last_pass_at`), formatStamp(at))
	if err != nil {
		return ledgerError(op, err)
	}
	return nil
}
