package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"sandboxd"
)

// Charge is one increment a channel was charged (a channel_charges row).
type Charge struct {
	// ChannelID is the channel's id.
	ChannelID string
	// ChargedAfter is the channel's charged total with this increment,
	// Amount the increment and VoucherMax the voucher that paid it.
	ChargedAfter, Amount, VoucherMax *big.Int
	// Resource is what the increment bought; Replica charged it.
	Resource, Replica string
	// CreatedAt is when it was charged.
	CreatedAt time.Time
}

// ChannelFilter selects rows for ListChannels; zero fields select
// everything.
type ChannelFilter struct {
	// Payer keeps the channels of one payer address (any case).
	Payer string
	// State is ChannelOpen, ChannelRefunding or ChannelClosed.
	State string
	// Limit caps the rows returned; zero means no cap.
	Limit int
}

// Channel returns the row of channel id, or ErrNoChannel.
func (l *SQL) Channel(ctx context.Context, id string) (Channel, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	c, err := l.channel(ctx, l.stmts.in(nil), key(id), false)
	return c, channelError("payments.ledger.channel", id, err)
}

// MirrorDue returns up to limit (0: all) open or refunding channels, the
// longest since their mirror was read first: the mirror's next batch.
func (l *SQL) MirrorDue(ctx context.Context, limit int) ([]Channel, error) {
	return l.channels(ctx, `WHERE state IN ('open', 'refunding') ORDER BY synced_at, channel_id`+limitClause(limit))
}

// Claimable returns up to limit (0: all) open or refunding channels that
// were charged more than the escrow says was claimed, the oldest charge
// first: the claimer's next batch.
func (l *SQL) Claimable(ctx context.Context, limit int) ([]Channel, error) {
	rows, err := l.channels(ctx, `WHERE state IN ('open', 'refunding') AND charged <> claimed
ORDER BY last_charged_at, channel_id`+limitClause(limit))
	if err != nil {
		return nil, err
	}
	// SQL compared the totals as text; only Go orders them.
	return slices.DeleteFunc(rows, func(c Channel) bool { return c.Charged.Cmp(c.Claimed) <= 0 }), nil
}

// ListChannels returns the channels that match f, newest first.
func (l *SQL) ListChannels(ctx context.Context, f ChannelFilter) ([]Channel, error) {
	q, args := payerStateWhere(f.Payer, f.State)
	return l.channels(ctx, q+" ORDER BY created_at DESC, channel_id"+limitClause(f.Limit), args...)
}

// payerStateWhere is the WHERE clause of an operator's listing that keeps
// the rows of payer and in state, each when set, and its arguments; "" to
// keep every row.
func payerStateWhere(payer, state string) (string, []any) {
	var where []string
	var args []any
	if payer != "" {
		where, args = append(where, "payer = ?"), append(args, key(payer))
	}
	if state != "" {
		where, args = append(where, "state = ?"), append(args, state)
	}
	if len(where) == 0 {
		return "", nil
	}
	return "WHERE " + strings.Join(where, " AND "), args
}

// ChannelCharges returns the increments channel id was charged, the oldest
// first.
func (l *SQL) ChannelCharges(ctx context.Context, id string) ([]Charge, error) {
	const op = "payments.ledger.channel_charges"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT channel_id, charged_after, amount, voucher_max,
	resource, replica, created_at FROM channel_charges WHERE channel_id = ?`), key(id))
	if err != nil {
		return nil, ledgerError(op, err)
	}
	defer rows.Close()
	var out []Charge
	for rows.Next() {
		var c Charge
		var after, amount, max, created string
		if err := rows.Scan(&c.ChannelID, &after, &amount, &max, &c.Resource, &c.Replica, &created); err != nil {
			return nil, ledgerError(op, err)
		}
		var p amounts
		c.ChargedAfter, c.Amount, c.VoucherMax = p.parse(after), p.parse(amount), p.parse(max)
		if p.err != nil {
			return nil, ledgerError(op, p.err)
		}
		c.CreatedAt = parseStamp(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError(op, err)
	}
	// The totals only grow: their order is the charges' order.
	slices.SortFunc(out, func(a, b Charge) int { return a.ChargedAfter.Cmp(b.ChargedAfter) })
	return out, nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// channel reads the row of channel id (lower case) through q, locked for
// the transaction's write when lock is set; ErrNoChannel when there is none.
func (l *SQL) channel(ctx context.Context, q querier, id string, lock bool) (Channel, error) {
	sfx := ""
	if lock {
		sfx = l.dialect.forUpdate
	}
	c, err := scanChannel(q.QueryRowContext(ctx, l.dialect.bind(`SELECT `+channelColumns+`
FROM channels WHERE channel_id = ?`+sfx), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Channel{}, ErrNoChannel
	}
	return c, err
}

// channels returns the rows of a query's tail (WHERE, ORDER, LIMIT).
func (l *SQL) channels(ctx context.Context, tail string, args ...any) ([]Channel, error) {
	const op = "payments.ledger.channels"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT `+channelColumns+` FROM channels `+tail), args...)
	return collect(op, rows, err, func(r *sql.Rows) (Channel, error) { return scanChannel(r) })
}

// collect reads every row of a query that returned rows and err, with
// scan, and closes them; a failure is ledgerError of op.
func collect[T any](op string, rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, ledgerError(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, ledgerError(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError(op, err)
	}
	return out, nil
}

// channelError names the channel in a channel error, or wraps a database
// failure as ledgerError.
func channelError(op, id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoChannel), errors.Is(err, ErrChannelMoved), errors.Is(err, ErrHoldLost),
		errors.Is(err, ErrAnswerTaken):
		return fmt.Errorf("%s: channel %s: %w", op, key(id), err)
	}
	var se *sandboxd.Error
	if errors.As(err, &se) {
		return err
	}
	return ledgerError(op, err)
}

// affected is none when a write (res, err) changed no row.
func affected(res sql.Result, err error, none error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return none
	}
	return nil
}

// inTx runs fn in a transaction, committed when fn returns nil.
func (l *SQL) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return inTxOn(ctx, l.db, fn)
}

// beginner is a *sql.DB or a *sql.Conn.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// inTxOn runs fn in a transaction begun on b, committed when fn returns
// nil.
func inTxOn(ctx context.Context, b beginner, fn func(tx *sql.Tx) error) error {
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
