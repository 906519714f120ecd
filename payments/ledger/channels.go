package ledger

import (
	"context"
	"database/sql"
	"errors"
	"math/big"
	"time"

	"sandboxd"
	"sandboxd/x402/channel"
)

// The states of a channel row. A channel is open (vouchers, deposits,
// claims), refunding while a refund is in flight, then open again (a
// partial refund) or closed (what was left is refunded); a new deposit
// reopens a closed channel. Whether a request holds the next increment
// (Hold) is apart from the state.
const (
	ChannelOpen      = "open"
	ChannelRefunding = "refunding"
	ChannelClosed    = "closed"
)

// ErrNoChannel is returned when the ledger has no row for a channel id.
var ErrNoChannel = errors.New("the ledger has no such channel")

// ErrChannelMoved is returned when a compare-and-set on a channel matched
// no row: its running total moved, it is not in the state the move starts
// from, another request holds its next increment, or there is no row. The
// caller reads the row again to answer.
var ErrChannelMoved = errors.New("the channel moved: its charged total, its state or its hold changed")

// ErrHoldLost is returned by CommitIncrement and ReleaseIncrement when the
// request's hold is gone: another request took it over once it lapsed (or
// its replica's lease did), or the channel's total moved under it. Nothing
// was charged.
var ErrHoldLost = errors.New("this request's hold on the channel is gone; nothing was charged")

// Channel is a channel row: the channel's immutable configuration, what
// this service charged on it (and the voucher covering that), the mirror
// of the escrow's state, and the hold of the request in flight, if any.
type Channel struct {
	// ID is the channel id, 0x and 64 lower-case hex digits.
	ID string
	// Network is the CAIP-2 network.
	Network string
	// Config is the channel's configuration, whose hash is ID.
	Config channel.Config
	// State is ChannelOpen, ChannelRefunding or ChannelClosed.
	State string
	// Charged is what the delivered answers were charged in all.
	Charged *big.Int
	// VoucherMax and VoucherSig are the payer's voucher covering Charged
	// (0 and nil before the first).
	VoucherMax *big.Int
	VoucherSig []byte
	// Balance, Claimed, WithdrawAmount, WithdrawAt (unix seconds, 0 for
	// none) and RefundNonce mirror the escrow, as read at SyncedAt (the
	// zero time: never).
	Balance, Claimed, WithdrawAmount *big.Int
	WithdrawAt                       int64
	RefundNonce                      *big.Int
	SyncedAt                         time.Time
	// Hold is the request holding the next increment, or nil. A lapsed
	// hold is still returned: its Until says so.
	Hold *Hold
	// Calls counts the increments charged.
	Calls int64
	// CreatedAt, UpdatedAt and LastChargedAt (zero before the first
	// charge) are the ledger's stamps.
	CreatedAt, UpdatedAt, LastChargedAt time.Time
}

// Hold is a request's reservation of a channel's next increment: Amount
// on top of the charged total, paid by the voucher (Max, Sig).
type Hold struct {
	// ID names the request; the caller makes it unique.
	ID string
	// Amount is the increment, Max the voucher's running total.
	Amount, Max *big.Int
	// Sig is the voucher's signature.
	Sig []byte
	// Replica holds it; ReserveIncrement sets it to this ledger's replica.
	Replica string
	// Until is when the hold lapses and another request may take it. It
	// is kept on the database's clock, as the replicas' lease is: a
	// replica whose clock runs ahead cannot take a live hold early.
	Until time.Time
	// Answer, when set, is the answer ReserveIncrement claims with the
	// hold (answers.go), keyed by the channel's payer and
	// VoucherKey(id, Max). Reads leave it nil.
	Answer *AnswerRow
}

// clearHold is the SET clause that drops a channel's hold.
const clearHold = `pending_id = '', pending_amount = '', pending_max = '', pending_sig = '',
	pending_replica = '', pending_until = ''`

// holdFree is the condition that no live request holds a channel: no hold,
// a lapsed one, or one of a replica whose lease ran out (by the database's
// clock). Its one argument is the lease in seconds.
func (l *SQL) holdFree() string {
	return `(pending_id = '' OR pending_until < ` + l.dialect.dbNow + `
	OR pending_replica NOT IN (SELECT id FROM replicas WHERE seen_at >= ` + l.dialect.dbAgo + `))`
}

