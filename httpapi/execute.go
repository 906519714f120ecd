package httpapi

import (
	"context"
	"net/http"

	"sandboxd"
)

// execute runs a validated job through the whole paid flow, the one both
// POST /v1/code and the MCP tool use: admission, the payment gate, the run,
// then settlement or release. The order matters for payments: everything
// that can refuse a request for free (validation, before this; capacity,
// here) comes before the gate, and the charge is released whenever the
// service itself fails, so nobody pays for a refused request or for the
// service's failure. It returns the delivered result with the headers of its
// settlement (PAYMENT-RESPONSE), or an error: CodeBusy when no sandbox freed
// in time, the gate's errors (CodePayment with the terms, CodeInvalid,
// CodeUnavailable), the runner's, or the settlement's (the result is then
// dropped).
func (s *Server) execute(ctx context.Context, job sandboxd.Job, pay sandboxd.PaymentRequest) (sandboxd.Result, http.Header, error) {
	release, err := s.Admitter.Admit(ctx)
	if err != nil {
		return sandboxd.Result{}, nil, err
	}
	defer release()

	charge, err := s.Gate.Begin(ctx, pay)
	if err != nil {
		return sandboxd.Result{}, nil, err
	}
	// Money must never be left half-done when the caller hangs up: settling
	// and releasing outlive ctx (the settlers bound their own calls).
	money := context.WithoutCancel(ctx)
	res, err := s.Runner.Run(ctx, job)
	if err != nil {
		charge.Release(money)
		return sandboxd.Result{}, nil, err
	}
	header, err := charge.Settle(money, res)
	if err != nil {
		return sandboxd.Result{}, nil, err
	}
	s.Log.Info("run delivered", "job", job.ID, "status", res.Status, "exit_code", res.ExitCode,
		"duration_ms", res.Duration.Milliseconds())
	return res, header, nil
}
