package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)

	"sandboxd"
)

// The states of a ledger row.
const (
	// StatusReserved: the payment was admitted and its run is in progress
	// (or the service crashed before it was resolved).
	StatusReserved = "reserved"
	// StatusSettled: the payment was collected.
	StatusSettled = "settled"
	// StatusFailed: settlement was refused or failed; the answer was dropped.
	StatusFailed = "failed"
	// StatusReleased: the service failed to deliver; nothing was collected
	// and the payment may be offered again.
	StatusReleased = "released"
)

// ErrAlreadyUsed is returned by Reserve when the payment's (payer, nonce)
// already has a row that is not released.
var ErrAlreadyUsed = errors.New("this payment was already used")

// ErrNotReserved is returned when a row to be resolved is missing or no
// longer reserved.
var ErrNotReserved = errors.New("payment is not reserved in the ledger")

// Entry is one row of the ledger: one payment, keyed by payer and nonce.
type Entry struct {
	// Payer and Nonce are the key, both stored in lower-case hex.
	Payer, Nonce string
	// Amount is the value in atomic units.
	Amount string
	// Network is the CAIP-2 network and Asset the token address.
	Network, Asset string
	// Status is one of StatusReserved, StatusSettled, StatusFailed,
	// StatusReleased.
	Status string
	// TxHash is the settlement transaction, when known.
	TxHash string
	// RunStatus is the delivered run's status (ok, error, timeout, ...).
	RunStatus string
	// Reason is the x402 error code of a failed settlement.
	Reason string
	// Created and Updated are when the row was reserved and last changed.
	Created, Updated time.Time
}

// Ledger records every payment in SQLite so that one payment buys one run,
// even across concurrent requests and restarts. It is safe for concurrent
// use.
type Ledger struct {
	db  *sql.DB
	now func() time.Time
}

const ledgerSchema = `
CREATE TABLE IF NOT EXISTS payments (
	payer       TEXT NOT NULL,
	nonce       TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	amount      TEXT NOT NULL,
	network     TEXT NOT NULL,
	asset       TEXT NOT NULL,
	status      TEXT NOT NULL CHECK (status IN ('reserved', 'settled', 'failed', 'released')),
	tx_hash     TEXT NOT NULL DEFAULT '',
	run_status  TEXT NOT NULL DEFAULT '',
	reason      TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (payer, nonce)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS payments_status ON payments (status);
`

// OpenLedger opens (creating it and its parent directory if needed) the
// ledger at path, in WAL mode with full fsync on commit: a payment row must
// survive a crash. Errors are CodeUnavailable.
func OpenLedger(ctx context.Context, path string) (*Ledger, error) {
	const op = "payments.ledger.open"
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, sandboxd.Errorf(sandboxd.CodeUnavailable, op, "ledger path %q is empty or holds '?' or '#'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot create the ledger's directory")
	}
	dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot open the ledger "+path)
	}
	// One connection serializes writers inside the process (SQLite allows
	// one writer anyway); busy_timeout covers another process on the file.
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, ledgerSchema); err != nil {
		db.Close()
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot prepare the ledger "+path)
	}
	return &Ledger{db: db, now: time.Now}, nil
}

// Close closes the database.
func (l *Ledger) Close() error { return l.db.Close() }

