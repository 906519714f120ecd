package retries

import (
	"context"
	"errors"
	"time"

	"sandboxd"
)

// The states of a kept answer (Meta.State), the ledger's: running from the
// payment's reservation, held once its bytes are written before the
// settlement is sent, pending while the settlement's outcome is unknown,
// ready with the settlement. A payment released or failed deletes its row.
const (
	StateRunning = "running"
	StateHeld    = "held"
	StatePending = "pending"
	StateReady   = "ready"
)

// Why an answer's bytes are not kept (Meta.Dropped; "" when kept).
const (
	// DroppedTooLarge: the answer was over MaxAnswerBytes.
	DroppedTooLarge = "too_large"
	// DroppedEvicted: a sweep dropped the bytes to keep the ledger under
	// MaxBytes. The row and its settlement stay.
	DroppedEvicted = "evicted"
)

// paymentReleased is the ledger's status of a payment released unspent:
// it may be offered again, so it still proves a fresh signature.
const paymentReleased = "released"

// ErrNoAnswer is what AnswerState and AnswerBody return (wrapped or not)
// when the payment has no live answer: none was kept, it expired, or the
// payment was released or failed (nothing was paid).
var ErrNoAnswer = errors.New("retries: no answer is kept for this payment")

// Store is what the keeper reads of the ledger's answers, and its sweep:
// an adapter of payments/ledger.SQL. Every method may fail with the
// ledger's own error when it cannot be reached.
type Store interface {
	// LookupAnswer reads, in one statement, the live rows of (payer, key)
	// and of (payer, id) (an empty id matches none) without their bytes,
	// and the status of the payments row of (payer, key). A row is live
	// when it has not expired and is not running under a replica whose
	// lease ran out.
	LookupAnswer(ctx context.Context, payer, key, id string) (Lookup, error)
	// AnswerState reads the live row of (payer, key) without its bytes (a
	// waiting retry's poll), or ErrNoAnswer.
	AnswerState(ctx context.Context, payer, key string) (Meta, error)
	// AnswerBody reads the live row of (payer, key) with its bytes (nil
	// when not kept: Meta.Dropped says why), or ErrNoAnswer.
	AnswerBody(ctx context.Context, payer, key string) (Meta, []byte, error)
	// SweepAnswers deletes the expired rows (and the running ones of
	// replicas whose lease ran out), then drops the bytes of the oldest
	// answers of the payer holding the most until all are under
	// maxBytes (to 90 % of it).
	SweepAnswers(ctx context.Context, maxBytes int64) (SweepReport, error)
}

// Meta is a kept answer without its bytes.
type Meta struct {
	// Payer and Key are the row's key: the payer's lower-case address and
	// the payment's key (an exact nonce, or a channel's voucher key).
	Payer, Key string
	// ID is the payment-identifier id ("" when none); Request the hash of
	// the request's identity.
	ID, Request string
	// Kind and Transport are the request's.
	Kind      sandboxd.AnswerKind
	Transport sandboxd.Transport
	// State is StateRunning, StateHeld, StatePending or StateReady.
	State string
	// X402Version is the payment's protocol version.
	X402Version int
	// Status is the answer's HTTP status (0 before its bytes are written).
	Status int
	// BodyBytes is the size of the bytes kept (0 without them);
	// AnswerBytes the answer's size, kept or not.
	BodyBytes, AnswerBytes int64
	// Dropped is "", DroppedTooLarge or DroppedEvicted.
	Dropped string
	// Settlement is the report the answer was sent with (the pending
	// report while pending); the adapter builds it for a row settled by
	// recovery, from its payments row. nil while running or held.
	Settlement *sandboxd.Settlement
	// Created and Expires are the ledger's stamps.
	Created, Expires time.Time
}

// Lookup is what LookupAnswer finds for a payment.
type Lookup struct {
	// ByKey is the live row of (payer, key), or nil.
	ByKey *Meta
	// ByID is the live row of (payer, id), or nil (always nil for an
	// empty id); the same row as ByKey when that row holds the id.
	ByID *Meta
	// Payment is the status of the payments row of (payer, key), "" when
	// there is none (always "" for a channel's key).
	Payment string
}

// waiting reports whether a retry of a row in state waits for it.
func waiting(state string) bool { return state == StateRunning || state == StateHeld }

// isNoAnswer reports whether err says the row is gone.
func isNoAnswer(err error) bool { return errors.Is(err, ErrNoAnswer) }
