package ledger

import (
	"errors"
	"math/big"
	"time"
)

// The states of an answers row. A row is inserted running with its
// payment's reservation (or its channel hold), becomes held when its bytes
// are written before the settlement is sent (exact), pending when the
// settlement's outcome is unknown, and ready with the settlement (or the
// channel's commit, which writes the bytes too). A payment released or
// failed deletes its row: nothing was paid, its key and id are free.
const (
	AnswerRunning = "running"
	AnswerHeld    = "held"
	AnswerPending = "pending"
	AnswerReady   = "ready"
)

// Why an answer's bytes are not kept (AnswerMeta.Dropped; "" when kept).
const (
	// DroppedTooLarge: the answer was over the cap when it was written.
	DroppedTooLarge = "too_large"
	// DroppedEvicted: SweepAnswers dropped the bytes to keep the ledger
	// under its byte budget. The row and its settlement stay.
	DroppedEvicted = "evicted"
)

// ErrAnswerTaken is returned by Reserve and ReserveIncrement when the
// answer's (payer, payment id) is held by a live row of another payment
// (or its key by a live row that is not this payment's): nothing was
// reserved. The caller reads the row (LookupAnswer) to tell a retry racing
// its first from the same id used for another request.
var ErrAnswerTaken = errors.New("this payment id is taken by another payment of the payer")

// ErrNoAnswer is returned by AnswerState and AnswerBody when (payer, key)
// has no live answers row: none was kept, it expired, or its payment was
// released or failed.
var ErrNoAnswer = errors.New("the ledger keeps no answer for this payment")

// AnswerRow is the answer a reservation claims (Entry.Answer,
// Hold.Answer): the row is inserted running in the reservation's
// transaction, which claims its (payer, ID) fleet-wide. The payer and key
// come from the reservation: an exact payment's payer and nonce, a hold's
// channel payer and VoucherKey.
type AnswerRow struct {
	// ID is the payment-identifier id as sent, or "" when none.
	ID string
	// Request is the lower-case hex SHA-256 of the request's identity.
	Request string
	// Kind is "run", "session_open" or "session_call"; Transport is
	// "http" or "mcp".
	Kind, Transport string
	// X402Version is the payment's protocol version (1 or 2).
	X402Version int
	// Flow is the longest a request takes from its reservation to its
	// settlement's outcome: until it is ready, the row lives Flow + Keep
	// (on the database's clock).
	Flow time.Duration
	// Keep is how long a ready row lives after it became ready.
	Keep time.Duration
}

// Body is a delivered answer as the ledger keeps it (MarkSettling,
// AnswerCommit). NewBody builds one under a cap.
type Body struct {
	// Status is the answer's HTTP status (200, 201).
	Status int
	// Bytes is the answer as sent, or nil when not kept (Dropped).
	Bytes []byte
	// Size is the answer's size in bytes, kept or not.
	Size int64
	// Dropped is "" when Bytes is kept, else DroppedTooLarge.
	Dropped string
}

// NewBody is the Body of an answer of status, keeping its bytes only when
// they are at most maxBytes (else DroppedTooLarge: the settlement is kept,
// the bytes are not).
func NewBody(status int, answer []byte, maxBytes int64) *Body {
	b := &Body{Status: status, Size: int64(len(answer))}
	if b.Size > maxBytes {
		b.Dropped = DroppedTooLarge
		return b
	}
	b.Bytes = answer
	return b
}

// AnswerCommit is what CommitIncrement writes to the hold's answers row
// in its transaction: the bytes, and the settlement report built from the
// committed channel row (its channelState).
type AnswerCommit struct {
	// Body is the answer delivered.
	Body *Body
	// Report returns the JSON of the settlement answered with the answer,
	// given the committed row; an error rolls the commit back.
	Report func(Channel) ([]byte, error)
}

// AnswerMeta is an answers row without its bytes.
type AnswerMeta struct {
	// Payer and Key are the row's key: the payer's lower-case address and
	// the payment's key (an exact nonce, or VoucherKey).
	Payer, Key string
	// ID is the payment-identifier id ("" when none); Request the hash of
	// the request's identity.
	ID, Request string
	// Kind and Transport are AnswerRow's.
	Kind, Transport string
	// State is AnswerRunning, AnswerHeld, AnswerPending or AnswerReady.
	State string
	// X402Version is the payment's protocol version.
	X402Version int
	// Replica reserved the payment.
	Replica string
	// Status is the answer's HTTP status (0 before its bytes are written).
	Status int
	// BodyBytes is the size of the bytes kept (0 without them);
	// AnswerBytes the answer's size, kept or not.
	BodyBytes, AnswerBytes int64
	// Dropped is "", DroppedTooLarge or DroppedEvicted.
	Dropped string
	// Settlement is the JSON of the settlement the answer was sent with
	// (the pending report while pending); empty when the row was settled
	// by recovery: build it from the payments row.
	Settlement []byte
	// Created, Updated and Expires are the ledger's stamps (Expires on
	// the database's clock).
	Created, Updated, Expires time.Time
}

// AnswerLookup is what LookupAnswer finds for a payment: the live answers
// rows of its key and of its id, and its payments row.
type AnswerLookup struct {
	// ByKey is the live row of (payer, key), or nil.
	ByKey *AnswerMeta
	// ByID is the live row of (payer, id), or nil (always nil for an
	// empty id). It is the same row as ByKey when that row holds the id.
	ByID *AnswerMeta
	// Payment is the status of the payments row of (payer, key), or ""
	// when there is none (always "" for a channel key).
	Payment string
}

// SweepReport is what one SweepAnswers pass did.
type SweepReport struct {
	// Expired counts the rows deleted: expired, or running under a
	// replica whose lease ran out.
	Expired int64
	// Evicted counts the rows whose bytes were dropped for the budget,
	// and EvictedBytes their bytes.
	Evicted, EvictedBytes int64
	// Bytes is the sum of the bytes kept after the pass.
	Bytes int64
}

// VoucherKey is the answers key of a channel payment: the channel id
// (lower case) and the voucher's running total, "<id>/<max>". One voucher
// buys one increment.
func VoucherKey(channelID string, max *big.Int) string {
	return key(channelID) + "/" + max.String()
}