// AdoptChannel stores c (its configuration, state, charged total and
// voucher, and mirror; never a hold or calls) unless the channel has a row
// already, and returns the stored row: a row another request or replica
// adopted first wins. An empty State means ChannelOpen.
func (l *SQL) AdoptChannel(ctx context.Context, c Channel) (Channel, error) {
	const op = "payments.ledger.channel_adopt"
	id, err := channelKey(op, c.ID)
	if err != nil {
		return Channel{}, err
	}
	if c.State == "" {
		c.State = ChannelOpen
	}
	if c.State != ChannelOpen && c.State != ChannelRefunding && c.State != ChannelClosed {
		return Channel{}, sandboxd.Errorf(sandboxd.CodeInternal, op, "channel state %q is not open, refunding or closed", c.State)
	}
	if err := l.checkWrite(); err != nil {
		return Channel{}, ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_adopt")()
	now, cf := l.stamp(), c.Config
	_, err = l.db.ExecContext(ctx, l.dialect.bind(`INSERT INTO channels (channel_id, network, payer,
	payer_authorizer, receiver, receiver_authorizer, token, withdraw_delay, salt, state, charged, voucher_max,
	voucher_sig, balance, claimed, withdraw_amount, withdraw_at, refund_nonce, synced_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id) DO NOTHING`),
		id, c.Network, key(cf.Payer.Hex()), key(cf.PayerAuthorizer.Hex()), key(cf.Receiver.Hex()),
		key(cf.ReceiverAuthorizer.Hex()), key(cf.Token.Hex()), int64(cf.WithdrawDelay), key(cf.Salt.Hex()), c.State,
		amountText(c.Charged), amountText(c.VoucherMax), sigText(c.VoucherSig), amountText(c.Balance),
		amountText(c.Claimed), amountText(c.WithdrawAmount), c.WithdrawAt, amountText(c.RefundNonce),
		stampOrEmpty(c.SyncedAt), now, now)
	if err != nil {
		return Channel{}, ledgerError(op, err)
	}
	out, err := l.channel(ctx, l.db, id, false)
	return out, channelError(op, id, err)
}

// ReserveIncrement makes h, as this replica's, the hold on channel id's
// next increment, if the channel is open, its charged total is expected
// and no live request holds it (none, a lapsed hold, or one of a replica
// whose lease ran out). Across replicas one statement decides: PostgreSQL
// re-evaluates the condition on a row a concurrent writer changed, SQLite
// has one writer. ErrChannelMoved when it matched no row (also when there
// is no row): the caller reads the row to answer.
//
// With h.Answer, one transaction also claims the answer's row:
// ErrAnswerTaken when a live row of another payment holds its id (or its
// key), and then nothing is held.
func (l *SQL) ReserveIncrement(ctx context.Context, id string, expected *big.Int, h Hold) error {
	const op = "payments.ledger.channel_reserve"
	if h.ID == "" || h.Amount == nil || h.Max == nil || expected == nil || h.Until.IsZero() {
		return sandboxd.Errorf(sandboxd.CodeInternal, op, "a hold needs an id, an amount, a voucher total, "+
			"the expected charged total and an end")
	}
	if h.Answer != nil {
		if err := checkAnswer(op, h.Answer); err != nil {
			return err
		}
	}
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_reserve")()
	q := l.dialect.bind(`UPDATE channels SET pending_id = ?, pending_amount = ?,
	pending_max = ?, pending_sig = ?, pending_replica = ?, pending_until = ` + l.dialect.dbIn + `, updated_at = ?
WHERE channel_id = ? AND state = 'open' AND charged = ? AND ` + l.holdFree())
	args := []any{h.ID, h.Amount.String(), h.Max.String(), sigText(h.Sig), l.replica, h.Until.Sub(l.now()).Seconds(),
		l.stamp(), key(id), expected.String(), l.lease.Seconds()}
	// The hold need not be durable (ClearHolds at start): volatileTx.
	l.stmts.warm(ctx, q)
	if h.Answer != nil {
		del, ins := l.claimSQL()
		l.stmts.warm(ctx, l.channelPayerSQL(), del, ins)
	}
	err := l.volatileTx(ctx, func(tx *sql.Tx) error {
		if h.Answer != nil {
			return l.holdAnswered(ctx, tx, id, h, q, args)
		}
		res, err := l.stmts.in(tx).ExecContext(ctx, q, args...)
		return affected(res, err, ErrChannelMoved)
	})
	return channelError(op, id, err)
}

// CommitIncrement charges the increment holdID holds on channel id, whose
// charged total was expected, in one transaction: the total becomes
// expected + the hold's amount, the hold's voucher becomes the channel's,
// the hold is dropped, and a channel_charges row (keyed by the channel and
// the new total, so no increment is ever counted twice) records it with
// resource and this replica. It returns the new row; ErrHoldLost (nothing
// charged) when the hold is gone or the total moved.
//
// With ans, the same transaction makes the hold's running answers row
// ready with ans's bytes and the report ans builds from the new row (an
// error of Report rolls everything back). A nil ans leaves the answers
// row as it is.
func (l *SQL) CommitIncrement(ctx context.Context, id, holdID string, expected *big.Int, resource string,
	ans *AnswerCommit) (Channel, error) {
	const op = "payments.ledger.channel_commit"
	if expected == nil || (ans != nil && (ans.Body == nil || ans.Report == nil)) {
		return Channel{}, sandboxd.Errorf(sandboxd.CodeInternal, op, "a commit needs the expected charged total, "+
			"and an answer commit a body and a report")
	}
	if err := l.checkWrite(); err != nil {
		return Channel{}, ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_commit")()
	id, d := key(id), l.dialect
	held := d.bind(`SELECT pending_amount, pending_max, payer FROM channels
WHERE channel_id = ? AND pending_id = ? AND charged = ?`)
	charge := d.bind(`UPDATE channels SET charged = ?,
	voucher_max = pending_max, voucher_sig = pending_sig, calls = calls + 1, ` + clearHold + `,
	last_charged_at = ?, updated_at = ?
WHERE channel_id = ? AND pending_id = ? AND charged = ? RETURNING ` + channelColumns)
	record := d.bind(`INSERT INTO channel_charges
	(channel_id, charged_after, amount, voucher_max, resource, replica, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	l.stmts.warm(ctx, held, charge, record)
	if ans != nil {
		l.stmts.warm(ctx, l.commitAnswerSQL())
	}
	var out Channel
	err := l.inTx(ctx, func(sqlTx *sql.Tx) error {
		tx := l.stmts.in(sqlTx)
		var text, voucher, payer string
		err := tx.QueryRowContext(ctx, held, id, holdID, expected.String()).Scan(&text, &voucher, &payer)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrHoldLost
		}
		if err != nil {
			return err
		}
		amount, err := parseAmount(text)
		if err != nil {
			return err
		}
		total, now := new(big.Int).Add(expected, amount).String(), l.stamp()
		out, err = scanChannel(tx.QueryRowContext(ctx, charge, total, now, now, id, holdID, expected.String()))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrHoldLost
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, record, id, total, amount.String(), out.VoucherMax.String(), resource, l.replica, now)
		if err != nil || ans == nil {
			return err
		}
		return l.commitAnswer(ctx, sqlTx, payer, id+"/"+voucher, out, ans)
	})
	if err != nil {
		return Channel{}, channelError(op, id, err)
	}
	return out, nil
}

// ReleaseIncrement drops the hold holdID on channel id, and its running
// answers row: its request charges nothing. ErrHoldLost when the hold is
// gone already. Like the hold, its release need not be durable
// (volatileTx).
func (l *SQL) ReleaseIncrement(ctx context.Context, id, holdID string) error {
	const op = "payments.ledger.channel_release"
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_release")()
	err := l.volatileTx(ctx, func(tx *sql.Tx) error {
		if err := l.dropHoldAnswers(ctx, tx, `channel_id = ? AND pending_id = ?`, key(id), holdID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, l.dialect.bind(`UPDATE channels SET `+clearHold+`, updated_at = ?
WHERE channel_id = ? AND pending_id = ?`), l.stamp(), key(id), holdID)
		return affected(res, err, ErrHoldLost)
	})
	return channelError(op, id, err)
}

// ClearHolds drops every hold of this replica, and their running answers
// rows, and returns how many: at start, a replica has no request in
// flight, whatever an earlier process of its id left (as Recover releases
// its reserved payments).
func (l *SQL) ClearHolds(ctx context.Context) (int64, error) {
	const op = "payments.ledger.channel_clear"
	if err := l.checkWrite(); err != nil {
		return 0, ledgerError(op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_clear")()
	var n int64
	err := l.inTx(ctx, func(tx *sql.Tx) error {
		where := `pending_replica = ? AND pending_id <> ''`
		if err := l.dropHoldAnswers(ctx, tx, where, l.replica); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, l.dialect.bind(`UPDATE channels SET `+clearHold+`, updated_at = ?
WHERE `+where), l.stamp(), l.replica)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, ledgerError(op, err)
	}
	return n, nil
}
