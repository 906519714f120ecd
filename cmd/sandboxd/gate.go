package main

import (
	"context"
	"fmt"

	"sandboxd"
	"sandboxd/payments"
)

// paymentsConfig copies the payments.* keys, and the runtime keys a
// payment's validity window depends on, into the payments package's own
// configuration.
func (p PaymentsConfig) paymentsConfig(rt RuntimeConfig) payments.Config {
	return payments.Config{
		Network:           p.Network,
		Asset:             p.Asset,
		AssetName:         p.AssetName,
		AssetVersion:      p.AssetVersion,
		Price:             p.Price,
		PayTo:             p.PayTo,
		MaxTimeoutSeconds: int(p.MaxTimeoutSeconds),
		Settlement:        p.Settlement,
		FacilitatorURL:    p.FacilitatorURL,
		RPCURL:            p.RPCURL,
		RelayerKeyFile:    p.RelayerKeyFile,
		Ledger:            p.Ledger,
		ReplicaID:         p.ReplicaID,
		Lease:             p.Lease,
		VerifyTimeout:     p.VerifyTimeout,
		SettleTimeout:     p.SettleTimeout,
		RPCTimeout:        p.RPCTimeout,
		MaxChecks:         int(p.MaxChecks),
		CheckWait:         p.CheckWait,
		QueueWait:         rt.QueueWait,
		RunTimeout:        rt.Timeout,
	}
}

// paymentsConfig is the payments configuration with the replica id's
// default filled in from the runtime instance.
func (c Config) paymentsConfig() payments.Config {
	pc := c.Payments.paymentsConfig(c.Runtime)
	if pc.ReplicaID == "" {
		pc.ReplicaID = payments.DefaultReplica(c.Runtime.Instance)
	}
	return pc
}

// validate checks the payments.* keys when payments are on; when they are
// off none of them is used.
func (p PaymentsConfig) validate(rt RuntimeConfig) error {
	if !p.Enabled {
		return nil
	}
	if err := p.paymentsConfig(rt).Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// openGate builds the payment gate: the free gate when payments are off,
// else the x402 gate with its ledger and settler (which also resolves
// payments a crash left reserved).
func (m *Main) openGate(ctx context.Context) (sandboxd.PaymentGate, func() error, error) {
	if !m.Config.Payments.Enabled {
		return payments.FreeGate{}, func() error { return nil }, nil
	}
	pc := m.Config.paymentsConfig()
	pc.LedgerObserver = m.metrics.Ledger
	g, err := payments.NewGate(ctx, pc, m.Log.With("component", "payments"))
	if err != nil {
		return nil, nil, fmt.Errorf("payments: %w", err)
	}
	return g, g.Close, nil
}
