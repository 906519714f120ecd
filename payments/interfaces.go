package payments

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd/payments/chain"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
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
	// any replica. With e.Answer it also claims the answer's row, in the
	// same transaction: ledger.ErrAnswerTaken when a live row of another
	// payment holds its id, and nothing is reserved.
	Reserve(ctx context.Context, e ledger.Entry) error
	// MarkSettling moves a reserved row to settling, durably, before the
	// settlement is sent, and with body (nil: none) writes the answer's
	// bytes to its answers row, which becomes held. ledger.ErrNotReserved
	// when the row is not this replica's or not reserved.
	MarkSettling(ctx context.Context, payer, nonce string, body *ledger.Body) error
	// MarkSettled moves a settling row to settled with its transaction and
	// the run's status, and its answers row to ready with report (nil:
	// built from the payments row). ledger.ErrNotReserved as for
	// MarkSettling.
	MarkSettled(ctx context.Context, payer, nonce, tx, runStatus string, report []byte) error
	// MarkFailed moves a settling row to failed with the transaction, if
	// any, and the reason, and deletes its answers row.
	// ledger.ErrNotReserved as for MarkSettling.
	MarkFailed(ctx context.Context, payer, nonce, tx, reason string) error
	// MarkPending keeps a settling row settling, with its transaction and
	// ledger.ReasonSettlementPending: its settlement may have been sent and its
	// outcome is unknown. Its answers row becomes pending with report (nil
	// keeps the row's). ledger.ErrNotReserved as for MarkSettling.
	MarkPending(ctx context.Context, payer, nonce, tx string, report []byte) error
	// MarkReleased moves a reserved or settling row to released, and
	// deletes its answers row. ledger.ErrNotReserved as for MarkSettling.
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

// errNonceStateUnknown is returned by NonceUsed when the settler cannot
// tell whether an authorization was used (a facilitator offers no such
// query). Recover marks such rows failed when a settlement was in flight.
var errNonceStateUnknown = errors.New("the settler cannot tell whether this nonce was used")

// Settler checks payments against the chain's state and collects them.
//
// Check is called after x402.Verify, before the run. It returns:
//   - nil when the payment would settle now (the nonce is unused and the
//     payer's balance covers the value);
//   - a *x402.RejectError when it would not: ReasonNonceUsed, ReasonInsufficientFunds,
//     or another x402 code (a facilitator's invalidReason);
//   - a CodeUnavailable *sandboxd.Error when the chain or the facilitator
//     cannot be reached (its Message names the URL), or ctx's error.
//
// Settle collects a checked payment, once, and returns the transaction hash.
// It returns:
//   - the hash and nil when the transfer is on chain with a successful receipt;
//   - a *x402.RejectError when it was refused or reverted (the hash, when a
//     transaction was sent, is returned with it);
//   - a CodeUnavailable *sandboxd.Error wrapping remote.ErrNotSent when the
//     chain or the facilitator failed before the settlement was sent;
//   - a CodeUnavailable *sandboxd.Error without it when they failed or did
//     not answer in time after it may have been sent: its outcome is
//     unknown (the hash, when a transaction was sent, comes back too);
//   - ctx's error.
//
// NonceUsed reports whether (from, nonce) was used on chain, including by a
// transaction still pending; Recover calls it for rows a crash left in
// settlement. It returns errNonceStateUnknown when the settler cannot tell,
// or a CodeUnavailable *sandboxd.Error when the chain cannot be reached.
type Settler interface {
	Check(ctx context.Context, p *x402.Payment) error
	Settle(ctx context.Context, p *x402.Payment) (txHash string, err error)
	NonceUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error)
}

var _ Settler = (*chain.Settler)(nil)
