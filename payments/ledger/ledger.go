// Package ledger is the payment ledger: every payment keyed by (payer,
// nonce), on SQLite (one file, one host) or PostgreSQL (shared by a fleet),
// moving through one state machine (reserved → settling → settled, failed
// or released). It stores and moves rows only; deciding what an open row
// becomes is package payments' recovery.
package ledger

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

// The states of a ledger row. A row moves reserved → settling → settled or
// failed, or (when nothing was collected) reserved or settling → released.
const (
	// StatusReserved: the payment was admitted and its run is in progress.
	// No settlement was sent for it yet.
	StatusReserved = "reserved"
	// StatusSettling: the settlement is being sent, or was sent and its
	// outcome not yet recorded. It is written, durably, before the settler
	// is asked to settle, so a crash can tell "never sent" (reserved) from
	// "maybe collected" (settling). A settling row with reason
	// ReasonSettlementPending was sent and its outcome is unknown: the
	// gate's resolver and Recover look it up.
	StatusSettling = "settling"
	// StatusSettled: the payment was collected.
	StatusSettled = "settled"
	// StatusFailed: settlement was refused, or its outcome stayed unknown
	// to a settler that cannot ask the chain (a facilitator); the answer
	// was dropped and the payment is never admitted again.
	StatusFailed = "failed"
	// StatusReleased: nothing was collected (the service failed to deliver,
	// or the settlement never left); the payment may be offered again.
	StatusReleased = "released"
)

// ReasonSettlementPending is the reason of a settling row whose
// settlement may have been sent but whose outcome is not known yet, and the
// errorReason answered for it. It is this service's own code: a payer that
// reads it must wait, not pay again.
const ReasonSettlementPending = "settlement_pending"

// ReasonUnknownAfterRestart is the reason of a row that was settling when
// the service stopped, under a settler that cannot tell whether the
// payment was collected (a facilitator). It is this service's own code, not
// an x402 one: it never reaches a payer.
const ReasonUnknownAfterRestart = "settlement_unknown_after_restart"

// ErrAlreadyUsed is returned by Reserve when the payment's (payer, nonce)
// already has a row that is not released.
var ErrAlreadyUsed = errors.New("this payment was already used")

// ErrNotReserved is returned when a row to be moved is missing or not in a
// state the move starts from (see the Mark methods).
var ErrNotReserved = errors.New("payment is not reserved or settling in the ledger")

// errLedgerMoved is the cause when the ledger file was removed or replaced
// while open: writes would land in a file nobody will read again.
var errLedgerMoved = errors.New("the ledger file was removed or replaced while the service runs; restart it after restoring the file")

// Entry is one row of the ledger: one payment, keyed by payer and nonce.
type Entry struct {
	// Payer and Nonce are the key, both stored in lower-case hex.
	Payer, Nonce string
	// Amount is the value in atomic units.
	Amount string
	// Network is the CAIP-2 network and Asset the token address.
	Network, Asset string
	// Status is one of StatusReserved, StatusSettling, StatusSettled,
	// StatusFailed, StatusReleased.
	Status string
	// TxHash is the settlement transaction, when known.
	TxHash string
	// RunStatus is the delivered run's status (ok, error, timeout, ...).
	RunStatus string
	// Reason is the x402 error code of a failed settlement, or
	// ReasonUnknownAfterRestart.
	Reason string
	// Replica is the id of the replica that reserved the row, or that took
	// it over to resolve it after its own replica went silent.
	Replica string
	// ChannelID is the payment channel a deposit funds (0x and 64 hex
	// digits, stored in lower case), or empty for an exact payment.
	ChannelID string
	// Created and Updated are when the row was reserved and last changed.
	Created, Updated time.Time
	// Answer, when set, is the answer Reserve claims with the payment
	// (answers.go): its row is inserted running in the same transaction.
	// Reads leave it nil.
	Answer *AnswerRow
}

