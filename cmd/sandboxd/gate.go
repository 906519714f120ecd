package main

import (
	"context"

	"sandboxd"
	"sandboxd/payments"
)

// openGate builds the payment gate: the free gate when payments are off.
func (m *Main) openGate(ctx context.Context) (sandboxd.PaymentGate, func() error, error) {
	if !m.Config.Payments.Enabled {
		return payments.FreeGate{}, func() error { return nil }, nil
	}
	return nil, nil, errPaymentsNotBuilt
}
