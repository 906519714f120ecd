package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"sandboxd"
	"sandboxd/payments/internal/answer"
	"sandboxd/payments/internal/remote"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
)

// parts are the collaborators a payment needs from Check to its end, handed
// by the gate to each authorization and charge (which never reach back into
// the Gate): the terms a refusal quotes, the ledger, the settler, and the
// count of charges in flight that Gate.Close waits for. A charge ends
// exactly once, by Settle or Release; each method's doc says the ledger
// row it leaves.
type parts struct {
	quote
	ledger  Ledger
	settler Settler
	charges *charges
	// keep keeps paid answers for their retries; the zero value keeps none.
	keep answer.Keeping
}

// authorization is a checked payment, not yet reserved.
type authorization struct {
	*parts
	p           *x402.Payment
	resourceURL string
	log         *slog.Logger
	// claim is the answer the payment keeps, nil when none.
	claim *answer.Claim
}

var _ sandboxd.Authorization = (*authorization)(nil)

// Payer is the verified payer, the EIP-3009 from, lower-case.
func (a *authorization) Payer() string { return a.p.Transfer.Payer() }

// Reserve records the payment in the ledger and returns its charge. The
// charge counts as in flight until settled or released, so Close waits for
// it. See sandboxd.Authorization for the errors.
func (a *authorization) Reserve(ctx context.Context) (sandboxd.Charge, error) {
	const op = "payments.reserve"
	t := a.p.Transfer
	done, ok := a.charges.add()
	if !ok {
		return nil, sandboxd.Errorf(sandboxd.CodeUnavailable, op, "the service is stopping; nothing was charged, try again later")
	}
	err := a.ledger.Reserve(ctx, ledger.Entry{Payer: t.Payer(), Nonce: t.NonceHex(), Amount: t.Value.String(),
		Network: a.req.Network, Asset: a.req.Asset, Answer: a.claim.Row()})
	if errors.Is(err, ledger.ErrAlreadyUsed) || errors.Is(err, ledger.ErrAnswerTaken) {
		done()
		if rerr := a.raced(ctx, err); rerr != nil {
			return nil, rerr
		}
		a.log.Info("payment refused", "check", "ledger", "reason", x402.ReasonNonceUsed)
		return nil, a.paymentError(op, a.resourceURL, fmt.Sprintf(
			"payment refused: this payment was already used (%s); sign a new authorization with a fresh nonce", x402.ReasonNonceUsed), err)
	}
	if err != nil {
		done()
		a.log.Error("cannot reserve the payment", "err", err)
		return nil, err
	}
	a.log.Info("payment reserved", "value", t.Value.String())
	return &charge{parts: a.parts, p: a.p, resourceURL: a.resourceURL, log: a.log, finish: done, claim: a.claim}, nil
}

// ledgerWriteTimeout bounds a ledger write made after the request's context
// may have ended.
const ledgerWriteTimeout = 5 * time.Second

// charge is one reserved payment, settled or released exactly once.
type charge struct {
	*parts
	p           *x402.Payment
	resourceURL string
	log         *slog.Logger
	done        atomic.Bool
	// finish ends the charge's count among the gate's charges (see Gate.Close).
	finish func()
	// claim is the answer the payment keeps, nil when none: Settle writes
	// the answer's bytes with settling and its report with settled.
	claim *answer.Claim
}

var _ sandboxd.Charge = (*charge)(nil)

// Settle collects the payment for a delivered result. It first records,
// durably, that the settlement is being sent; if the ledger cannot, nothing
// is sent (a settlement must not leave unrecorded) and the answer is
// withheld with CodeUnavailable: the failure is the service's, nobody was
// charged. A settlement, once begun, runs to its own timeout even if the
// caller goes away: stopping it halfway would leave a transaction whose
// outcome nobody records.
//
// A settlement that failed is answered by what is known of it:
//   - refused or reverted (a *x402.RejectError): CodePayment (402) with a failed
//     settlement; the row ends failed (the hash kept when a
//     transaction was sent) and the payment is never admitted again;
//   - never sent (remote.ErrNotSent): CodePayment (402) with a failed
//     settlement whose message says the same payment may be sent
//     again; the row is released, and a retry is settled exactly once;
//   - possibly sent, outcome unknown (a timeout, a garbled answer after it
//     left): CodePending (202) with the transaction hash when there is one,
//     never a 402 that would invite the payer to pay again; the row stays
//     settling with reason ledger.ReasonSettlementPending and the hash, and the
//     gate's resolver (or Recover at the next start) settles or releases
//     it from the chain.
func (c *charge) Settle(ctx context.Context, d sandboxd.Delivered) (*sandboxd.Settlement, error) {
	const op = "payments.settle"
	if !c.done.CompareAndSwap(false, true) {
		c.log.Error("charge settled after it was settled or released")
		return nil, sandboxd.Errorf(sandboxd.CodeInternal, op, "this payment was already settled or released")
	}
	defer c.finish()
	ctx = context.WithoutCancel(ctx)
	t := c.p.Transfer
	body := c.claim.Body(d)
	if err := c.ledgerWrite("settling", func(ctx context.Context) error {
		return c.ledger.MarkSettling(ctx, t.Payer(), t.NonceHex(), body)
	}); err != nil {
		c.ledgerWrite("released", func(ctx context.Context) error {
			return c.ledger.MarkReleased(ctx, t.Payer(), t.NonceHex())
		})
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "the payment ledger could not record the settlement, "+
			"so nothing was charged and the answer is withheld; try again later")
	}
	c.claim.Kept(body)
	tx, err := c.settler.Settle(ctx, c.p)
	if err != nil {
		return nil, c.settleFailed(op, tx, err)
	}
	st := c.settlement(true, tx, "")
	c.ledgerWrite("settled", func(ctx context.Context) error {
		return c.ledger.MarkSettled(ctx, t.Payer(), t.NonceHex(), tx, string(d.Result.Status), c.claim.Report(st))
	})
	c.log.Info("settled", "tx", tx, "run_status", d.Result.Status)
	return st, nil
}