// SQL is the Ledger on a SQL database: SQLite (one file, one host)
// or PostgreSQL (shared by a fleet). It holds the one state machine both
// backends share; the dialect only spells the SQL. It is safe for
// concurrent use.
type SQL struct {
	db      *sql.DB
	dialect dialect
	// check, when set, runs before writes; for SQLite it checks that the
	// file opened is still at its path.
	check func() error
	path  string
	file  os.FileInfo
	// location is the payments.ledger value it was opened from.
	location string
	// replica is the id recorded on the rows this process reserves, and
	// lease how long a replica may be silent before its rows are resolved
	// by another (see replica.go).
	replica string
	lease   time.Duration
	now     func() time.Time
	// observe, when set, is told how long each write took.
	observe func(op string, d time.Duration)
	// idLock, on PostgreSQL, is the session holding this replica id's
	// advisory lock (see holdReplicaID).
	idLock *sql.Conn
	// lock, on SQLite, holds the exclusive lock on path + ".lock".
	lock *os.File
	// stmts keeps the hot path's statements prepared.
	stmts *stmts
}

// ledgerTable is the payments table, created under the name given.
const ledgerTable = `
CREATE TABLE IF NOT EXISTS %s (
	payer       TEXT NOT NULL,
	nonce       TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	amount      TEXT NOT NULL,
	network     TEXT NOT NULL,
	asset       TEXT NOT NULL,
	status      TEXT NOT NULL CHECK (status IN ('reserved', 'settling', 'settled', 'failed', 'released')),
	tx_hash     TEXT NOT NULL DEFAULT '',
	run_status  TEXT NOT NULL DEFAULT '',
	reason      TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (payer, nonce)
) WITHOUT ROWID;
`

// ledgerIndex indexes the payments table by status, for Pending.
const ledgerIndex = `CREATE INDEX IF NOT EXISTS payments_status ON payments (status);`

// OpenFile opens (creating it and its parent directory if needed) the
// SQLite ledger at path, as replica DefaultReplica with DefaultLease, in
// WAL mode with full fsync on commit: a payment row must survive a crash.
// It holds an exclusive lock on path + ".lock" until Close, and refuses a
// ledger another process (or another open) holds. Errors are
// CodeUnavailable.
func OpenFile(ctx context.Context, path string) (*SQL, error) {
	const op = "payments.ledger.open"
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, sandboxd.Errorf(sandboxd.CodeUnavailable, op, "ledger path %q is empty or holds '?' or '#'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot create the ledger's directory")
	}
	lock, err := lockLedger(op, path)
	if err != nil {
		return nil, err
	}
	l, err := openLocked(ctx, op, path)
	if err != nil {
		lock.Close()
		return nil, err
	}
	l.lock = lock
	return l, nil
}

// openLocked opens the ledger at path, whose lock is held.
func openLocked(ctx context.Context, op, path string) (*SQL, error) {
	dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot open the ledger "+path)
	}
	// One connection serializes writers inside the process (SQLite allows
	// one writer anyway); busy_timeout covers another process on the file.
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db, dialectSQLite); err != nil {
		db.Close()
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot prepare the ledger "+path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		db.Close()
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "cannot stat the ledger "+path)
	}
	l := newSQLLedger(db, dialectSQLite)
	l.path, l.file, l.location = path, fi, path
	l.check = l.present
	return l, nil
}

// Close closes the database, then releases the ledger's locks.
func (l *SQL) Close() error {
	l.releaseReplicaID()
	l.stmts.close()
	err := l.db.Close()
	if l.lock != nil {
		l.lock.Close()
	}
	return err
}

