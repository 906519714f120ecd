package payments

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"sandboxd"
)

// ledgerWriteTimeout bounds a ledger write made after the request's context
// may have ended.
const ledgerWriteTimeout = 5 * time.Second

// charge is one reserved payment, settled or released exactly once.
type charge struct {
	g           *Gate
	p           *Payment
	resourceURL string
	log         *slog.Logger
	done        atomic.Bool
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
// A failed settlement is CodePayment (402) with a failed PAYMENT-RESPONSE,
// whatever failed, the payer's authorization or the chain or facilitator:
// that is the answer x402 defines for it and the one the official clients
// read (errorReason says which; the message says whether the same payment
// may be sent again). The ledger row ends:
//   - failed, when the settlement was refused (a *RejectError) or may have
//     been sent and its outcome is unknown (a timeout or a garbled answer
//     after it left; the transaction hash is kept when there is one): the
//     payment is never admitted again, so it cannot buy a second answer;
//   - released, when the settlement never left (ErrSettleNotSent): nobody
//     was charged, and a retry of the same payment is admitted and settled
//     exactly once.
func (c *charge) Settle(ctx context.Context, result sandboxd.Result) (http.Header, error) {
	const op = "payments.settle"
	if !c.done.CompareAndSwap(false, true) {
		c.log.Error("payments: charge settled after it was settled or released")
		return nil, sandboxd.Errorf(sandboxd.CodeInternal, op, "this payment was already settled or released")
	}
	ctx = context.WithoutCancel(ctx)
	t := c.p.Transfer
	if err := c.ledgerWrite("settling", func(ctx context.Context) error {
		return c.g.ledger.MarkSettling(ctx, t.Payer(), t.NonceHex())
	}); err != nil {
		c.ledgerWrite("released", func(ctx context.Context) error {
			return c.g.ledger.MarkReleased(ctx, t.Payer(), t.NonceHex())
		})
		return nil, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err, "the payment ledger could not record the settlement, "+
			"so nothing was charged and the answer is withheld; try again later")
	}
	tx, err := c.g.settler.Settle(ctx, c.p)
	if err != nil {
		return nil, c.settleFailed(op, tx, err)
	}
	resp := SettleResponse{Success: true, Transaction: tx, Network: c.p.Requirements.Network, Payer: t.From.Hex()}
	c.ledgerWrite("settled", func(ctx context.Context) error {
		return c.g.ledger.MarkSettled(ctx, t.Payer(), t.NonceHex(), tx, string(result.Status))
	})
	c.log.Info("payments: settled", "tx", tx, "run_status", result.Status)
	return settleHeader(c.p.Version, resp)
}

// settleFailed records a failed settlement (see Settle for the row's end
// state) and returns the CodePayment error with the failed settlement
// response.
func (c *charge) settleFailed(op, tx string, err error) error {
	t := c.p.Transfer
	reason := rejectReason(err, ReasonUnexpectedSettle)
	var r *RejectError
	if !errors.As(err, &r) && errors.Is(err, ErrSettleNotSent) {
		c.log.Warn("payments: settlement not sent; answer withheld, payment released", "reason", reason, "err", err)
		c.ledgerWrite("released", func(ctx context.Context) error {
			return c.g.ledger.MarkReleased(ctx, t.Payer(), t.NonceHex())
		})
	} else {
		c.log.Warn("payments: settlement failed; answer withheld, payment marked failed", "reason", reason, "tx", tx, "err", err)
		c.ledgerWrite("failed", func(ctx context.Context) error {
			return c.g.ledger.MarkFailed(ctx, t.Payer(), t.NonceHex(), tx, reason)
		})
	}
	resp := SettleResponse{Transaction: tx, Network: c.p.Requirements.Network, Payer: t.From.Hex(), ErrorReason: reason}
	perr := c.g.paymentError(op, c.resourceURL, "payment could not be settled, so the answer is withheld: "+settleFailure(err), err)
	if h, herr := settleHeader(c.p.Version, resp); herr == nil {
		if perr.Header == nil {
			perr.Header = http.Header{}
		}
		for k, v := range h {
			perr.Header[k] = v
		}
	}
	return perr
}

// Release records that nothing is collected: the service failed to deliver,
// and the same payment may be offered again.
func (c *charge) Release(ctx context.Context) {
	if !c.done.CompareAndSwap(false, true) {
		c.log.Error("payments: charge released after it was settled or released")
		return
	}
	t := c.p.Transfer
	c.ledgerWrite("released", func(ctx context.Context) error {
		return c.g.ledger.MarkReleased(ctx, t.Payer(), t.NonceHex())
	})
	c.log.Info("payments: payment released; nothing charged")
}

// ledgerWrite runs a ledger update on a fresh short context. A failure is
// logged and returned; the callers that go on regardless leave the row
// reserved or settling, and Recover resolves it at the next start.
func (c *charge) ledgerWrite(status string, write func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWriteTimeout)
	defer cancel()
	err := write(ctx)
	if err != nil {
		c.log.Error("payments: cannot record the payment in the ledger; Recover resolves it at the next start",
			"status", status, "err", err)
	}
	return err
}

// settleFailure says why a settlement failed, for the caller.
func settleFailure(err error) string {
	var r *RejectError
	if errors.As(err, &r) {
		return r.Check + " (" + r.Reason + ")"
	}
	return sandboxd.ErrorMessage(err)
}
