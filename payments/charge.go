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

// Settle collects the payment for a delivered result. A settlement, once
// begun, runs to its own timeout even if the caller goes away: stopping it
// halfway would leave a transaction whose outcome nobody records.
func (c *charge) Settle(ctx context.Context, result sandboxd.Result) (http.Header, error) {
	const op = "payments.settle"
	if !c.done.CompareAndSwap(false, true) {
		c.log.Error("payments: charge settled after it was settled or released")
		return nil, sandboxd.Errorf(sandboxd.CodeInternal, op, "this payment was already settled or released")
	}
	ctx = context.WithoutCancel(ctx)
	t := c.p.Transfer
	tx, err := c.g.settler.Settle(ctx, c.p)
	resp := SettleResponse{Transaction: tx, Network: c.p.Requirements.Network, Payer: t.From.Hex()}
	if err != nil {
		reason := rejectReason(err, ReasonUnexpectedSettle)
		c.log.Warn("payments: settlement failed; answer withheld", "reason", reason, "tx", tx, "err", err)
		c.ledgerWrite("failed", func(ctx context.Context) error {
			return c.g.ledger.MarkFailed(ctx, t.Payer(), t.NonceHex(), tx, reason)
		})
		resp.ErrorReason = reason
		perr := c.g.paymentError(op, c.resourceURL, "payment could not be settled, so the answer is withheld: "+settleFailure(err), err)
		if h, herr := settleHeader(c.p.Version, resp); herr == nil {
			if perr.Header == nil {
				perr.Header = http.Header{}
			}
			for k, v := range h {
				perr.Header[k] = v
			}
		}
		return nil, perr
	}
	resp.Success = true
	c.ledgerWrite("settled", func(ctx context.Context) error {
		return c.g.ledger.MarkSettled(ctx, t.Payer(), t.NonceHex(), tx, string(result.Status))
	})
	c.log.Info("payments: settled", "tx", tx, "run_status", result.Status)
	return settleHeader(c.p.Version, resp)
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
// logged, not returned: the row stays reserved and Recover resolves it
// against the chain at the next start.
func (c *charge) ledgerWrite(status string, write func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerWriteTimeout)
	defer cancel()
	if err := write(ctx); err != nil {
		c.log.Error("payments: cannot record the payment in the ledger; it stays reserved until the next start",
			"status", status, "err", err)
	}
}

// settleFailure says why a settlement failed, for the caller.
func settleFailure(err error) string {
	var r *RejectError
	if errors.As(err, &r) {
		return r.Check + " (" + r.Reason + ")"
	}
	return sandboxd.ErrorMessage(err)
}
