// Package answer is what the exact gate and the channel seller share to
// keep a paid answer for its retries (docs/design/retries.md §4): the
// lookup of a verified payment, the answers row claimed with its
// reservation, the bytes and report written with its settlement, and the
// keeper told of each write. A nil *Claim keeps nothing, so the flows call
// it unconditionally and behave as before retries when answers are off.
package answer

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"sandboxd"
	"sandboxd/payments/ledger"
	"sandboxd/payments/retries"
)

// Keeping is a gate's (or a seller's) part of keeping answers: the keeper,
// and the longest a payment takes from its reservation to its settlement's
// outcome (a running row lives that long plus the keep). The zero value
// keeps none.
type Keeping struct {
	Keeper *retries.Keeper
	Flow   time.Duration
}

// On reports whether answers are kept.
func (k Keeping) On() bool { return k.Keeper != nil }

// Spec is what a paid request keeps with its answer, besides its payment's
// key: the payment's payment-identifier id and x402 version, and the
// request's identity, kind and transport (sandboxd.PaymentRequest).
type Spec struct {
	ID, Request string
	Kind        sandboxd.AnswerKind
	Transport   sandboxd.Transport
	Version     int
}

// Claim is the answer of one verified payment: its lookup, and the row its
// reservation claims. Its methods are safe on nil (nothing kept).
type Claim struct {
	keeper *retries.Keeper
	q      retries.Query
	row    ledger.AnswerRow
}

// Claim returns the claim of the payment of payer with key (an exact
// nonce, a channel's voucher key) for s; fresh is the caller's part of
// freshness (retries.Query). It is nil when answers are not kept, or the
// request keeps none (no identity, kind or transport).
func (k Keeping) Claim(payer, key string, s Spec, fresh bool) *Claim {
	if k.Keeper == nil || s.Request == "" || s.Kind == "" || s.Transport == "" {
		return nil
	}
	return &Claim{keeper: k.Keeper,
		q: retries.Query{Payer: payer, Key: key, ID: s.ID, Request: s.Request, Fresh: fresh},
		row: ledger.AnswerRow{ID: s.ID, Request: s.Request, Kind: string(s.Kind), Transport: string(s.Transport),
			X402Version: s.Version, Flow: k.Flow, Keep: k.Keeper.Config().Keep}}
}

// Find looks the payment up (retries.Keeper.Find): a Replay, a
// CodeConflict (the id used for another request), CodeUnavailable, or
// (nil, nil) to go on.
func (c *Claim) Find(ctx context.Context) (sandboxd.Replay, error) {
	if c == nil {
		return nil, nil
	}
	return c.keeper.Find(ctx, c.q)
}

// Raced is told that the reservation lost to a concurrent one with the
// same payment or id (lost: the ledger's refusal): the error to answer
// instead, carrying the winner's Replay or saying the id is used for
// another request (retries.Keeper.Raced), or nil to refuse as without
// retries. An id whose holder went meanwhile (ledger.ErrAnswerTaken and
// nothing kept) is a 409 to send again.
func (c *Claim) Raced(ctx context.Context, lost error) error {
	if c == nil {
		return nil
	}
	if err := c.keeper.Raced(ctx, c.q); err != nil || !errors.Is(lost, ledger.ErrAnswerTaken) {
		return err
	}
	return &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "payments.reserve", RetryAfter: time.Second,
		Message: "a concurrent request with this payment id was not delivered; nothing was reserved or charged " +
			"for this one, send it again"}
}

// Row is the answers row the reservation claims, nil when none.
func (c *Claim) Row() *ledger.AnswerRow {
	if c == nil {
		return nil
	}
	row := c.row
	return &row
}

// Body is the answer d delivered as the ledger keeps it (its bytes only
// under max_answer_bytes); nil when none is kept or d was not rendered.
func (c *Claim) Body(d sandboxd.Delivered) *ledger.Body {
	if c == nil || d.Body == nil {
		return nil
	}
	return ledger.NewBody(d.Status, d.Body, int64(c.keeper.Config().MaxAnswerBytes))
}

// Kept tells the keeper that b was written (retries.Keeper.Stored).
func (c *Claim) Kept(b *ledger.Body) {
	if c == nil || b == nil {
		return
	}
	c.keeper.Stored(b.Size, b.Dropped == "")
}

// Report is the JSON of the settlement s answered with the answer, kept
// for its replays; nil when nothing is kept.
func (c *Claim) Report(s *sandboxd.Settlement) []byte {
	if c == nil || s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil { // strings, numbers and a JSON object: never
		return nil
	}
	return b
}

// Signal tells the keeper the row changed here (retries.Keeper.Signal),
// so that the retries waiting for it read it at once.
func (c *Claim) Signal() {
	if c != nil {
		c.keeper.Signal(c.q.Payer, c.q.Key)
	}
}
