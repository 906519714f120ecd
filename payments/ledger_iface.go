package payments

import (
	"context"
	"time"
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
// through. The implementations are SQLLedger on SQLite (a file path) and
// on PostgreSQL (a postgres:// URL); OpenLedgerConfig picks one.
type Ledger interface {
	// Reserve records e as reserved by this replica. It returns
	// errAlreadyUsed when (payer, nonce) has a row that is not released, on
	// any replica.
	Reserve(ctx context.Context, e Entry) error
	// MarkSettling moves a reserved row to settling, durably, before the
	// settlement is sent. errNotReserved when the row is not this
	// replica's or not reserved.
	MarkSettling(ctx context.Context, payer, nonce string) error
	// MarkSettled moves a settling row to settled with its transaction and
	// the run's status. errNotReserved as for MarkSettling.
	MarkSettled(ctx context.Context, payer, nonce, tx, runStatus string) error
	// MarkFailed moves a settling row to failed with the transaction, if
	// any, and the reason. errNotReserved as for MarkSettling.
	MarkFailed(ctx context.Context, payer, nonce, tx, reason string) error
	// MarkPending keeps a settling row settling, with its transaction and
	// ReasonSettlementPending: its settlement may have been sent and its
	// outcome is unknown. errNotReserved as for MarkSettling.
	MarkPending(ctx context.Context, payer, nonce, tx string) error
	// MarkReleased moves a reserved or settling row to released.
	// errNotReserved as for MarkSettling.
	MarkReleased(ctx context.Context, payer, nonce string) error
	// Get returns the row of (payer, nonce), or sql.ErrNoRows.
	Get(ctx context.Context, payer, nonce string) (Entry, error)
	// List returns the rows that match f, newest first.
	List(ctx context.Context, f Filter) ([]Entry, error)
	// Stats returns counts and sums by state and by day.
	Stats(ctx context.Context) ([]StatsRow, error)
	// Heartbeat records that this replica is alive, now.
	Heartbeat(ctx context.Context) error
	// Pending returns this replica's rows still reserved or settling,
	// oldest first: at start, the payments a crash left unresolved.
	Pending(ctx context.Context) ([]Entry, error)
	// PendingSettlements returns this replica's settling rows marked
	// ReasonSettlementPending (settlements whose outcome it did not learn),
	// oldest first. Rows settling without the mark are in flight in some
	// request and are not returned.
	PendingSettlements(ctx context.Context) ([]Entry, error)
	// ClaimStale makes this replica the holder of the open rows of every
	// replica silent for longer than the lease, and returns them.
	ClaimStale(ctx context.Context) ([]Entry, error)
	// Close releases the database.
	Close() error
}

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
