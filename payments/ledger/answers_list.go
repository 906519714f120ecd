package ledger

import (
	"context"
	"database/sql"
)

// AnswerFilter selects answers rows for ListAnswers; zero fields select
// everything.
type AnswerFilter struct {
	// Payer keeps the rows of one payer address (any case).
	Payer string
	// State is AnswerRunning, AnswerHeld, AnswerPending or AnswerReady.
	State string
	// Limit caps the rows returned; zero means no cap.
	Limit int
}

// AnswerStatsRow sums the answers rows in one state: how many, the bytes
// kept (what the budget of SweepAnswers counts), the answers' sizes kept
// or not, and how many lost their bytes, too large or evicted. Rows past
// their expiry that no sweep deleted yet are counted: they hold bytes.
type AnswerStatsRow struct {
	State                      string
	Count, BodyBytes           int64
	AnswerBytes                int64
	TooLarge, Evicted, Expired int64
}

// ListAnswers returns the answers rows f selects, newest first, without
// their bytes (an operator's view: the bodies are the payers').
func (l *SQL) ListAnswers(ctx context.Context, f AnswerFilter) ([]AnswerMeta, error) {
	const op = "payments.ledger.answer_list"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	where, args := payerStateWhere(f.Payer, f.State)
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT `+answerColumns+` FROM answers `+where+
		" ORDER BY created_at DESC, payer, payment_key"+limitClause(f.Limit)), args...)
	return collect(op, rows, err, func(r *sql.Rows) (AnswerMeta, error) { return scanAnswer(r) })
}

// AnswerStats sums the answers rows by state, in the order of the states.
func (l *SQL) AnswerStats(ctx context.Context) ([]AnswerStatsRow, error) {
	const op = "payments.ledger.answer_stats"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, `SELECT state, COUNT(*), COALESCE(SUM(body_bytes), 0),
	COALESCE(SUM(answer_bytes), 0), COALESCE(SUM(CASE WHEN dropped = 'too_large' THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN dropped = 'evicted' THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN expires_at <= `+l.dialect.dbNow+` THEN 1 ELSE 0 END), 0)
FROM answers GROUP BY state`)
	if err != nil {
		return nil, ledgerError(op, err)
	}
	defer rows.Close()
	by := map[string]AnswerStatsRow{}
	for rows.Next() {
		var r AnswerStatsRow
		if err := rows.Scan(&r.State, &r.Count, &r.BodyBytes, &r.AnswerBytes, &r.TooLarge, &r.Evicted,
			&r.Expired); err != nil {
			return nil, ledgerError(op, err)
		}
		by[r.State] = r
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError(op, err)
	}
	var out []AnswerStatsRow
	for _, s := range []string{AnswerRunning, AnswerHeld, AnswerPending, AnswerReady} {
		if r, ok := by[s]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}
