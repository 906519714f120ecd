package retries

import (
	"context"
	"fmt"
	"time"

	"sandboxd"
)

// replay is a sandboxd.Replay: a payment whose request is answered from
// the answer kept at meta's row.
type replay struct {
	k     *Keeper
	payer string
	by    string
	meta  Meta
}

var _ sandboxd.Replay = (*replay)(nil)

// replay returns the Replay of the row m, recognised by by.
func (k *Keeper) replay(payer, by string, m Meta) *replay {
	return &replay{k: k, payer: payer, by: by, meta: m}
}

// Payer is the verified payer.
func (r *replay) Payer() string { return r.payer }

// By is how the retry was recognised.
func (r *replay) By() string { return r.by }

// Reserve refuses: a replay buys nothing and is answered before any slot.
func (r *replay) Reserve(context.Context) (sandboxd.Charge, error) {
	return nil, sandboxd.Errorf(sandboxd.CodeInternal, "retries.reserve", "a replayed payment is never reserved")
}

// Answer waits for the first request while it runs (bounded by
// Config.Wait), then reads its answer. See sandboxd.Replay for the errors;
// on CodePending the stored answer is returned too when its bytes were
// kept (a pending session opening names its session).
func (r *replay) Answer(ctx context.Context) (*sandboxd.StoredAnswer, error) {
	began := time.Now()
	defer sandboxd.PhasesFrom(ctx).Since(sandboxd.PhaseReplay, began)
	m, outcome, err := r.meta, "", error(nil)
	if waiting(m.State) {
		m, outcome, err = r.k.wait(ctx, m.Payer, m.Key)
	}
	var ans *sandboxd.StoredAnswer
	if err == nil {
		ans, outcome, err = r.k.read(ctx, m)
	}
	r.k.obs.Replay(r.by, outcome, time.Since(began))
	r.k.log.Info("payment retried", "by", r.by, "outcome", outcome, "payer", r.payer, "key", short(m.Key),
		"waited_ms", time.Since(began).Milliseconds())
	return ans, err
}

// read answers the row m, whose first request is no longer running: its
// bytes (ready), its pending report, or why it cannot be answered; with
// the Observer's outcome.
func (k *Keeper) read(ctx context.Context, m Meta) (*sandboxd.StoredAnswer, string, error) {
	if m.State == StateReady && m.Dropped != "" {
		return nil, OutcomeGone, gone(m)
	}
	m, body, err := k.store.AnswerBody(ctx, m.Payer, m.Key)
	switch {
	case isNoAnswer(err):
		return nil, OutcomeNotDelivered, notDelivered()
	case err != nil:
		return nil, OutcomeFailed, readFailed(ctx, "retries.answer", err)
	}
	var ans *sandboxd.StoredAnswer
	if body != nil {
		ans = &sandboxd.StoredAnswer{Kind: m.Kind, Status: m.Status, Body: body, Settlement: m.Settlement, Created: m.Created}
	}
	switch m.State {
	case StatePending:
		return ans, OutcomePending, pending(m)
	case StateReady:
		if ans == nil {
			return nil, OutcomeGone, gone(m)
		}
		return ans, OutcomeAnswered, nil
	default: // running or held again: a row taken over meanwhile
		return nil, OutcomeInProgress, inProgress()
	}
}

// gone is the answer of a paid answer whose bytes were not kept.
func gone(m Meta) error {
	return &sandboxd.Error{Code: sandboxd.CodeGone, Op: "retries.answer",
		Payment: &sandboxd.PaymentDetails{Settlement: m.Settlement},
		Message: fmt.Sprintf("this payment bought an answer at %s that was not kept (%d bytes); "+
			"nothing was charged for this retry", m.Created.UTC().Format(time.RFC3339), m.AnswerBytes)}
}

// pending is the answer of a first request whose settlement is pending.
func pending(m Meta) error {
	return &sandboxd.Error{Code: sandboxd.CodePending, Op: "retries.answer",
		Payment: &sandboxd.PaymentDetails{Settlement: m.Settlement},
		Message: "this payment's settlement is still pending; its answer is kept and answered once the settlement " +
			"lands. Nothing was charged for this retry; do not pay again, ask again later"}
}

// notDelivered is the answer of a first request released or failed.
func notDelivered() error {
	return &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "retries.answer", RetryAfter: time.Second,
		Message: "the first request with this payment was not delivered and nothing was charged for it; " +
			"send this request again"}
}

// inProgress is the answer of a retry whose wait ran out.
func inProgress() error {
	return &sandboxd.Error{Code: sandboxd.CodeConflict, Op: "retries.answer", RetryAfter: 2 * time.Second,
		Message: "the first request with this payment is still being answered; nothing was charged for this " +
			"retry; ask again"}
}
