// Package payments takes x402 payments: it quotes terms, verifies signed
// EIP-3009 authorizations, reserves each payment in a ledger before the run,
// and settles delivered answers through a facilitator or on chain.
package payments

import (
	"context"
	"net/http"

	"sandboxd"
)

// FreeGate is the payment gate used when payments are off: every request may
// run and nothing is charged.
type FreeGate struct{}

var _ sandboxd.PaymentGate = FreeGate{}

// Begin admits every request.
func (FreeGate) Begin(context.Context, sandboxd.PaymentRequest) (sandboxd.Charge, error) {
	return freeCharge{}, nil
}

type freeCharge struct{}

func (freeCharge) Settle(context.Context, sandboxd.Result) (http.Header, error) { return nil, nil }
func (freeCharge) Release(context.Context)                                      {}