// Reserve records e (its key, amount, network, asset and channel) as
// reserved, in one atomic statement. It returns ErrAlreadyUsed when the same (payer, nonce)
// has a row that is not released, whether from a concurrent request, an
// earlier one, or before a restart; a released row is reserved again. Any
// other failure (a full disk, a read-only or removed file) is
// CodeUnavailable: a paid run must not happen unrecorded.
//
// With e.Answer, one transaction also claims the answer's row (keyed by
// the payer and nonce, with its id): ErrAnswerTaken when a live row of
// another payment holds the id, and then nothing is reserved.
func (l *SQL) Reserve(ctx context.Context, e Entry) error {
	const op = "payments.ledger.reserve"
	fail := func(err error) error {
		return ledgerErrorMsg(op, err, "the payment ledger could not record the payment, "+
			"so the call was not run and nothing was charged; try again later")
	}
	if e.Answer != nil {
		if err := checkAnswer(op, e.Answer); err != nil {
			return err
		}
	}
	if err := l.checkWrite(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed("reserve")()
	now := l.stamp()
	q := l.dialect.bind(`
INSERT INTO payments (payer, nonce, created_at, updated_at, amount, network, asset, status, replica, channel_id)
VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?)
ON CONFLICT (payer, nonce) DO UPDATE SET
	status = 'reserved', updated_at = excluded.updated_at, amount = excluded.amount,
	network = excluded.network, asset = excluded.asset, tx_hash = '', run_status = '', reason = '',
	replica = excluded.replica, channel_id = excluded.channel_id
WHERE payments.status = 'released'`)
	args := []any{key(e.Payer), key(e.Nonce), now, now, e.Amount, e.Network, e.Asset, l.replica, key(e.ChannelID)}
	var err error
	if e.Answer != nil {
		err = l.reserveAnswered(ctx, e, q, args)
	} else {
		res, xerr := l.db.ExecContext(ctx, q, args...)
		err = affected(res, xerr, ErrAlreadyUsed)
	}
	if err != nil && !errors.Is(err, ErrAlreadyUsed) && !errors.Is(err, ErrAnswerTaken) {
		return fail(err)
	}
	return err
}

// MarkSettling records that a reserved payment's settlement is about to be
// sent. The commit is synced to disk before it returns (synchronous=FULL),
// so after a crash a reserved row means the settlement was never sent.
// With body, the same transaction writes the answer's bytes to its
// running answers row, which becomes held: a crash after the settlement
// leaves a replayable answer. A nil body leaves the answers row as it is.
func (l *SQL) MarkSettling(ctx context.Context, payer, nonce string, body *Body) error {
	const op = "payments.ledger.settling"
	if err := l.checkWrite(); err != nil {
		return ledgerError(op, err)
	}
	return l.move(ctx, op, payer, nonce, []string{StatusReserved}, l.heldAnswer(payer, nonce, body),
		`status = 'settling'`)
}

// MarkSettled records a settling payment as collected by tx, for a run that
// ended with runStatus. Its held or pending answers row, if any, becomes
// ready with report (the JSON of the settlement answered; nil when it is
// to be built from this row, as after recovery) for its keep from now.
func (l *SQL) MarkSettled(ctx context.Context, payer, nonce, tx, runStatus string, report []byte) error {
	return l.move(ctx, "payments.ledger.settled", payer, nonce, []string{StatusSettling},
		l.readyAnswer(payer, nonce, report), `status = 'settled', tx_hash = ?, run_status = ?`, tx, runStatus)
}

// MarkFailed records that a settling payment's settlement was refused or
// has an unknown outcome, with the reason and the transaction hash if one
// was sent. Its answers row, if any, is deleted: nothing was paid.
func (l *SQL) MarkFailed(ctx context.Context, payer, nonce, tx, reason string) error {
	return l.move(ctx, "payments.ledger.failed", payer, nonce, []string{StatusSettling},
		dropAnswer(payer, nonce), `status = 'failed', tx_hash = ?, reason = ?`, tx, reason)
}

// MarkReleased records that nothing was collected for a reserved payment
// (its run failed) or a settling one (its settlement never left), which may
// then be reserved again. Its answers row, if any, is deleted.
func (l *SQL) MarkReleased(ctx context.Context, payer, nonce string) error {
	return l.move(ctx, "payments.ledger.released", payer, nonce, []string{StatusReserved, StatusSettling},
		dropAnswer(payer, nonce), `status = 'released'`)
}

// MarkPending records that a settling payment's settlement may have been
// sent by tx ("" when no hash is known) and its outcome is unknown: the row
// stays settling (the payment is refused if offered again) with reason
// ReasonSettlementPending, for the gate's resolver. Its held answers row,
// if any, becomes pending with report (the pending settlement answered;
// nil keeps the row's).
func (l *SQL) MarkPending(ctx context.Context, payer, nonce, tx string, report []byte) error {
	return l.move(ctx, "payments.ledger.pending", payer, nonce, []string{StatusSettling},
		l.pendingAnswer(payer, nonce, report), `tx_hash = ?, reason = ?`, tx, ReasonSettlementPending)
}

// move changes a row in one of the states from to another state; set is
// the SET clause (without updated_at) and args its arguments; then, when
// set, runs in the same transaction after it. Only a row of this replica
// moves: once another replica took a silent replica's row over (see
// ClaimStale), the silent one can no longer settle it.
func (l *SQL) move(ctx context.Context, op, payer, nonce string, from []string, then *stmt, set string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, ledgerOpTimeout)
	defer cancel()
	defer l.timed(strings.TrimPrefix(op, "payments.ledger."))()
	args = append(args, l.stamp(), key(payer), key(nonce), l.replica)
	in := "?" + strings.Repeat(", ?", len(from)-1)
	for _, f := range from {
		args = append(args, f)
	}
	q := l.dialect.bind(`UPDATE payments SET ` + set + `, updated_at = ?
WHERE payer = ? AND nonce = ? AND replica = ? AND status IN (` + in + `)`)
	run := func(e execer) error {
		res, err := e.ExecContext(ctx, q, args...)
		if err := affected(res, err, ErrNotReserved); err != nil || then == nil {
			return err
		}
		_, err = e.ExecContext(ctx, l.dialect.bind(then.q), then.args...)
		return err
	}
	var err error
	if then == nil {
		err = run(l.db)
	} else {
		err = l.inTx(ctx, func(tx *sql.Tx) error { return run(tx) })
	}
	switch {
	case errors.Is(err, ErrNotReserved):
		return fmt.Errorf("%s: payer %s nonce %s: %w", op, payer, nonce, ErrNotReserved)
	case err != nil:
		return ledgerError(op, err)
	}
	return nil
}

