package payments

import (
	"context"
	"log/slog"
	"math/big"
	"time"

	"sandboxd"
	"sandboxd/payments/channels"
	"sandboxd/payments/internal/answer"
	"sandboxd/x402"
)

// answerSpec is what r keeps with its answer when the gate keeps answers:
// its identity, and the payment's id, parsed (a malformed
// payment-identifier extension is the caller's CodeInvalid, before any
// ledger access). Without a keeper the extension is not read.
func (g *Gate) answerSpec(r sandboxd.PaymentRequest, p *x402.Payment) (answer.Spec, error) {
	s := answer.Spec{Request: r.Request, Kind: r.Kind, Transport: r.Transport, Version: p.Version}
	if !g.keep.On() {
		return s, nil
	}
	id, err := x402.ParsePaymentID(p.Extensions)
	if err != nil {
		return s, sandboxd.Wrap(sandboxd.CodeInvalid, "payments.decode", err, err.Error())
	}
	s.ID = id
	return s, nil
}

// checkKept is Check of an exact payment when answers are kept
// (docs/design/retries.md §4.1): the signature checked apart from time,
// then, inside a check slot, the lookup of its answer before the time, the
// window and the settler's check, so that the resend of a payment
// answered, settled or expired since, still finds its answer. A ReplayOnly
// request stops at the lookup: its Replay, or (nil, nil).
func (g *Gate) checkKept(ctx context.Context, r sandboxd.PaymentRequest, pt *parts, p *x402.Payment,
	spec answer.Spec) (sandboxd.Authorization, error) {
	const op = "payments.check"
	pt, err := g.verifySigned(r, pt, p)
	if err != nil {
		if r.ReplayOnly {
			return nil, nil
		}
		g.log.Info("payment refused", "check", "verify", "reason", x402.RejectReason(err, ""),
			"payer", p.Exact.Authorization.From, "nonce", p.Exact.Authorization.Nonce, "err", err)
		return nil, pt.refusal(op, r.ResourceURL, err)
	}
	p.Quoted = pt.quoted(r)
	t, now := p.Transfer, g.now()
	log := g.log.With("payer", t.Payer(), "nonce", t.NonceHex(), "x402_version", p.Version)
	late := x402.CheckTime(t, now)
	if late != nil && !g.answerable(t, now) {
		return g.refuseTime(r, pt, log, "time", late)
	}
	release, err := g.checks.Admit(ctx)
	if err != nil {
		if r.ReplayOnly {
			return nil, nil
		}
		return nil, checksBusy(err)
	}
	defer release()
	claim := pt.keep.Claim(t.Payer(), t.NonceHex(), spec, late == nil)
	rep, err := claim.Find(ctx)
	switch {
	case rep != nil:
		return rep, nil
	case r.ReplayOnly:
		if err != nil {
			log.Debug("replay probe refused", "err", err)
		}
		return nil, nil
	case err != nil:
		return nil, err
	case late != nil:
		return g.refuseTime(r, pt, log, "time", late)
	}
	if err := x402.CheckWindow(t, now, g.window); err != nil {
		return g.refuseTime(r, pt, log, "window", err)
	}
	return g.checkRemote(ctx, r, pt, p, log, claim)
}

// refuseTime refuses a payment for its time (CheckTime, CheckWindow), as
// a ReplayOnly request is never refused: (nil, nil).
func (g *Gate) refuseTime(r sandboxd.PaymentRequest, pt *parts, log *slog.Logger, check string,
	err error) (sandboxd.Authorization, error) {
	if r.ReplayOnly {
		return nil, nil
	}
	log.Info("payment refused", "check", check, "reason", x402.RejectReason(err, ""), "err", err)
	return nil, pt.refusal("payments.check", r.ResourceURL, err)
}

// answerable reports whether a payment whose time no longer passes may
// still be the resend of one answered: not one valid only in the future,
// nor one expired for longer than answers are kept (every answer expires
// before that: it is ready before its payment's validBefore).
func (g *Gate) answerable(t *x402.Transfer, now time.Time) bool {
	if t.ValidAfter.Cmp(big.NewInt(now.Unix())) > 0 {
		return false
	}
	oldest := now.Add(-g.keep.Keeper.Config().Keep).Unix()
	return t.ValidBefore.Cmp(big.NewInt(oldest)) >= 0
}

// verifySigned is x402.VerifySigned against pt's terms; for a ReplayOnly
// request, whose environment may not be known any more (a call to an
// ended session), against any of the gate's terms. It returns the parts
// whose terms the payment is signed for.
func (g *Gate) verifySigned(r sandboxd.PaymentRequest, pt *parts, p *x402.Payment) (*parts, error) {
	err := x402.VerifySigned(pt.req, p)
	if err == nil || !r.ReplayOnly {
		return pt, err
	}
	for _, other := range g.allParts() {
		if other != pt && x402.VerifySigned(other.req, p) == nil {
			return other, nil
		}
	}
	return pt, err
}

// allParts are the parts of every price the gate quotes: the default, the
// environments' own, and those requests named (PaymentRequest.Price).
func (g *Gate) allParts() []*parts {
	out := []*parts{&g.parts}
	for _, pt := range g.priced {
		out = append(out, pt)
	}
	g.quotes.mu.Lock()
	defer g.quotes.mu.Unlock()
	for _, pt := range g.quotes.byPrice {
		out = append(out, pt)
	}
	return out
}

// checkChannel is Check of a batch-settlement payment: the seller's. A
// ReplayOnly request is tried against the batch entry of every price the
// gate quotes (its environment may not be known any more) until one
// accepts it.
func (g *Gate) checkChannel(ctx context.Context, r sandboxd.PaymentRequest, pt *parts, p *x402.Payment,
	spec answer.Spec) (sandboxd.Authorization, error) {
	req := func(pt *parts) channels.Request {
		return channels.Request{Payment: p, Entry: *pt.batch, Resource: r.ResourceURL,
			Terms: channelTerms{q: pt.quote, resourceURL: r.ResourceURL}, Operations: r.Operations,
			Answer: spec, ReplayOnly: r.ReplayOnly}
	}
	if !r.ReplayOnly {
		return g.seller.Check(ctx, req(pt))
	}
	for _, other := range append([]*parts{pt}, g.allParts()...) {
		if other.batch == nil {
			continue
		}
		a, err := g.seller.Check(ctx, req(other))
		if a != nil || err == nil {
			return a, nil
		}
	}
	return nil, nil
}

// raced answers a reservation that lost to a concurrent one with the same
// payment or id (see answer.Claim.Raced): nil refuses as without retries.
func (a *authorization) raced(ctx context.Context, lost error) error {
	err := a.claim.Raced(ctx, lost)
	if err != nil {
		a.log.Info("payment raced a concurrent request", "code", sandboxd.ErrorCode(err))
	}
	return err
}
