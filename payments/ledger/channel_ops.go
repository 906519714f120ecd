package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"sandboxd"
)

// The kinds of a channel operation: a transaction this service sends on
// channels, never a payer's.
const (
	// OpClaim claims charged vouchers.
	OpClaim = "claim"
	// OpSweep moves claimed funds from the escrow to the receiver.
	OpSweep = "sweep"
	// OpRefund claims a channel's charges and refunds the rest to its payer.
	OpRefund = "refund"
)

// The states of a channel operation. It is recorded sending before the
// transaction leaves, so a crash cannot hide one that was sent.
const (
	OpSending = "sending"
	OpMined   = "mined"
	OpFailed  = "failed"
	// OpPending: sent, and its outcome is not known yet.
	OpPending = "pending"
)

// ErrNoOp is returned by UpdateOp when no operation has the id.
var ErrNoOp = errors.New("the ledger has no such channel operation")

// Op is a channel operation (a channel_ops row).
type Op struct {
	// ID names it; the caller makes it unique.
	ID string
	// Kind is OpClaim, OpSweep or OpRefund; Replica sent it.
	Kind, Replica string
	// Status is OpSending, OpMined, OpFailed or OpPending.
	Status string
	// TxHash is the transaction, when known.
	TxHash string
	// Channels counts the channels it covers; Amount is what it moved.
	Channels int
	Amount   *big.Int
	// GasUsed is from its receipt.
	GasUsed uint64
	// Reason says why it failed.
	Reason string
	// CreatedAt and UpdatedAt are the ledger's stamps.
	CreatedAt, UpdatedAt time.Time
}

// RecordOp records op before its transaction is sent: empty Status means
// OpSending and empty Replica this replica.
func (l *SQL) RecordOp(ctx context.Context, op Op) error {
	const name = "payments.ledger.channel_op"
	if op.Status == "" {
		op.Status = OpSending
	}
	if op.Replica == "" {
		op.Replica = l.replica
	}
	if op.ID == "" || !validKind(op.Kind) || !validStatus(op.Status) {
		return sandboxd.Errorf(sandboxd.CodeInternal, name, "channel operation %q: kind %q or status %q is not one of "+
			"the ledger's, or it has no id", op.ID, op.Kind, op.Status)
	}
	if err := l.checkWrite(); err != nil {
		return ledgerError(name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_op")()
	now := l.stamp()
	_, err := l.db.ExecContext(ctx, l.dialect.bind(`INSERT INTO channel_ops (id, kind, replica, status, tx_hash,
	channels, amount, gas_used, reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		op.ID, op.Kind, op.Replica, op.Status, key(op.TxHash), op.Channels, amountText(op.Amount),
		int64(op.GasUsed), op.Reason, now, now)
	if err != nil {
		return ledgerError(name, err)
	}
	return nil
}

// UpdateOp writes op's status, transaction, amount, gas and reason to the
// operation of its id. ErrNoOp when there is none.
func (l *SQL) UpdateOp(ctx context.Context, op Op) error {
	const name = "payments.ledger.channel_op"
	if !validStatus(op.Status) {
		return sandboxd.Errorf(sandboxd.CodeInternal, name, "channel operation %q: status %q is not one of the ledger's",
			op.ID, op.Status)
	}
	if err := l.checkWrite(); err != nil {
		return ledgerError(name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("channel_op")()
	res, err := l.db.ExecContext(ctx, l.dialect.bind(`UPDATE channel_ops SET status = ?, tx_hash = ?, amount = ?,
	gas_used = ?, reason = ?, updated_at = ? WHERE id = ?`),
		op.Status, key(op.TxHash), amountText(op.Amount), int64(op.GasUsed), op.Reason, l.stamp(), op.ID)
	switch err := affected(res, err, ErrNoOp); {
	case errors.Is(err, ErrNoOp):
		return fmt.Errorf("%s: %s: %w", name, op.ID, err)
	case err != nil:
		return ledgerError(name, err)
	}
	return nil
}

// ListOps returns the operations recorded at or after since, oldest first.
func (l *SQL) ListOps(ctx context.Context, since time.Time) ([]Op, error) {
	const name = "payments.ledger.channel_ops"
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, l.dialect.bind(`SELECT id, kind, replica, status, tx_hash, channels, amount,
	gas_used, reason, created_at, updated_at FROM channel_ops WHERE created_at >= ? ORDER BY created_at, id`),
		formatStamp(since))
	if err != nil {
		return nil, ledgerError(name, err)
	}
	defer rows.Close()
	var out []Op
	for rows.Next() {
		var op Op
		var amount, created, updated string
		var gas int64
		if err := rows.Scan(&op.ID, &op.Kind, &op.Replica, &op.Status, &op.TxHash, &op.Channels, &amount, &gas,
			&op.Reason, &created, &updated); err != nil {
			return nil, ledgerError(name, err)
		}
		if op.Amount, err = parseAmount(amount); err != nil {
			return nil, ledgerError(name, err)
		}
		op.GasUsed, op.CreatedAt, op.UpdatedAt = uint64(gas), parseStamp(created), parseStamp(updated)
		out = append(out, op)
	}
	if err := rows.Err(); err != nil {
		return nil, ledgerError(name, err)
	}
	return out, nil
}

// validKind reports whether kind is one of the Op kinds.
func validKind(kind string) bool {
	return kind == OpClaim || kind == OpSweep || kind == OpRefund
}

// validStatus reports whether status is one of the Op states.
func validStatus(status string) bool {
	return status == OpSending || status == OpMined || status == OpFailed || status == OpPending
}
