package channels

import (
	"context"
	"errors"
	"strings"
	"time"

	"sandboxd"
	"sandboxd/payments/chain"
	"sandboxd/payments/internal/remote"
	"sandboxd/payments/ledger"
	"sandboxd/x402"
	"sandboxd/x402/channel"
)

// writeTimeout bounds a ledger write made after the request may have gone.
const writeTimeout = 5 * time.Second

// checkDeposit checks a deposit's authorization locally (its window must
// cover the whole call, as an exact payment's does), then asks the
// depositor, under a check slot, whether it would be collected.
func (s *Seller) checkDeposit(ctx context.Context, r Request, a *authorization) error {
	d := a.pl.Deposit
	if err := channel.VerifyDeposit(d, a.pl.Config, r.Entry, s.now()); err != nil {
		return s.refuse(r, "channels.check", err)
	}
	if need := s.now().Add(s.holdFor).Unix(); d.ValidBefore.IsInt64() && d.ValidBefore.Int64() < need {
		return s.refuse(r, "channels.check", x402.Reject(channel.ReasonValidBefore,
			"the deposit authorization's validBefore %s is too soon: a call needs it valid until at least %d (%s from now)",
			d.ValidBefore, need, s.holdFor))
	}
	release, err := s.admit(ctx)
	if err != nil {
		return err
	}
	err = s.depositor.CheckDeposit(ctx, r.Payment, a.pl)
	release()
	if err != nil {
		a.log.Info("deposit refused", "reason", x402.RejectReason(err, ""), "err", err)
		return s.refuse(r, "channels.check", err)
	}
	return nil
}

// depositRow is a deposit recorded in the ledger (its ERC-3009 row
// reserved, its channel's row present and open), not yet collected.
type depositRow struct {
	a            *authorization
	payer, nonce string
}

// recordDeposit reserves the deposit's payment row (one authorization
// funds one deposit) and makes sure the channel's row exists and is open.
func (a *authorization) recordDeposit(ctx context.Context) (*depositRow, error) {
	const op = "channels.reserve"
	s := a.seller
	d := a.pl.Deposit
	nonce := strings.ToLower(channel.DepositNonce(a.pl.Voucher.ChannelID, d.Salt).Hex())
	dep := &depositRow{a: a, payer: a.Payer(), nonce: nonce}
	err := s.store.Reserve(ctx, ledger.Entry{Payer: dep.payer, Nonce: nonce, Amount: d.Amount.String(),
		Network: s.network, Asset: strings.ToLower(a.req.Entry.Asset), ChannelID: a.id})
	if errors.Is(err, ledger.ErrAlreadyUsed) {
		return nil, s.refuse(a.req, op, x402.Reject(channel.ReasonDepositSimulationFailed,
			"this deposit authorization was already used (or its deposit is still being resolved: then wait and send a voucher); "+
				"for a new deposit sign a new one with a fresh salt"))
	}
	if err != nil {
		return nil, err
	}
	row, err := s.store.Channel(ctx, a.id)
	if errors.Is(err, ledger.ErrNoChannel) {
		fresh, _ := s.row(ctx, a) // a deposit's row of zeros: no I/O
		row, err = s.store.AdoptChannel(ctx, fresh)
	}
	if err == nil && row.State == ledger.ChannelClosed {
		err = s.store.ReopenChannel(ctx, a.id)
	}
	if err != nil {
		dep.release()
		return nil, err
	}
	return dep, nil
}

// release frees the deposit's row: nothing was sent.
func (d *depositRow) release() {
	d.write("released", func(ctx context.Context) error {
		return d.a.seller.store.MarkReleased(ctx, d.payer, d.nonce)
	})
}