// present checks that the file opened is still at the ledger's path. SQLite
// keeps writing to a removed file without an error, and those rows would be
// gone at the next start.
func (l *SQL) present() error {
	fi, err := os.Stat(l.path)
	if err != nil {
		return fmt.Errorf("%w: %w", errLedgerMoved, err)
	}
	if !os.SameFile(fi, l.file) {
		return errLedgerMoved
	}
	return nil
}

// checkWrite runs the backend's check before a write, if it has one.
func (l *SQL) checkWrite() error {
	if l.check == nil {
		return nil
	}
	return l.check()
}

// timed starts timing a write for the observer; call the result when done.
func (l *SQL) timed(op string) func() {
	if l.observe == nil {
		return func() {}
	}
	began := time.Now()
	return func() { l.observe(op, time.Since(began)) }
}

func (l *SQL) stamp() string { return formatStamp(l.now()) }

// key is the ledger's spelling of an address or nonce: lower-case hex.
func key(s string) string { return strings.ToLower(s) }

// ledgerError wraps a database failure: the ledger is down (a full disk, a
// read-only or removed file), so paid calls are refused rather than run
// unrecorded.
func ledgerError(op string, err error) error {
	return ledgerErrorMsg(op, err, "the payment ledger cannot be read or written; paid calls are refused until it can")
}

// ledgerErrorMsg is ledgerError with the message given.
func ledgerErrorMsg(op string, err error, msg string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, msg)
}
