package payments

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// List returns the rows that match f, newest first.
func (l *SQLLedger) List(ctx context.Context, f Filter) ([]Entry, error) {
	var where []string
	var args []any
	if f.State != "" {
		where = append(where, "status = ?")
		args = append(args, f.State)
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, formatStamp(f.Since))
	}
	if f.Payer != "" {
		where = append(where, "payer = ?")
		args = append(args, key(f.Payer))
	}
	q := ""
	if len(where) > 0 {
		q = "WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, nonce"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	return l.query(ctx, q, args...)
}

// Stats returns the count and amount of the rows in each state, by day,
// oldest day first.
func (l *SQLLedger) Stats(ctx context.Context) ([]StatsRow, error) {
	const op = "payments.ledger.stats"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, `SELECT substr(created_at, 1, 10) AS day, status, COUNT(*), `+
		l.dialect.sumAmount+` FROM payments GROUP BY day, status ORDER BY day, status`)
	if err != nil {
		return nil, ledgerError(op, err)
	}
	defer rows.Close()
	var out []StatsRow
	for rows.Next() {
		var r StatsRow
		var sum sql.NullString
		if err := rows.Scan(&r.Day, &r.State, &r.Count, &sum); err != nil {
			return nil, ledgerError(op, err)
		}
		r.Amount = sum.String
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError(op, err)
	}
	return out, nil
}
