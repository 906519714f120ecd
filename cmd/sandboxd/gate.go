package main

import (
	"context"
	"fmt"

	"sandboxd"
	"sandboxd/payments"
	"sandboxd/payments/ledger"
)

// paymentsConfig is the payments section with the replica id's default
// filled in from the runtime instance.
func (c Config) paymentsConfig() payments.Config {
	pc := c.Payments.Config
	if pc.ReplicaID == "" {
		pc.ReplicaID = ledger.DefaultReplica(c.Runtime.Instance)
	}
	pc.Prices = c.prices()
	return pc
}

// openGate builds the payment gate: the free gate when payments are off,
// else the x402 gate with its ledger and settler (which also resolves
// payments a crash left reserved) and, with retries on, the keeper of the
// answers its payers may fetch again, whose sweeper lives as long as the
// gate: it stops before the gate closes the ledger under it.
func (m *Main) openGate(ctx context.Context) (sandboxd.PaymentGate, func() error, error) {
	if !m.Config.Payments.Enabled {
		return payments.FreeGate{}, func() error { return nil }, nil
	}
	pc := m.Config.paymentsConfig()
	pc.LedgerObserver = m.metrics.Ledger
	pc.ChannelObserver, pc.ChannelGauges = m.metrics.Channel, m.metrics.ChannelGauges
	g, err := payments.NewGate(ctx, pc, m.Config.runBounds(), m.Log.With("component", "payments"),
		gateRetries(m.Config, m.metrics, m.Log.With("component", "retries"))...)
	if err != nil {
		return nil, nil, fmt.Errorf("payments: %w", err)
	}
	return g, g.Close, nil
}