// Reserve records e (its key, amount, network and asset) as reserved, in one
// atomic statement. It returns ErrAlreadyUsed when the same (payer, nonce)
// has a row that is not released, whether from a concurrent request, an
// earlier one, or before a restart; a released row is reserved again. Any
// other failure is CodeUnavailable: a paid run must not happen unrecorded.
func (l *Ledger) Reserve(ctx context.Context, e Entry) error {
	now := l.stamp()
	res, err := l.db.ExecContext(ctx, `
INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status)
VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved')
ON CONFLICT (payer, nonce) DO UPDATE SET
	status = 'reserved', updated_at = excluded.updated_at, amount = excluded.amount,
	network = excluded.network, asset = excluded.asset, tx_hash = '', run_status = '', reason = ''
WHERE payments.status = 'released'`,
		key(e.Payer), key(e.Nonce), now, now, e.Amount, e.Network, e.Asset)
	if err != nil {
		return ledgerError("payments.ledger.reserve", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return ledgerError("payments.ledger.reserve", err)
	}
	if n == 0 {
		return ErrAlreadyUsed
	}
	return nil
}

// MarkSettled records a reserved payment as collected by tx, for a run that
// ended with runStatus.
func (l *Ledger) MarkSettled(ctx context.Context, payer, nonce, tx, runStatus string) error {
	return l.resolve(ctx, "payments.ledger.settled", payer, nonce,
		`status = 'settled', tx_hash = ?, run_status = ?`, tx, runStatus)
}

// MarkFailed records that a reserved payment's settlement failed, with the
// x402 reason and the transaction hash if one was sent.
func (l *Ledger) MarkFailed(ctx context.Context, payer, nonce, tx, reason string) error {
	return l.resolve(ctx, "payments.ledger.failed", payer, nonce,
		`status = 'failed', tx_hash = ?, reason = ?`, tx, reason)
}

// MarkReleased records that nothing was collected for a reserved payment,
// which may then be reserved again.
func (l *Ledger) MarkReleased(ctx context.Context, payer, nonce string) error {
	return l.resolve(ctx, "payments.ledger.released", payer, nonce, `status = 'released'`)
}

// resolve moves a reserved row to another state; set is the SET clause
// (without updated_at) and args its arguments.
func (l *Ledger) resolve(ctx context.Context, op, payer, nonce, set string, args ...any) error {
	args = append(args, l.stamp(), key(payer), key(nonce))
	res, err := l.db.ExecContext(ctx, `UPDATE payments SET `+set+`, updated_at = ?
WHERE payer = ? AND nonce = ? AND status = 'reserved'`, args...)
	if err != nil {
		return ledgerError(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return ledgerError(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: payer %s nonce %s: %w", op, payer, nonce, ErrNotReserved)
	}
	return nil
}

// Get returns the row of (payer, nonce), or sql.ErrNoRows.
func (l *Ledger) Get(ctx context.Context, payer, nonce string) (Entry, error) {
	rows, err := l.query(ctx, `WHERE payer = ? AND nonce = ?`, key(payer), key(nonce))
	if err != nil {
		return Entry{}, err
	}
	if len(rows) == 0 {
		return Entry{}, sql.ErrNoRows
	}
	return rows[0], nil
}

// Pending lists the rows still reserved, oldest first. At start these are
// the runs a crash left unresolved.
func (l *Ledger) Pending(ctx context.Context) ([]Entry, error) {
	return l.query(ctx, `WHERE status = 'reserved' ORDER BY created_at`)
}

func (l *Ledger) query(ctx context.Context, where string, args ...any) ([]Entry, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT payer, nonce, created_at, updated_at, amount, network,
	asset, status, tx_hash, run_status, reason FROM payments `+where, args...)
	if err != nil {
		return nil, ledgerError("payments.ledger.query", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var created, updated string
		if err := rows.Scan(&e.Payer, &e.Nonce, &created, &updated, &e.Amount, &e.Network,
			&e.Asset, &e.Status, &e.TxHash, &e.RunStatus, &e.Reason); err != nil {
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

func (l *Ledger) stamp() string { return l.now().UTC().Format(time.RFC3339Nano) }

// key is the ledger's spelling of an address or nonce: lower-case hex.
func key(s string) string { return strings.ToLower(s) }

// ledgerError wraps a database failure: the ledger is down, so paid calls
// are refused rather than run unrecorded.
func ledgerError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err,
		"the payment ledger cannot be written; paid calls are refused until it is fixed")
}
