package payments

import (
	"context"
	"sandboxd/payments/ledger"
)

// Ledger records every payment so that one payment buys one run, across
// concurrent requests, restarts, and every replica sharing the database.
// A row is keyed by (payer, nonce) and moves
// reserved → settling → settled or failed, or reserved or settling →
// released (see the Status constants). Each row records the replica that
// holds it; a replica moves only its own rows.
//
// Every method may return a CodeUnavailable *sandboxd.Error when the
// database cannot be read or written (unreachable, full, read-only): paid
// calls are then refused, never run unrecorded. Context errors pass
// through. The implementations are ledger.SQL on SQLite (a file path) and
// on PostgreSQL (a postgres:// URL); ledger.Open picks one.
type Ledger interface {
	// Reserve records e as reserved by this replica. It returns
	// ledger.ErrAlreadyUsed when (payer, nonce) has a row that is not released, on
	// any replica.
	Reserve(ctx context.Context, e ledger.Entry) error
	// MarkSettling moves a reserved row to settling, durably, before the
	// settlement is sent. ledger.ErrNotReserved when the row is not this
	// replica's or not reserved.
	MarkSettling(ctx context.Context, payer, nonce string) error
	// MarkSettled moves a settling row to settled with its transaction and
	// the run's status. ledger.ErrNotReserved as for MarkSettling.
	MarkSettled(ctx context.Context, payer, nonce, tx, runStatus string) error
	// MarkFailed moves a settling row to failed with the transaction, if
	// any, and the reason. ledger.ErrNotReserved as for MarkSettling.
	MarkFailed(ctx context.Context, payer, nonce, tx, reason string) error
	// MarkPending keeps a settling row settling, with its transaction and
	// ledger.ReasonSettlementPending: its settlement may have been sent and its
	// outcome is unknown. ledger.ErrNotReserved as for MarkSettling.
	MarkPending(ctx context.Context, payer, nonce, tx string) error
	// MarkReleased moves a reserved or settling row to released.
	// ledger.ErrNotReserved as for MarkSettling.
	MarkReleased(ctx context.Context, payer, nonce string) error
	// Get returns the row of (payer, nonce), or sql.ErrNoRows.
	Get(ctx context.Context, payer, nonce string) (ledger.Entry, error)
	// List returns the rows that match f, newest first.
	List(ctx context.Context, f ledger.Filter) ([]ledger.Entry, error)
	// Stats returns counts and sums by state and by day.
	Stats(ctx context.Context) ([]ledger.StatsRow, error)
	// Heartbeat records that this replica is alive, now.
	Heartbeat(ctx context.Context) error
	// Pending returns this replica's rows still reserved or settling,
	// oldest first: at start, the payments a crash left unresolved.
	Pending(ctx context.Context) ([]ledger.Entry, error)
	// PendingSettlements returns this replica's settling rows marked
	// ledger.ReasonSettlementPending (settlements whose outcome it did not learn),
	// oldest first. Rows settling without the mark are in flight in some
	// request and are not returned.
	PendingSettlements(ctx context.Context) ([]ledger.Entry, error)
	// ClaimStale makes this replica the holder of the open rows of every
	// replica silent for longer than the lease, and returns them.
	ClaimStale(ctx context.Context) ([]ledger.Entry, error)
	// Close releases the database.
	Close() error
}

var _ Ledger = (*ledger.SQL)(nil)
