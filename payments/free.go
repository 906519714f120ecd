package payments

import (
	"context"

	"sandboxd"
)

// FreeGate is the payment gate used when payments are off: every request may
// run and nothing is charged.
type FreeGate struct{}

var _ sandboxd.PaymentGate = FreeGate{}

// Check admits every request.
func (FreeGate) Check(context.Context, sandboxd.PaymentRequest) (sandboxd.Authorization, error) {
	return freeCharge{}, nil
}

// freeCharge is both the authorization and the charge of a free call.
type freeCharge struct{}

func (freeCharge) Payer() string                                    { return "" }
func (freeCharge) Reserve(context.Context) (sandboxd.Charge, error) { return freeCharge{}, nil }
func (freeCharge) Settle(context.Context, sandboxd.Delivered) (*sandboxd.Settlement, error) {
	return nil, nil
}
func (freeCharge) Release(context.Context) {}
