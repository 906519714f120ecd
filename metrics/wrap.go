package metrics

import (
	"context"
	"errors"
	"time"

	"sandboxd"
)

// Runner counts and times the runs of the Runner it wraps.
type Runner struct {
	sandboxd.Runner
	M *Metrics
}

// Run runs job, recording its status and environment and, when delivered,
// its duration.
func (r Runner) Run(ctx context.Context, job sandboxd.Job) (sandboxd.Result, error) {
	began := time.Now()
	env := job.Environment // validated already: one of the few configured
	if env == "" {
		env = sandboxd.DefaultEnvironment
	}
	res, err := r.Runner.Run(ctx, job)
	if err != nil {
		r.M.runs.WithLabelValues(errorStatus(err), env).Inc()
		return res, err
	}
	r.M.runs.WithLabelValues(string(res.Status), env).Inc()
	r.M.runDuration.Observe(time.Since(began).Seconds())
	return res, nil
}

// errorStatus is the status label of a run that was not delivered.
func errorStatus(err error) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled"
	}
	if sandboxd.ErrorCode(err) == sandboxd.CodeUnavailable {
		return "unavailable"
	}
	return "internal"
}

// Phase records that an answer spent d in ph: the observer of the
// answers' phase recorders (sandboxd.NewPhases).
func (m *Metrics) Phase(ph sandboxd.Phase, d time.Duration) {
	m.phases.WithLabelValues(string(ph)).Observe(d.Seconds())
}

// Admitter times the queue wait of the Admitter it wraps and counts 429s.
type Admitter struct {
	sandboxd.Admitter
	M *Metrics
}

// Admit waits for a slot, recording the wait and a busy refusal.
func (a Admitter) Admit(ctx context.Context) (func(), error) {
	began := time.Now()
	release, err := a.Admitter.Admit(ctx)
	a.M.queueWait.Observe(time.Since(began).Seconds())
	if err != nil && sandboxd.ErrorCode(err) == sandboxd.CodeBusy {
		a.M.busy.Inc()
	}
	return release, err
}

// Gate counts the payment outcomes of the PaymentGate it wraps. Amount is
// the price in atomic units quoted for a request (its environment's, or
// its own price such as a session's opening), added to the
// settled sum per settlement; Reason names a refusal's cause from Check's
// or Reserve's error.
type Gate struct {
	sandboxd.PaymentGate
	M      *Metrics
	Amount func(req sandboxd.PaymentRequest) float64
	Reason func(err error) string
}

// Check checks a paid request's payment, recording a quote (no payment
// came) or a refusal. A Replay (a retry answered from its stored answer,
// counted by the keeper's observer) and a replay-only probe's nil pass as
// they are: the flows recognise a Replay by its type.
func (g Gate) Check(ctx context.Context, req sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	a, err := g.PaymentGate.Check(ctx, req)
	if _, replay := a.(sandboxd.Replay); (replay || a == nil) && err == nil {
		return a, nil
	}
	switch {
	case err == nil:
		if op, ok := a.(sandboxd.PaymentOperation); ok {
			return operation{PaymentOperation: op, g: g}, nil
		}
		return authorization{Authorization: a, g: g, req: req}, nil
	case sandboxd.ErrorCode(err) == sandboxd.CodePayment && !paid(req):
		g.M.payments.WithLabelValues(OutcomeQuoted, "").Inc()
	default:
		g.M.payments.WithLabelValues(OutcomeRefused, g.reason(err)).Inc()
	}
	return nil, err
}

// authorization records whether a checked payment was reserved.
type authorization struct {
	sandboxd.Authorization
	g   Gate
	req sandboxd.PaymentRequest
}

// Reserve reserves the payment, recording the reservation or its refusal.
func (a authorization) Reserve(ctx context.Context) (sandboxd.Charge, error) {
	c, err := a.Authorization.Reserve(ctx)
	if err != nil {
		a.g.M.payments.WithLabelValues(OutcomeRefused, a.g.reason(err)).Inc()
		return nil, err
	}
	a.g.M.payments.WithLabelValues(OutcomeReserved, "").Inc()
	amount := 0.0
	if a.g.Amount != nil {
		amount = a.g.Amount(a.req)
	}
	return charge{Charge: c, g: a.g, amount: amount}, nil
}

// operation records how a payment operation (a refund) ended.
type operation struct {
	sandboxd.PaymentOperation
	g Gate
}

// Operate carries the operation out, recording it or its refusal.
func (o operation) Operate(ctx context.Context) (*sandboxd.Settlement, error) {
	st, err := o.PaymentOperation.Operate(ctx)
	if err != nil {
		o.g.M.payments.WithLabelValues(OutcomeRefused, o.g.reason(err)).Inc()
		return nil, err
	}
	o.g.M.payments.WithLabelValues(OutcomeRefunded, "").Inc()
	return st, nil
}

// reason is the refusal's label value.
func (g Gate) reason(err error) string {
	switch sandboxd.ErrorCode(err) {
	case sandboxd.CodeUnavailable:
		return "unavailable"
	case sandboxd.CodeInvalid:
		return "invalid_header"
	}
	if g.Reason != nil {
		if r := g.Reason(err); r != "" {
			return r
		}
	}
	return "other"
}

// paid reports whether the request carried a payment header (v2 or v1).
func paid(req sandboxd.PaymentRequest) bool { return req.Signature != "" || req.XPayment != "" }

// charge records how an admitted payment ended; amount is its price.
type charge struct {
	sandboxd.Charge
	g      Gate
	amount float64
}

// Settle collects the payment, recording the outcome and its latency.
func (c charge) Settle(ctx context.Context, d sandboxd.Delivered) (*sandboxd.Settlement, error) {
	began := time.Now()
	h, err := c.Charge.Settle(ctx, d)
	c.g.M.settleLatency.Observe(time.Since(began).Seconds())
	switch {
	case err == nil:
		c.g.M.payments.WithLabelValues(OutcomeSettled, "").Inc()
		c.g.M.settledAmount.Add(c.amount)
	case sandboxd.ErrorCode(err) == sandboxd.CodeUnavailable:
		c.g.M.payments.WithLabelValues(OutcomeReleased, "").Inc()
	case sandboxd.ErrorCode(err) == sandboxd.CodePending:
		c.g.M.payments.WithLabelValues(OutcomePending, "").Inc()
	default:
		c.g.M.payments.WithLabelValues(OutcomeFailed, "").Inc()
	}
	return h, err
}

// Release records that nothing was collected.
func (c charge) Release(ctx context.Context) {
	c.Charge.Release(ctx)
	c.g.M.payments.WithLabelValues(OutcomeReleased, "").Inc()
}