// collect sends the deposit and waits for its receipt, recording the row's
// every step as an exact settlement's (so Recover resolves a crash the
// same way); a refused, unsent or unknown deposit is answered as an exact
// settlement that failed in the same way, before anything runs.
func (d *depositRow) collect(ctx context.Context) (chain.OpReceipt, error) {
	const op = "channels.deposit"
	s, a := d.a.seller, d.a
	if err := d.write("settling", func(ctx context.Context) error {
		return s.store.MarkSettling(ctx, d.payer, d.nonce, nil)
	}); err != nil {
		d.release()
		return chain.OpReceipt{}, sandboxd.Wrap(sandboxd.CodeUnavailable, op, err,
			"the payment ledger could not record the deposit, so it was not sent; nothing was charged, try again later")
	}
	rcpt, err := s.depositor.Deposit(context.WithoutCancel(ctx), a.req.Payment, a.pl)
	s.observe(OpDeposit, txOutcome(err), rcpt.GasUsed)
	if err == nil {
		d.write("settled", func(ctx context.Context) error {
			return s.store.MarkSettled(ctx, d.payer, d.nonce, rcpt.Tx, "deposit", nil)
		})
		d.mirror(rcpt)
		a.log.Info("deposit collected", "tx", rcpt.Tx, "amount", rcpt.Amount, "balance", rcpt.NewBalance)
		return rcpt, nil
	}
	reason := x402.RejectReason(err, x402.ReasonUnexpectedSettle)
	var rj *x402.RejectError
	switch {
	case errors.As(err, &rj):
		a.log.Warn("deposit failed; nothing runs", "reason", reason, "tx", rcpt.Tx, "err", err)
		d.write("failed", func(ctx context.Context) error {
			return s.store.MarkFailed(ctx, d.payer, d.nonce, rcpt.Tx, reason)
		})
	case errors.Is(err, remote.ErrNotSent):
		a.log.Warn("deposit not sent; nothing runs", "err", err)
		d.release()
	default:
		a.log.Warn("deposit outcome unknown; nothing runs", "tx", rcpt.Tx, "err", err)
		d.write("pending", func(ctx context.Context) error {
			return s.store.MarkPending(ctx, d.payer, d.nonce, rcpt.Tx, nil)
		})
		msg := "the deposit was sent but its outcome is not known yet; nothing was run or charged, and the deposit is " +
			"not lost: once it is mined it is the channel's balance. Do not deposit again; send a voucher later"
		if rcpt.Tx != "" {
			msg += "; the transaction is " + rcpt.Tx
		}
		return rcpt, &sandboxd.Error{Code: sandboxd.CodePending, Op: op, Message: msg, Err: err,
			Payment: &sandboxd.PaymentDetails{Settlement: d.settlement(false, rcpt.Tx, ledger.ReasonSettlementPending)}}
	}
	perr := a.req.Terms.Refuse(op, "the deposit could not be collected, so nothing was run or charged: "+failure(err), err)
	perr.Payment.Settlement = d.settlement(false, rcpt.Tx, reason)
	return rcpt, perr
}

// mirror writes the channel's balance the deposit's receipt reports.
func (d *depositRow) mirror(rcpt chain.OpReceipt) {
	s, a := d.a.seller, d.a
	if rcpt.NewBalance == nil {
		return
	}
	d.write("mirror", func(ctx context.Context) error {
		row, err := s.store.Channel(ctx, a.id)
		if err != nil {
			return err
		}
		_, err = s.store.UpdateMirror(ctx, a.id, ledger.Mirror{Balance: rcpt.NewBalance, Claimed: orZero(row.Claimed),
			WithdrawAmount: orZero(row.WithdrawAmount), WithdrawAt: row.WithdrawAt, RefundNonce: orZero(row.RefundNonce)})
		return err
	})
}

// settlement is the report of the deposit.
func (d *depositRow) settlement(success bool, tx, reason string) *sandboxd.Settlement {
	return &sandboxd.Settlement{Version: 2, Success: success, ErrorReason: reason, Transaction: tx, Network: d.a.seller.network,
		Payer: d.a.pl.Config.Payer.Hex()}
}

// write runs a ledger write on a fresh short context, logging a failure.
func (d *depositRow) write(what string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := f(ctx)
	if err != nil {
		d.a.log.Error("cannot record the deposit in the ledger; Recover resolves it at the next start", "step", what, "err", err)
	}
	return err
}

// failure says why a deposit failed, for the payer.
func failure(err error) string {
	var rj *x402.RejectError
	if errors.As(err, &rj) {
		return rj.Check + " (" + rj.Reason + ")"
	}
	return sandboxd.ErrorMessage(err)
}