// settleFailed records a failed settlement (see Settle for the row's end
// state) and returns the CodePayment or CodePending error with the failed
// settlement response.
func (c *charge) settleFailed(op, tx string, err error) error {
	t := c.p.Transfer
	reason := x402.RejectReason(err, x402.ReasonUnexpectedSettle)
	var r *x402.RejectError
	if !errors.As(err, &r) && !errors.Is(err, remote.ErrNotSent) {
		return c.settlePending(op, tx, err)
	}
	if r == nil {
		c.log.Warn("settlement not sent; answer withheld, payment released", "reason", reason, "err", err)
		c.ledgerWrite("released", func(ctx context.Context) error {
			return c.ledger.MarkReleased(ctx, t.Payer(), t.NonceHex())
		})
	} else {
		c.log.Warn("settlement failed; answer withheld, payment marked failed", "reason", reason, "tx", tx, "err", err)
		c.ledgerWrite("failed", func(ctx context.Context) error {
			return c.ledger.MarkFailed(ctx, t.Payer(), t.NonceHex(), tx, reason)
		})
	}
	perr := c.paymentError(op, c.resourceURL, "payment could not be settled, so the answer is withheld: "+settleFailure(err), err)
	perr.Payment.Settlement = c.settlement(false, tx, reason)
	return perr
}

// settlePending records a settlement whose outcome is unknown (the row
// stays settling, with its hash and ledger.ReasonSettlementPending, for the
// resolver) and returns the CodePending error: 202 with the hash, never a
// refusal that would invite a second payment.
func (c *charge) settlePending(op, tx string, err error) error {
	t := c.p.Transfer
	c.log.Warn("settlement outcome unknown; answer withheld, payment spent and pending", "tx", tx, "err", err)
	st := c.settlement(false, tx, ledger.ReasonSettlementPending)
	c.ledgerWrite("pending", func(ctx context.Context) error {
		return c.ledger.MarkPending(ctx, t.Payer(), t.NonceHex(), tx, c.claim.Report(st))
	})
	msg := "the settlement of this payment was sent but its outcome is not known yet; the payment is spent, " +
		"do not pay again: it is looked up on chain and either collected or released"
	if tx != "" {
		msg += "; the transaction is " + tx
	}
	return &sandboxd.Error{Code: sandboxd.CodePending, Op: op, Message: msg, Err: err,
		Payment: &sandboxd.PaymentDetails{Settlement: st}}
}

// settlement is the report of this charge's settlement: collected
// (success), or not with reason, tx naming the transaction when one was sent.
func (c *charge) settlement(success bool, tx, reason string) *sandboxd.Settlement {
	return &sandboxd.Settlement{Version: c.p.Version, Success: success, ErrorReason: reason, Transaction: tx,
		Network: c.p.Requirements.Network, Payer: c.p.Transfer.From.Hex()}
}

// Release records that nothing is collected: the service failed to deliver,
// and the same payment may be offered again.
func (c *charge) Release(ctx context.Context) {
	if !c.done.CompareAndSwap(false, true) {
		c.log.Error("charge released after it was settled or released")
		return
	}
	defer c.finish()
	t := c.p.Transfer
	c.ledgerWrite("released", func(ctx context.Context) error {
		return c.ledger.MarkReleased(ctx, t.Payer(), t.NonceHex())
	})
	c.log.Info("payment released; nothing charged")
}

// ledgerWrite runs a ledger update on a fresh short context, then tells
// the keeper the answer's row moved (its waiting retries read it at once).
// A failure is logged and returned; the callers that go on regardless
// leave the row reserved or settling, and Recover resolves it at the next
// start.
func (c *charge) ledgerWrite(status string, write func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWriteTimeout)
	defer cancel()
	defer c.claim.Signal()
	err := write(ctx)
	if err != nil {
		c.log.Error("cannot record the payment in the ledger; Recover resolves it at the next start",
			"status", status, "err", err)
	}
	return err
}

// settleFailure says why a settlement failed, for the caller.
func settleFailure(err error) string {
	var r *x402.RejectError
	if errors.As(err, &r) {
		return r.Check + " (" + r.Reason + ")"
	}
	return sandboxd.ErrorMessage(err)
}
