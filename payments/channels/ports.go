package channels

import (
	"context"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// Store is the ledger as channels use it (*ledger.SQL): the channel rows,
// and the payment rows deposits are recorded in, as exact payments are.
// Every method may return a CodeUnavailable *sandboxd.Error when the
// database cannot be reached.
type Store interface {
	// Channel returns the row of id, or ledger.ErrNoChannel.
	Channel(ctx context.Context, id string) (ledger.Channel, error)
	// AdoptChannel inserts c unless a row of its id exists, and returns
	// the stored row.
	AdoptChannel(ctx context.Context, c ledger.Channel) (ledger.Channel, error)
	// ReopenChannel moves a closed row back to open (a new deposit).
	ReopenChannel(ctx context.Context, id string) error
	// ReserveIncrement holds the channel's next increment for h when its
	// charged total is expected and no live hold is held; else
	// ledger.ErrChannelMoved. With h.Answer it claims the answer's row
	// too: ledger.ErrAnswerTaken when its id is taken, nothing held.
	ReserveIncrement(ctx context.Context, id string, expected *big.Int, h ledger.Hold) error
	// CommitIncrement counts the hold's increment, durably, and returns the
	// row; ledger.ErrHoldLost when the hold is gone. With ans (nil: none)
	// the hold's answers row becomes ready in the same transaction.
	CommitIncrement(ctx context.Context, id, holdID string, expected *big.Int, resource string,
		ans *ledger.AnswerCommit) (ledger.Channel, error)
	// ReleaseIncrement drops the hold and its answers row, counting
	// nothing.
	ReleaseIncrement(ctx context.Context, id, holdID string) error
	// UpdateMirror writes the escrow's state of the channel.
	UpdateMirror(ctx context.Context, id string, m ledger.Mirror) (ledger.Channel, error)

	// Reserve, MarkSettling, MarkSettled, MarkFailed, MarkPending and
	// MarkReleased move a deposit's payment row as payments.Ledger does.
	Reserve(ctx context.Context, e ledger.Entry) error
	MarkSettling(ctx context.Context, payer, nonce string, body *ledger.Body) error
	MarkSettled(ctx context.Context, payer, nonce, tx, runStatus string, report []byte) error
	MarkFailed(ctx context.Context, payer, nonce, tx, reason string) error
	MarkPending(ctx context.Context, payer, nonce, tx string, report []byte) error
	MarkReleased(ctx context.Context, payer, nonce string) error
}

// Reader reads the escrow (*chain.Settler, also keyless).
type Reader interface {
	// ReadChannels returns the escrow's state of each id, in order. A
	// channel never funded reads as zeros.
	ReadChannels(ctx context.Context, ids []common.Hash) ([]chain.ChannelState, error)
}

// Depositor checks and collects deposits: on chain with the relayer, or
// through a facilitator whose word is checked against the chain. p is the
// payment (its Requirements the batch entry quoted), d its decoded payload.
type Depositor interface {
	// CheckDeposit reports whether the deposit would be collected now:
	// nil, a *x402.RejectError, or CodeUnavailable.
	CheckDeposit(ctx context.Context, p *x402.Payment, d *channel.Payload) error
	// Deposit collects it and returns its mined receipt (Tx, Amount,
	// NewBalance). The errors are payments.Settler's Settle's: a
	// *x402.RejectError (refused or reverted), CodeUnavailable wrapping
	// remote.ErrNotSent (never sent), other CodeUnavailable (outcome
	// unknown; the receipt's Tx when a transaction was sent).
	Deposit(ctx context.Context, p *x402.Payment, d *channel.Payload) (chain.OpReceipt, error)
}

// Terms answers a channel payment's refusals with the route's terms
// (package payments builds them from its quote).
type Terms interface {
	// Refuse returns the CodePayment error carrying the terms (exact's
	// entry and the batch entry) and message.
	Refuse(op, message string, cause error) *sandboxd.Error
	// Corrective returns the CodePayment error of a corrective 402: the
	// terms with entry in place of the batch entry, and code, bare, as
	// PaymentRequired.error (the official client reads nothing else).
	Corrective(op, code string, entry x402.Requirements, cause error) *sandboxd.Error
}

// Books is the ledger as the mirror and the claimer use it (*ledger.SQL).
type Books interface {
	// MirrorDue returns up to limit open or refunding rows, the least
	// recently mirrored first.
	MirrorDue(ctx context.Context, limit int) ([]ledger.Channel, error)
	// UpdateMirror writes the escrow's state of a channel (raising its
	// charged total to what the chain says was claimed, and asking the
	// claimer to claim at once when a withdrawal appears).
	UpdateMirror(ctx context.Context, id string, m ledger.Mirror) (ledger.Channel, error)
	// Claimable returns up to limit rows charged beyond what was claimed.
	Claimable(ctx context.Context, limit int) ([]ledger.Channel, error)
	// MarkClaimed raises a row's claimed total to claimed.
	MarkClaimed(ctx context.Context, id string, claimed *big.Int) error
	// TakeClaimer takes or renews the fleet's claimer lease.
	TakeClaimer(ctx context.Context) (bool, error)
	// ClaimerState is the lease and its requests.
	ClaimerState(ctx context.Context) (ledger.ClaimerState, error)
	// ClaimPassDone records a finished claim pass.
	ClaimPassDone(ctx context.Context, at time.Time) error
	// EndRefund moves a refunding row to open or closed (a refund whose
	// outcome was unknown, settled by the chain).
	EndRefund(ctx context.Context, id string, m ledger.Mirror, closed bool) error
	// RecordOp and UpdateOp keep the claims' and sweeps' transactions.
	RecordOp(ctx context.Context, op ledger.Op) error
	UpdateOp(ctx context.Context, op ledger.Op) error
}

// Claimer sends claims and sweeps (*chain.Settler with the relayer key, or
// a facilitator's /settle).
type Claimer interface {
	// Claim claims rows (each at most its charged total) and returns the
	// mined receipt.
	Claim(ctx context.Context, rows []chain.VoucherClaim) (chain.OpReceipt, error)
	// Sweep pays what was claimed for receiver to it.
	Sweep(ctx context.Context, receiver, token common.Address) (chain.OpReceipt, error)
}

// Refunder sends a refund (*chain.Settler with the relayer key, or a
// facilitator's /settle).
type Refunder interface {
	Refund(ctx context.Context, r RefundOrder) (chain.OpReceipt, error)
}

// RefundOrder is one refund to send: Amount from the channel of Config to
// its payer, in one transaction with a claim of Claims (what was charged
// and not claimed: a refund must never take money a charged voucher is
// owed). Nonce is the escrow's refund nonce the refund is signed for;
// Voucher is the payer's zero-charge voucher that asked for it.
type RefundOrder struct {
	Config  channel.Config
	Voucher channel.Voucher
	Amount  *big.Int
	Nonce   *big.Int
	Claims  []chain.VoucherClaim
}

// Refunds is the ledger as refunds use it (*ledger.SQL).
type Refunds interface {
	// BeginRefund moves an open row that no request holds to refunding;
	// ledger.ErrChannelMoved otherwise.
	BeginRefund(ctx context.Context, id string) (ledger.Channel, error)
	// EndRefund moves a refunding row to open or closed with the escrow's
	// state m.
	EndRefund(ctx context.Context, id string, m ledger.Mirror, closed bool) error
	// MarkClaimed raises a row's claimed total.
	MarkClaimed(ctx context.Context, id string, claimed *big.Int) error
}
