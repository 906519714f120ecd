package ledger

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"
)

// Filter selects rows for List; zero fields select everything.
type Filter struct {
	// State is one of the Status constants.
	State string
	// Since keeps rows reserved at or after it.
	Since time.Time
	// Payer keeps the rows of one payer address (any case).
	Payer string
	// Limit caps the rows returned; zero means no cap.
	Limit int
}

// StatsRow is the count and the sum of amounts (atomic units, decimal) of
// the rows in one state reserved on one day (UTC, YYYY-MM-DD).
type StatsRow struct {
	Day, State string
	Count      int64
	Amount     string
}

// List returns the rows that match f, newest first.
func (l *SQL) List(ctx context.Context, f Filter) ([]Entry, error) {
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
func (l *SQL) Stats(ctx context.Context) ([]StatsRow, error) {
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

// Get returns the row of (payer, nonce), or sql.ErrNoRows.
func (l *SQL) Get(ctx context.Context, payer, nonce string) (Entry, error) {
	rows, err := l.query(ctx, `WHERE payer = ? AND nonce = ?`, key(payer), key(nonce))
	if err != nil {
		return Entry{}, err
	}
	if len(rows) == 0 {
		return Entry{}, sql.ErrNoRows
	}
	return rows[0], nil
}

// Pending lists this replica's rows still reserved or settling, oldest
// first. At start these are the payments a crash left unresolved.
func (l *SQL) Pending(ctx context.Context) ([]Entry, error) {
	return l.query(ctx, `WHERE status IN ('reserved', 'settling') AND replica = ? ORDER BY created_at`, l.replica)
}

// PendingSettlements lists this replica's settling rows marked
// ReasonSettlementPending, oldest first: the settlements whose outcome it
// did not learn. Rows settling without that mark are in flight in some
// request and are left out.
func (l *SQL) PendingSettlements(ctx context.Context) ([]Entry, error) {
	return l.query(ctx, `WHERE status = 'settling' AND reason = ? AND replica = ? ORDER BY created_at`,
		ReasonSettlementPending, l.replica)
}

// entryColumns are the columns scanEntries reads, in its order.
const entryColumns = `payer, nonce, created_at, updated_at, amount, network, asset, status, tx_hash,
	run_status, reason, replica, channel_id`

func (l *SQL) query(ctx context.Context, where string, args ...any) ([]Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT `+entryColumns+` FROM payments `+where), args...)
	if err != nil {
		return nil, ledgerError("payments.ledger.query", err)
	}
	return scanEntries(rows)
}

// scanEntries reads rows of entryColumns and closes them.
func scanEntries(rows *sql.Rows) ([]Entry, error) {
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var created, updated string
		if err := rows.Scan(&e.Payer, &e.Nonce, &created, &updated, &e.Amount, &e.Network,
			&e.Asset, &e.Status, &e.TxHash, &e.RunStatus, &e.Reason, &e.Replica, &e.ChannelID); err != nil {
			return nil, ledgerError("payments.ledger.query", err)
		}
		e.Created, _ = time.Parse(time.RFC3339Nano, created)
		e.Updated, _ = time.Parse(time.RFC3339Nano, updated)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError("payments.ledger.query", err)
	}
	return out, nil
}
